// nsrun-probe: a tiny static helper that runs inside the sandbox, makes ONE
// attempt per invocation and prints what the kernel answered, so the
// integration tests assert effects ("error EROFS", "1 2") rather than only
// that a command ran.
//
// Built with -static -fno-exceptions: it must run in any sandbox root, with
// no loader and no shared libraries visible, so it keeps to libc and a few
// header-only C++ pieces. Output goes through write(2), never stdio, so a
// line is out before the process can be killed.
//
// Conventions (the tests parse these):
//   - one line on stdout per invocation (trap-term prints two, `read` prints
//     the file verbatim);
//   - a refused attempt prints `error <ERRNO NAME>` (EROFS, EACCES, ...;
//     the number when the name is not in the table) and exits 1;
//   - success prints `ok` (or the value asked for) and exits 0;
//   - a usage error goes to stderr and exits 2.
//
// Adding an attempt: write a `int cmd_xxx(Args)` function and add one row to
// kSubcommands.

#include <dirent.h>
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;

// ---------------------------------------------------------------- errno names

struct ErrnoName {
  int value;
  const char* name;
};

#define NSRUN_ERRNO(e) ErrnoName{e, #e}
constexpr ErrnoName kErrnoNames[] = {
    NSRUN_ERRNO(EPERM),        NSRUN_ERRNO(ENOENT),       NSRUN_ERRNO(ESRCH),
    NSRUN_ERRNO(EINTR),        NSRUN_ERRNO(EIO),          NSRUN_ERRNO(ENXIO),
    NSRUN_ERRNO(E2BIG),        NSRUN_ERRNO(ENOEXEC),      NSRUN_ERRNO(EBADF),
    NSRUN_ERRNO(ECHILD),       NSRUN_ERRNO(EAGAIN),       NSRUN_ERRNO(ENOMEM),
    NSRUN_ERRNO(EACCES),       NSRUN_ERRNO(EFAULT),       NSRUN_ERRNO(EBUSY),
    NSRUN_ERRNO(EEXIST),       NSRUN_ERRNO(EXDEV),        NSRUN_ERRNO(ENODEV),
    NSRUN_ERRNO(ENOTDIR),      NSRUN_ERRNO(EISDIR),       NSRUN_ERRNO(EINVAL),
    NSRUN_ERRNO(ENFILE),       NSRUN_ERRNO(EMFILE),       NSRUN_ERRNO(ENOTTY),
    NSRUN_ERRNO(ETXTBSY),      NSRUN_ERRNO(EFBIG),        NSRUN_ERRNO(ENOSPC),
    NSRUN_ERRNO(ESPIPE),       NSRUN_ERRNO(EROFS),        NSRUN_ERRNO(EMLINK),
    NSRUN_ERRNO(EPIPE),        NSRUN_ERRNO(ERANGE),       NSRUN_ERRNO(EDEADLK),
    NSRUN_ERRNO(ENAMETOOLONG), NSRUN_ERRNO(ENOSYS),       NSRUN_ERRNO(ENOTEMPTY),
    NSRUN_ERRNO(ELOOP),        NSRUN_ERRNO(ENODATA),      NSRUN_ERRNO(EOVERFLOW),
    NSRUN_ERRNO(EOPNOTSUPP),   NSRUN_ERRNO(EAFNOSUPPORT), NSRUN_ERRNO(EADDRINUSE),
    NSRUN_ERRNO(ENETUNREACH),  NSRUN_ERRNO(ECONNREFUSED), NSRUN_ERRNO(ETIMEDOUT),
    NSRUN_ERRNO(EDQUOT),       NSRUN_ERRNO(ENOKEY),       NSRUN_ERRNO(EKEYREVOKED),
    NSRUN_ERRNO(EKEYREJECTED), NSRUN_ERRNO(ENOMEDIUM),    NSRUN_ERRNO(ENOTCONN),
    NSRUN_ERRNO(ENOTSOCK),     NSRUN_ERRNO(EPROTONOSUPPORT),
};
#undef NSRUN_ERRNO

// The returned pointer stays valid until the next call.
const char* errno_name(int err) {
  for (const ErrnoName& e : kErrnoNames) {
    if (e.value == err) return e.name;
  }
  static char number[16];
  snprintf(number, sizeof number, "%d", err);
  return number;
}

// ---------------------------------------------------------------- output

void write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nobody left to tell
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

// One output line, built up word by word and written with a single write(2).
class Line {
 public:
  Line& word(const char* s) {
    if (len_ > 0) raw(" ");
    return raw(s);
  }
  Line& number(long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    return word(buf);
  }
  Line& raw(const char* s) {
    size_t n = strlen(s);
    if (n > sizeof buf_ - 1 - len_) n = sizeof buf_ - 1 - len_;
    memcpy(buf_ + len_, s, n);
    len_ += n;
    return *this;
  }
  void print() {
    buf_[len_++] = '\n';
    write_all(STDOUT_FILENO, buf_, len_);
    len_ = 0;
  }

 private:
  char buf_[16384];
  size_t len_ = 0;
};

void print_line(const char* s) { Line().word(s).print(); }

// Prints `error <NAME>` for `err` and returns the "refused" exit code.
int refused(int err) {
  Line().word("error").word(errno_name(err)).print();
  return kExitRefused;
}

// For calls that return -1 and set errno: `ok` or `error <NAME>`.
int report(int rc) {
  if (rc < 0) return refused(errno);
  print_line("ok");
  return kExitOk;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

// Reads a whole (small) file; returns false and leaves errno set on failure.
bool slurp(const char* path, std::vector<char>& out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      errno = err;
      return false;
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  close(fd);
  return true;
}

bool is_number(const char* s) {
  if (*s == '\0') return false;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

// ---------------------------------------------------------------- subcommands

struct Args {
  char** v;
  int n;
};

// write PATH [TEXT]: create/truncate PATH and write TEXT (default empty).
int cmd_write(Args a) {
  const char* text = a.n > 1 ? a.v[1] : "";
  int fd = open(a.v[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return refused(errno);
  size_t len = strlen(text);
  const char* p = text;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return refused(err);
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return report(close(fd));
}

int cmd_mkdir(Args a) { return report(mkdir(a.v[0], 0755)); }
int cmd_rmdir(Args a) { return report(rmdir(a.v[0])); }
int cmd_unlink(Args a) { return report(unlink(a.v[0])); }

// read PATH: the contents verbatim (no newline added), or `error <NAME>`.
int cmd_read(Args a) {
  std::vector<char> data;
  if (!slurp(a.v[0], data)) return refused(errno);
  write_all(STDOUT_FILENO, data.data(), data.size());
  return kExitOk;
}

// exists PATH...: `yes` / `no` per path, without following a final symlink
// (lstat), so /proc magic links are judged as entries, not followed. Any
// other failure prints the errno name in that path's place and exits 1.
int cmd_exists(Args a) {
  Line line;
  int rc = kExitOk;
  for (int i = 0; i < a.n; ++i) {
    struct stat st;
    if (lstat(a.v[i], &st) == 0) {
      line.word("yes");
    } else if (errno == ENOENT || errno == ENOTDIR) {
      line.word("no");
    } else {
      line.word(errno_name(errno));
      rc = kExitRefused;
    }
  }
  line.print();
  return rc;
}

int cmd_readlink(Args a) {
  char buf[4096];
  ssize_t n = readlink(a.v[0], buf, sizeof buf - 1);
  if (n < 0) return refused(errno);
  buf[n] = '\0';
  print_line(buf);
  return kExitOk;
}

// list DIR: the entry names, sorted, space separated (an empty line when the
// directory is empty).
int cmd_list(Args a) {
  DIR* dir = opendir(a.v[0]);
  if (dir == nullptr) return refused(errno);
  std::vector<const char*> names;
  std::vector<char> storage;
  std::vector<size_t> offsets;
  while (dirent* e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    offsets.push_back(storage.size());
    storage.insert(storage.end(), e->d_name, e->d_name + strlen(e->d_name) + 1);
  }
  closedir(dir);
  for (size_t off : offsets) names.push_back(storage.data() + off);
  std::sort(names.begin(), names.end(),
            [](const char* x, const char* y) { return strcmp(x, y) < 0; });
  Line line;
  for (const char* name : names) line.word(name);
  line.print();
  return kExitOk;
}

// pids: the numeric entries of /proc, sorted numerically, space separated.
int cmd_pids(Args) {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return refused(errno);
  std::vector<long> pids;
  while (dirent* e = readdir(dir)) {
    if (is_number(e->d_name)) pids.push_back(strtol(e->d_name, nullptr, 10));
  }
  closedir(dir);
  std::sort(pids.begin(), pids.end());
  Line line;
  for (long pid : pids) line.number(pid);
  line.print();
  return kExitOk;
}

// status FIELD...: `FIELD=value` for each named line of /proc/self/status;
// a missing field prints `FIELD=?` and exits 1.
int cmd_status(Args a) {
  std::vector<char> data;
  if (!slurp("/proc/self/status", data)) return refused(errno);
  data.push_back('\0');
  const char* text = data.data();
  Line line;
  int rc = kExitOk;
  for (int i = 0; i < a.n; ++i) {
    const char* field = a.v[i];
    size_t flen = strlen(field);
    const char* value = nullptr;
    size_t vlen = 0;
    for (const char* p = text; *p; ) {
      const char* eol = strchr(p, '\n');
      if (eol == nullptr) eol = p + strlen(p);
      if (static_cast<size_t>(eol - p) > flen && strncmp(p, field, flen) == 0 && p[flen] == ':') {
        value = p + flen + 1;
        while (value < eol && (*value == ' ' || *value == '\t')) ++value;
        vlen = static_cast<size_t>(eol - value);
        break;
      }
      p = *eol ? eol + 1 : eol;
    }
    char item[512];
    if (value == nullptr) {
      snprintf(item, sizeof item, "%s=?", field);
      rc = kExitRefused;
    } else {
      snprintf(item, sizeof item, "%s=%.*s", field, static_cast<int>(vlen), value);
    }
    line.word(item);
  }
  line.print();
  return rc;
}

// spawn-kill: a child that pause()s; is it in /proc? kill it, wait for it.
// Prints e.g. `seen killed 9`.
int cmd_spawn_kill(Args) {
  pid_t child = fork();
  if (child < 0) return refused(errno);
  if (child == 0) {
    for (;;) pause();
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d", static_cast<int>(child));
  struct stat st;
  Line line;
  line.word(lstat(path, &st) == 0 ? "seen" : "unseen");
  if (kill(child, SIGKILL) < 0) {
    line.word("kill-error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0) {
    line.word("wait-error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  if (WIFSIGNALED(status)) {
    line.word("killed").number(WTERMSIG(status));
  } else {
    line.word("exited").number(WEXITSTATUS(status));
  }
  line.print();
  return kExitOk;
}

// orphan-zombie: child A forks grandchild B and exits; B exits at once. Once
// A is reaped here, B is an orphan whose only possible reaper is PID 1 of the
// namespace. Polls /proc/<B>/stat (bounded, 5 s) until the entry is gone.
// Prints `reaped B` or `zombie-left B state=X`.
int cmd_orphan_zombie(Args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return refused(errno);
  pid_t a = fork();
  if (a < 0) return refused(errno);
  if (a == 0) {
    close(fds[0]);
    pid_t b = fork();
    if (b == 0) _exit(0);
    write_all(fds[1], reinterpret_cast<const char*>(&b), sizeof b);
    _exit(b < 0 ? 1 : 0);
  }
  close(fds[1]);
  pid_t b = -1;
  ssize_t got = read(fds[0], &b, sizeof b);
  close(fds[0]);
  int status = 0;
  waitpid(a, &status, 0);
  if (got != static_cast<ssize_t>(sizeof b) || b <= 0) {
    print_line("error fork-grandchild");
    return kExitRefused;
  }

  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(b));
  char state = '?';
  for (int waited = 0; waited <= 5000; waited += 10) {
    std::vector<char> data;
    if (!slurp(path, data)) {
      if (errno == ENOENT || errno == ESRCH) {
        Line().word("reaped").number(b).print();
        return kExitOk;
      }
      return refused(errno);
    }
    data.push_back('\0');
    // The state follows the last ')' (the command name may contain one).
    if (const char* paren = strrchr(data.data(), ')'); paren && paren[1] && paren[2]) {
      state = paren[2];
    }
    sleep_ms(10);
  }
  char detail[32];
  snprintf(detail, sizeof detail, "state=%c", state);
  Line().word("zombie-left").number(b).word(detail).print();
  return kExitRefused;
}

// ns KIND: readlink /proc/self/ns/KIND, e.g. `pid:[4026531836]`.
int cmd_ns(Args a) {
  char path[256];
  snprintf(path, sizeof path, "/proc/self/ns/%s", a.v[0]);
  char* argv[] = {path};
  return cmd_readlink(Args{argv, 1});
}

int cmd_getpid(Args) {
  Line().number(getpid()).print();
  return kExitOk;
}

int cmd_getppid(Args) {
  Line().number(getppid()).print();
  return kExitOk;
}

// ids: `uid=U gid=G` (real ids).
int cmd_ids(Args) {
  char buf[64];
  snprintf(buf, sizeof buf, "uid=%u gid=%u", static_cast<unsigned>(getuid()),
           static_cast<unsigned>(getgid()));
  print_line(buf);
  return kExitOk;
}

int cmd_cwd(Args) {
  char buf[4096];
  if (getcwd(buf, sizeof buf) == nullptr) return refused(errno);
  print_line(buf);
  return kExitOk;
}

// getenv NAME: the value, or `unset`.
int cmd_getenv(Args a) {
  const char* value = getenv(a.v[0]);
  print_line(value ? value : "unset");
  return kExitOk;
}

volatile sig_atomic_t g_got_term = 0;
void on_term(int) { g_got_term = 1; }

// trap-term MARKFILE: prints `ready` once SIGTERM is handled, waits for it,
// then writes `term` to MARKFILE and prints `term` (or `error <NAME>`).
int cmd_trap_term(Args a) {
  // Blocked before `ready` is printed, so a SIGTERM sent the moment the test
  // reads `ready` is held until sigsuspend rather than lost or fatal.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, &old);
  struct sigaction sa {};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGTERM, &sa, nullptr) < 0) return refused(errno);
  print_line("ready");
  sigset_t wait_mask = old;
  sigdelset(&wait_mask, SIGTERM);
  while (!g_got_term) sigsuspend(&wait_mask);
  int fd = open(a.v[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return refused(errno);
  write_all(fd, "term", 4);
  if (close(fd) < 0) return refused(errno);
  print_line("term");
  return kExitOk;
}

// sleep-forever [TOKEN...]: prints `sleeping <pid>` and pause()s forever. The
// tokens only mark the process's cmdline, so the host can look for leftovers.
int cmd_sleep_forever(Args) {
  Line().word("sleeping").number(getpid()).print();
  for (;;) pause();
}

// ---------------------------------------------------------------- attacks
//
// Each makes one escape attempt and prints `ok` (it worked: the sandbox
// failed) or `error <ERRNO>`. Calls go through syscall(2) so that the exact
// register values reach the kernel (and the seccomp filter).

// tiocsti [high]: push 'X' into the input queue of the terminal on stdin;
// `high` sets bit 32 of the request, which the kernel ignores (the
// CVE-2019-10063 filter bypass).
int cmd_tiocsti(Args a) {
  unsigned long request = TIOCSTI;
  if (a.n > 0 && strcmp(a.v[0], "high") == 0) request |= 1UL << 32;
  char c = 'X';
  return report(static_cast<int>(syscall(SYS_ioctl, 0, request, &c)));
}

long try_personality(const char* arg) {
  return syscall(SYS_personality, strtoul(arg, nullptr, 0));
}

// sys NAME [ARG]: one call that the default filter refuses, with arguments
// that would do nothing harmful if it were allowed.
int cmd_sys(Args a) {
  const char* n = a.v[0];
  long rc = -1;
  if (strcmp(n, "keyctl") == 0) {
    rc = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
  } else if (strcmp(n, "add_key") == 0) {
    rc = syscall(SYS_add_key, "user", "nsrun-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
  } else if (strcmp(n, "request_key") == 0) {
    rc = syscall(SYS_request_key, "user", "nsrun-probe-absent", nullptr, 0);
  } else if (strcmp(n, "bpf") == 0) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    rc = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  } else if (strcmp(n, "perf_event_open") == 0) {
    perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.exclude_kernel = 1;
    rc = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  } else if (strcmp(n, "userfaultfd") == 0) {
    rc = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
  } else if (strcmp(n, "io_uring_setup") == 0) {
    io_uring_params params;
    memset(&params, 0, sizeof params);
    rc = syscall(SYS_io_uring_setup, 1, &params);
  } else if (strcmp(n, "kexec_load") == 0) {
    rc = syscall(SYS_kexec_load, 0, 0, nullptr, 0);
  } else if (strcmp(n, "init_module") == 0) {
    rc = syscall(SYS_init_module, nullptr, 0, "");
  } else if (strcmp(n, "acct") == 0) {
    rc = syscall(SYS_acct, nullptr);
  } else if (strcmp(n, "swapoff") == 0) {
    rc = syscall(SYS_swapoff, "/nonexistent-nsrun-swap");
  } else if (strcmp(n, "open_by_handle_at") == 0) {
    struct {
      file_handle h;
      unsigned char bytes[8];
    } handle;
    memset(&handle, 0, sizeof handle);
    handle.h.handle_bytes = 8;
    rc = syscall(SYS_open_by_handle_at, AT_FDCWD, &handle.h, O_RDONLY);
  } else if (strcmp(n, "quotactl") == 0) {
    rc = syscall(SYS_quotactl, 0, nullptr, 0, nullptr);
  } else if (strcmp(n, "personality") == 0) {
    rc = try_personality(a.n > 1 ? a.v[1] : "0x0040000");
    if (rc >= 0) syscall(SYS_personality, rc);  // restore
  } else if (strcmp(n, "clone3") == 0) {
    rc = syscall(SYS_clone3, nullptr, 0);
  } else if (strcmp(n, "unshare-user") == 0) {
    rc = syscall(SYS_unshare, CLONE_NEWUSER);
  } else if (strcmp(n, "clone-user") == 0) {
    rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (rc == 0) _exit(0);
    if (rc > 0) waitpid(static_cast<pid_t>(rc), nullptr, 0);
  } else {
    fprintf(stderr, "nsrun-probe: sys: unknown call '%s'\n", n);
    return kExitUsage;
  }
  return report(rc < 0 ? -1 : 0);
}

int cmd_socket(Args a) {
  int family = -1;
  if (strcmp(a.v[0], "unix") == 0) family = AF_UNIX;
  if (strcmp(a.v[0], "inet") == 0) family = AF_INET;
  if (strcmp(a.v[0], "inet6") == 0) family = AF_INET6;
  if (strcmp(a.v[0], "packet") == 0) family = AF_PACKET;
  if (strcmp(a.v[0], "vsock") == 0) family = AF_VSOCK;
  if (family < 0) return kExitUsage;
  int type = family == AF_PACKET ? SOCK_DGRAM : SOCK_STREAM;
  return report(static_cast<int>(syscall(SYS_socket, family, type | SOCK_CLOEXEC, 0)));
}

int cmd_mknod_block(Args a) { return report(mknod(a.v[0], S_IFBLK | 0600, makedev(8, 0))); }

// open-write PATH: open for writing without creating or truncating: success
// alone is the escape (nothing is written).
int cmd_open_write(Args a) {
  int fd = open(a.v[0], O_WRONLY | O_CLOEXEC);
  if (fd < 0) return refused(errno);
  close(fd);
  print_line("ok");
  return kExitOk;
}

int cmd_mount_tmpfs(Args a) { return report(mount("tmpfs", a.v[0], "tmpfs", 0, nullptr)); }
int cmd_remount_rw(Args a) { return report(mount(nullptr, a.v[0], nullptr, MS_REMOUNT | MS_BIND, nullptr)); }
int cmd_umount(Args a) { return report(umount2(a.v[0], MNT_DETACH)); }
int cmd_pivot_root(Args a) { return report(static_cast<int>(syscall(SYS_pivot_root, a.v[0], a.v[1]))); }

// open-tree-move SRC DST: clone the tree at SRC and attach it on DST with
// the new mount API; prints the first failure.
int cmd_open_tree_move(Args a) {
  long fd = syscall(SYS_open_tree, AT_FDCWD, a.v[0], 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC);
  if (fd < 0) {
    Line().word("open_tree").word("error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  long rc = syscall(SYS_move_mount, fd, "", AT_FDCWD, a.v[1], 4 /* MOVE_MOUNT_F_EMPTY_PATH */);
  if (rc < 0) {
    Line().word("move_mount").word("error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  print_line("ok");
  return kExitOk;
}

bool write_text(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = write(fd, text, strlen(text));
  int err = errno;
  close(fd);
  errno = err;
  return n == static_cast<ssize_t>(strlen(text));
}

// Root in a user namespace of our own, with every capability over a new
// mount namespace. Prints `unshare ok` (or the error) into `line`.
bool enter_nested_userns(Line& line) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    line.word("unshare").word("error").word(errno_name(errno)).print();
    return false;
  }
  line.word("unshare").word("ok");
  char map[64];
  snprintf(map, sizeof map, "0 %u 1", static_cast<unsigned>(uid));
  write_text("/proc/self/uid_map", map);
  write_text("/proc/self/setgroups", "deny");
  snprintf(map, sizeof map, "0 %u 1", static_cast<unsigned>(gid));
  write_text("/proc/self/gid_map", map);
  return true;
}

// The new mount API's read-only flag, cleared (mount_setattr's struct
// mount_attr: attr_set, attr_clr, propagation, userns_fd).
struct MountAttr {
  uint64_t set = 0, clr = 0, propagation = 0, userns_fd = 0;
};
constexpr uint64_t kMountAttrRdonly = 0x1;
constexpr unsigned kAtRecursive = 0x8000;
constexpr unsigned kOpenTreeClone = 1;
constexpr unsigned kMoveMountFEmptyPath = 4;

long clear_rdonly(int dfd, const char* path, unsigned flags) {
  MountAttr attr;
  attr.clr = kMountAttrRdonly;
  return syscall(SYS_mount_setattr, dfd, path, flags, &attr, sizeof attr);
}

// The new mount API against PATH: `setattr-rw` clears the read-only flag
// in place (recursively); `clone-rw` clears it on a detached clone of the
// tree and attaches the clone over PATH; `fsmount-over` attaches a new
// tmpfs made with fsopen/fsmount over PATH. 0 or -1 with errno.
int new_mount_api(const char* action, const char* path) {
  if (strcmp(action, "setattr-rw") == 0) return static_cast<int>(clear_rdonly(AT_FDCWD, path, kAtRecursive));
  if (strcmp(action, "clone-rw") == 0) {
    const int tree = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, path, kOpenTreeClone | kAtRecursive | O_CLOEXEC));
    if (tree < 0) return -1;
    if (clear_rdonly(tree, "", AT_EMPTY_PATH | kAtRecursive) != 0) return -1;
    return static_cast<int>(syscall(SYS_move_mount, tree, "", AT_FDCWD, path, kMoveMountFEmptyPath));
  }
  // fsmount-over
  const int fs = static_cast<int>(syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */));
  if (fs < 0) return -1;
  if (syscall(SYS_fsconfig, fs, 6 /* FSCONFIG_CMD_CREATE */, nullptr, nullptr, 0) != 0) return -1;
  const int mnt = static_cast<int>(syscall(SYS_fsmount, fs, 1 /* FSMOUNT_CLOEXEC */, 0));
  if (mnt < 0) return -1;
  return static_cast<int>(syscall(SYS_move_mount, mnt, "", AT_FDCWD, path, kMoveMountFEmptyPath));
}

// nested-userns ACTION PATH FILE: a user namespace of our own (root inside,
// every capability over a new mount namespace), then ACTION on PATH, then a
// write of PATH/FILE. Prints each step: `unshare error EPERM`, or e.g.
// `unshare ok remount-rw error EPERM write error EROFS`.
int cmd_nested_userns(Args a) {
  Line line;
  if (!enter_nested_userns(line)) return kExitRefused;
  const char* action = a.v[0];
  int rc;
  if (strcmp(action, "remount-rw") == 0) {
    rc = mount(nullptr, a.v[1], nullptr, MS_REMOUNT | MS_BIND, nullptr);
  } else if (strcmp(action, "mount-over") == 0) {
    rc = mount("tmpfs", a.v[1], "tmpfs", 0, nullptr);
  } else if (strcmp(action, "umount") == 0) {
    rc = umount2(a.v[1], MNT_DETACH);
  } else if (strcmp(action, "setattr-rw") == 0 || strcmp(action, "clone-rw") == 0 ||
             strcmp(action, "fsmount-over") == 0) {
    rc = new_mount_api(action, a.v[1]);
  } else {
    return kExitUsage;
  }
  line.word(action);
  if (rc == 0) line.word("ok");
  else line.word("error").word(errno_name(errno));
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", a.v[1], a.v[2]);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  line.word("write");
  if (fd >= 0) {
    close(fd);
    line.word("ok");
  } else {
    line.word("error").word(errno_name(errno));
  }
  line.print();
  return kExitOk;
}

// nested-reveal DIR NAME: in a user namespace of our own, a clone of the
// mount at DIR without the mounts below it (open_tree without
// AT_RECURSIVE), then NAME read through the clone's fd:
// what a cover over DIR/NAME hides, if the clone left the cover behind.
// Prints `unshare ok open_tree error EINVAL`, or `... read ok <first line>`.
int cmd_nested_reveal(Args a) {
  Line line;
  if (!enter_nested_userns(line)) return kExitRefused;
  const int tree = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, a.v[0], kOpenTreeClone | O_CLOEXEC));
  line.word("open_tree");
  if (tree < 0) {
    line.word("error").word(errno_name(errno)).print();
    return kExitOk;
  }
  line.word("ok");
  // Through the detached clone itself: no attaching needed.
  const int fd = openat(tree, a.v[1], O_RDONLY | O_CLOEXEC);
  line.word("read");
  if (fd < 0) {
    line.word("error").word(errno_name(errno)).print();
    return kExitOk;
  }
  char buf[256] = {};
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) {
    line.word("error").word(errno_name(errno)).print();
    return kExitOk;
  }
  if (char* nl = strchr(buf, '\n')) *nl = '\0';
  line.word("ok").word(n == 0 ? "(empty)" : buf).print();
  return kExitOk;
}

int cmd_ptrace(Args a) {
  pid_t pid = static_cast<pid_t>(strtol(a.v[0], nullptr, 10));
  long rc = ptrace(PTRACE_SEIZE, pid, nullptr, nullptr);
  if (rc == 0) ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
  return report(static_cast<int>(rc));
}

int cmd_kill(Args a) {
  return report(kill(static_cast<pid_t>(strtol(a.v[0], nullptr, 10)), static_cast<int>(strtol(a.v[1], nullptr, 10))));
}

// The probe is a static, non-PIE executable: this array sits at the same
// address in every probe process, so another probe's copy can be read at
// our own address.
const char g_vm_marker[] = "nsrun-probe-vm-marker";

int cmd_vm_read(Args a) {
  pid_t pid = static_cast<pid_t>(strtol(a.v[0], nullptr, 10));
  char buf[sizeof g_vm_marker] = {};
  iovec local{buf, sizeof buf};
  iovec remote{const_cast<char*>(g_vm_marker), sizeof g_vm_marker};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n < 0) return refused(errno);
  print_line(memcmp(buf, g_vm_marker, sizeof buf) == 0 ? "ok" : "ok-other-bytes");
  return kExitOk;
}

// fd-escape FD NAME: use an inherited directory descriptor to create NAME
// in that directory. Prints `fstat error EBADF` when the fd is not there.
int cmd_fd_escape(Args a) {
  int fd = static_cast<int>(strtol(a.v[0], nullptr, 10));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Line().word("fstat").word("error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  int out = openat(fd, a.v[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    Line().word("openat").word("error").word(errno_name(errno)).print();
    return kExitRefused;
  }
  close(out);
  print_line("ok");
  return kExitOk;
}

int cmd_connect_abstract(Args a) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return refused(errno);
  sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  size_t len = strlen(a.v[0]);
  if (len + 1 > sizeof addr.sun_path) return kExitUsage;
  memcpy(addr.sun_path + 1, a.v[0], len);  // sun_path[0] = 0: abstract
  socklen_t alen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
  return report(connect(s, reinterpret_cast<sockaddr*>(&addr), alen));
}

// A pathname address; false when PATH does not fit.
bool unix_address(const char* path, sockaddr_un& addr) {
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  size_t len = strlen(path);
  if (len + 1 > sizeof addr.sun_path) return false;
  memcpy(addr.sun_path, path, len);
  return true;
}

// connect-unix PATH: connect a stream socket to the pathname socket PATH.
int cmd_connect_unix(Args a) {
  sockaddr_un addr;
  if (!unix_address(a.v[0], addr)) return kExitUsage;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return refused(errno);
  return report(connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
}

// bind-unix PATH: make a pathname socket at PATH (left there).
int cmd_bind_unix(Args a) {
  sockaddr_un addr;
  if (!unix_address(a.v[0], addr)) return kExitUsage;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return refused(errno);
  return report(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
}

// socketpair: a connected pair, one byte through it.
int cmd_socketpair(Args) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return refused(errno);
  char c = 'x';
  if (write(sv[0], &c, 1) != 1 || read(sv[1], &c, 1) != 1) return refused(errno);
  return report(c == 'x' ? 0 : -1);
}

int connect_loopback(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

int cmd_connect_tcp(Args a) { return report(connect_loopback(static_cast<int>(strtol(a.v[0], nullptr, 10)))); }

// tcp-self: listen on 127.0.0.1 and connect to it: is loopback usable?
int cmd_tcp_self(Args) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return refused(errno);
  sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(s, 1) != 0) return refused(errno);
  socklen_t len = sizeof addr;
  if (getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return refused(errno);
  return report(connect_loopback(ntohs(addr.sin_port)));
}

void on_segv(int) {
  // IA-32 emulation is off: `int 0x80` raises #GP, delivered as SIGSEGV.
  const char msg[] = "error no-ia32-emulation\n";
  write_all(STDOUT_FILENO, msg, sizeof msg - 1);
  _exit(kExitRefused);
}

// i386-getpid: the i386 getpid (20) through `int 0x80` from this 64-bit
// process: a filter that checks only native numbers would miss it.
int cmd_i386_getpid(Args) {
  signal(SIGSEGV, on_segv);
  long eax = 20;
  // int 0x80 clobbers r8-r11 on return to a 64-bit process.
  asm volatile("int $0x80" : "+a"(eax) : : "memory", "r8", "r9", "r10", "r11", "cc");
  if (eax < 0 && eax > -4096) return refused(static_cast<int>(-eax));
  Line().word("ok").number(eax).print();
  return kExitOk;
}

// x32-getpid: getpid with the x32 bit (0x40000000) set in the number.
int cmd_x32_getpid(Args) {
  long rc = syscall(0x40000000L | SYS_getpid);
  if (rc < 0) return refused(errno);
  Line().word("ok").number(rc).print();
  return kExitOk;
}

// creds: real and effective ids, e.g. `uid=1000 euid=1000 gid=1000 egid=1000`.
int cmd_creds(Args) {
  char buf[128];
  snprintf(buf, sizeof buf, "uid=%u euid=%u gid=%u egid=%u", static_cast<unsigned>(getuid()),
           static_cast<unsigned>(geteuid()), static_cast<unsigned>(getgid()), static_cast<unsigned>(getegid()));
  print_line(buf);
  return kExitOk;
}

// ------------------------------------------- metadata and IPC

// meta OP PATH: one metadata change on PATH (tests/integration/
// landlock_escape_test.cpp). Each one is visible in the host's stat or
// xattrs when it goes through:
//   chmod      fchmodat(PATH, 04755)
//   fchmod     fchmod(04755) through a read-only fd
//   chown      fchownat to the file's own owner (clears a setuid bit)
//   utimensat  atime = mtime = 1 s after the epoch
//   setxattr   user.nsrun = "probe";  removexattr  user.nsrun
//   chattr     FS_IOC_SETFLAGS adding nodump (the owner may) through a
//              read-only fd; chattr-high the same with bit 32 of the request set
// From <linux/fs.h>, which cannot be included beside <sys/mount.h>.
constexpr unsigned long kGetFlags = _IOR('f', 1, long);
constexpr unsigned long kSetFlags = _IOW('f', 2, long);
constexpr int kNoDumpFlag = 0x00000040;

int cmd_meta(Args a) {
  const char* op = a.v[0];
  const char* path = a.v[1];
  long rc;
  if (strcmp(op, "chmod") == 0) {
    rc = syscall(SYS_fchmodat, AT_FDCWD, path, 04755);
  } else if (strcmp(op, "chown") == 0) {
    struct stat st;
    if (lstat(path, &st) != 0) return refused(errno);
    rc = syscall(SYS_fchownat, AT_FDCWD, path, st.st_uid, st.st_gid, 0);
  } else if (strcmp(op, "utimensat") == 0) {
    const timespec times[2] = {{1, 0}, {1, 0}};
    rc = syscall(SYS_utimensat, AT_FDCWD, path, times, 0);
  } else if (strcmp(op, "setxattr") == 0) {
    rc = syscall(SYS_setxattr, path, "user.nsrun", "probe", 5, 0);
  } else if (strcmp(op, "removexattr") == 0) {
    rc = syscall(SYS_removexattr, path, "user.nsrun");
  } else if (strcmp(op, "fchmod") == 0 || strcmp(op, "chattr") == 0 || strcmp(op, "chattr-high") == 0) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return refused(errno);
    if (strcmp(op, "fchmod") == 0) {
      rc = syscall(SYS_fchmod, fd, 04755);
    } else {
      int flags = 0;
      if (ioctl(fd, kGetFlags, &flags) != 0) {
        Line().word("getflags").word("error").word(errno_name(errno)).print();
        return kExitRefused;
      }
      flags |= kNoDumpFlag;
      unsigned long request = kSetFlags;
      if (strcmp(op, "chattr-high") == 0) request |= 1UL << 32;
      rc = syscall(SYS_ioctl, fd, request, &flags);
    }
    int err = errno;
    close(fd);
    errno = err;
  } else {
    return kExitUsage;
  }
  return report(static_cast<int>(rc));
}

// ipc KIND ID-OR-NAME: one attempt on a host IPC object.
//   shm ID     shmat the segment and write "probe" at its start
//   msg ID     msgsnd one message of type 1 ("probe")
//   sem ID     semop +1 on semaphore 0
//   mq NAME    mq_open(/NAME, O_CREAT|O_RDWR, 0600) (a new host queue)
int cmd_ipc(Args a) {
  const char* kind = a.v[0];
  long rc;
  if (strcmp(kind, "mq") == 0) {
    // The raw call takes the name without its leading slash.
    rc = syscall(SYS_mq_open, a.v[1], O_CREAT | O_RDWR | O_CLOEXEC, 0600, nullptr);
    if (rc >= 0) close(static_cast<int>(rc));
    return report(static_cast<int>(rc));
  }
  const long id = strtol(a.v[1], nullptr, 10);
  if (strcmp(kind, "shm") == 0) {
    rc = syscall(SYS_shmat, id, nullptr, 0);
    if (rc == -1) return refused(errno);
    memcpy(reinterpret_cast<char*>(rc), "probe", 5);
    syscall(SYS_shmdt, rc);
    rc = 0;
  } else if (strcmp(kind, "msg") == 0) {
    struct {
      long type;
      char text[8];
    } msg = {1, "probe"};
    rc = syscall(SYS_msgsnd, id, &msg, 5, IPC_NOWAIT);
  } else if (strcmp(kind, "sem") == 0) {
    sembuf op{0, 1, 0};
    rc = syscall(SYS_semop, id, &op, 1);
  } else {
    return kExitUsage;
  }
  return report(static_cast<int>(rc));
}

// daemonise [TOKEN...]: leaves a daemon behind the way a service script
// does: a child calls setsid() and forks again (the grandchild is orphaned
// at once), the grandchild forks a worker of its own; both then sleep
// forever. Prints `up TMPDIR` once the grandchild and its worker run, then
// sleeps forever itself. TOKEN only marks the processes' command lines.
int cmd_daemonise(Args) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return refused(errno);
  pid_t child = fork();
  if (child < 0) return refused(errno);
  if (child == 0) {
    setsid();
    pid_t daemon = fork();
    if (daemon != 0) _exit(daemon < 0 ? 1 : 0);
    // The daemon: a worker, then the byte that says both are up.
    int worker_up[2];
    if (pipe2(worker_up, O_CLOEXEC) != 0) _exit(1);
    pid_t worker = fork();
    if (worker < 0) _exit(1);
    if (worker == 0) {
      write_all(worker_up[1], "w", 1);
      for (;;) pause();
    }
    char c;
    if (read(worker_up[0], &c, 1) != 1) _exit(1);
    write_all(ready[1], "d", 1);
    for (;;) pause();
  }
  close(ready[1]);
  int status = 0;
  waitpid(child, &status, 0);
  char c;
  if (read(ready[0], &c, 1) != 1) {
    print_line("error daemon");
    return kExitRefused;
  }
  const char* tmpdir = getenv("TMPDIR");
  Line().word("up").word(tmpdir != nullptr ? tmpdir : "-").print();
  for (;;) pause();
}

// ---------------------------------------------------------------- limits

// fork-bomb MAX: forks children that wait, until a fork fails or MAX are up
// (so the test can never hurt the host, whatever the limit does); prints
// `forked N` and `error <ERRNO>` of the failed fork, or `forked N` and
// `ok`. The children end when their pipe closes (this process exits).
int cmd_fork_bomb(Args a) {
  const long max = strtol(a.v[0], nullptr, 10);
  int hold[2];
  if (pipe2(hold, O_CLOEXEC) != 0) return refused(errno);
  long n = 0;
  int err = 0;
  for (; n < max; ++n) {
    pid_t p = fork();
    if (p < 0) {
      err = errno;
      break;
    }
    if (p == 0) {
      close(hold[1]);
      char c;
      while (read(hold[0], &c, 1) < 0 && errno == EINTR) {
      }
      _exit(0);
    }
  }
  Line().word("forked").number(n).print();
  close(hold[1]);
  while (wait(nullptr) > 0) {
  }
  if (err != 0) return refused(err);
  print_line("ok");
  return kExitOk;
}

// hog MIB: maps and touches MIB MiB, one MiB at a time; prints `ok`, or
// `got N` and `error <ERRNO>` when a mapping fails first.
int cmd_hog(Args a) {
  const long mib = strtol(a.v[0], nullptr, 10);
  for (long i = 0; i < mib; ++i) {
    void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      Line().word("got").number(i).print();
      return refused(err);
    }
    memset(m, 1, 1 << 20);
  }
  print_line("ok");
  return kExitOk;
}

// rlimit NAME: `SOFT HARD` of one resource (core nofile nproc as), -1 for
// unlimited.
int cmd_rlimit(Args a) {
  int resource = -1;
  if (strcmp(a.v[0], "core") == 0) resource = RLIMIT_CORE;
  else if (strcmp(a.v[0], "nofile") == 0) resource = RLIMIT_NOFILE;
  else if (strcmp(a.v[0], "nproc") == 0) resource = RLIMIT_NPROC;
  else if (strcmp(a.v[0], "as") == 0) resource = RLIMIT_AS;
  else if (strcmp(a.v[0], "fsize") == 0) resource = RLIMIT_FSIZE;
  if (resource < 0) return kExitUsage;
  rlimit r{};
  if (getrlimit(resource, &r) != 0) return refused(errno);
  Line()
      .number(r.rlim_cur == RLIM_INFINITY ? -1 : static_cast<long long>(r.rlim_cur))
      .number(r.rlim_max == RLIM_INFINITY ? -1 : static_cast<long long>(r.rlim_max))
      .print();
  return kExitOk;
}

// ---------------------------------------------------------------- --watch-writes

// openat() relative to an open directory fd, not the cwd.
int cmd_write_at(Args a) {
  int dir = open(a.v[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return refused(errno);
  int fd = openat(dir, a.v[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = errno;
  close(dir);
  if (fd < 0) return refused(err);
  close(fd);
  print_line("ok");
  return kExitOk;
}

struct RaceState {
  char path[4096];
  const char* a;
  const char* b;
  size_t len;
  std::atomic<bool> stop{false};
};

void* flip_path(void* arg) {
  auto* st = static_cast<RaceState*>(arg);
  while (!st->stop.load(std::memory_order_relaxed)) {
    for (size_t i = 0; i < st->len; ++i) reinterpret_cast<volatile char*>(st->path)[i] = st->b[i];
    for (size_t i = 0; i < st->len; ++i) reinterpret_cast<volatile char*>(st->path)[i] = st->a[i];
  }
  return nullptr;
}

// N opens for writing of one buffer that a second thread keeps rewriting
// between PATH_A and PATH_B (same length): what the kernel answered, by kind.
int cmd_write_race(Args a) {
  static RaceState st;
  st.a = a.v[0];
  st.b = a.v[1];
  st.len = strlen(st.a);
  if (st.len != strlen(st.b) || st.len >= sizeof st.path) {
    const char* msg = "nsrun-probe: write-race: the paths must have the same length\n";
    write_all(STDERR_FILENO, msg, strlen(msg));
    return kExitUsage;
  }
  memcpy(st.path, st.a, st.len + 1);
  long n = atol(a.v[2]);
  pthread_t thread;
  if (pthread_create(&thread, nullptr, flip_path, &st) != 0) return refused(EAGAIN);
  long ok = 0, denied = 0, missing = 0, other = 0;
  for (long i = 0; i < n; ++i) {
    int fd = open(st.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ++ok;
      close(fd);
    } else if (errno == EROFS || errno == EACCES || errno == EPERM) {
      ++denied;
    } else if (errno == ENOENT) {
      ++missing;
    } else {
      ++other;
    }
  }
  st.stop = true;
  pthread_join(thread, nullptr);
  Line().word("ok").number(ok).word("refused").number(denied).word("missing").number(missing).word("other").number(other).print();
  return kExitOk;
}

// N opens for writing (or, with `ro`, for reading) and closes of PATH,
// timed: the per-call cost.
int cmd_open_loop(Args a) {
  long n = atol(a.v[1]);
  const int flags = a.n > 2 && strcmp(a.v[2], "ro") == 0 ? O_RDONLY | O_CLOEXEC : O_WRONLY | O_CREAT | O_CLOEXEC;
  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; ++i) {
    int fd = open(a.v[0], flags, 0644);
    if (fd < 0) return refused(errno);
    close(fd);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
  Line().word("ns_per_open").number(n > 0 ? ns / n : 0).print();
  return kExitOk;
}

// ---------------------------------------------------------------- dispatch

struct Subcommand {
  const char* name;
  const char* usage;
  int min_args;
  int max_args;  // -1: unbounded
  int (*run)(Args);
};

constexpr Subcommand kSubcommands[] = {
    {"write", "PATH [TEXT]", 1, 2, cmd_write},
    {"mkdir", "PATH", 1, 1, cmd_mkdir},
    {"rmdir", "PATH", 1, 1, cmd_rmdir},
    {"unlink", "PATH", 1, 1, cmd_unlink},
    {"read", "PATH", 1, 1, cmd_read},
    {"exists", "PATH...", 1, -1, cmd_exists},
    {"readlink", "PATH", 1, 1, cmd_readlink},
    {"list", "DIR", 1, 1, cmd_list},
    {"pids", "", 0, 0, cmd_pids},
    {"status", "FIELD...", 1, -1, cmd_status},
    {"spawn-kill", "", 0, 0, cmd_spawn_kill},
    {"orphan-zombie", "", 0, 0, cmd_orphan_zombie},
    {"ns", "KIND", 1, 1, cmd_ns},
    {"getpid", "", 0, 0, cmd_getpid},
    {"getppid", "", 0, 0, cmd_getppid},
    {"ids", "", 0, 0, cmd_ids},
    {"cwd", "", 0, 0, cmd_cwd},
    {"getenv", "NAME", 1, 1, cmd_getenv},
    {"trap-term", "MARKFILE", 1, 1, cmd_trap_term},
    {"sleep-forever", "[TOKEN...]", 0, -1, cmd_sleep_forever},
    // Attacks (tests/integration/escape_test.cpp): one attempt each.
    {"tiocsti", "[high]", 0, 1, cmd_tiocsti},
    {"sys", "NAME [ARG]", 1, 2, cmd_sys},
    {"socket", "unix|inet|inet6|packet|vsock", 1, 1, cmd_socket},
    {"mknod-block", "PATH", 1, 1, cmd_mknod_block},
    {"open-write", "PATH", 1, 1, cmd_open_write},
    {"mount-tmpfs", "PATH", 1, 1, cmd_mount_tmpfs},
    {"remount-rw", "PATH", 1, 1, cmd_remount_rw},
    {"umount", "PATH", 1, 1, cmd_umount},
    {"pivot-root", "NEW OLD", 2, 2, cmd_pivot_root},
    {"open-tree-move", "SRC DST", 2, 2, cmd_open_tree_move},
    {"nested-userns", "remount-rw|mount-over|umount|setattr-rw|clone-rw|fsmount-over PATH FILE", 3, 3,
     cmd_nested_userns},
    {"nested-reveal", "DIR NAME", 2, 2, cmd_nested_reveal},
    {"ptrace", "PID", 1, 1, cmd_ptrace},
    {"kill", "PID SIG", 2, 2, cmd_kill},
    {"vm-read", "PID", 1, 1, cmd_vm_read},
    {"fd-escape", "FD NAME", 2, 2, cmd_fd_escape},
    {"connect-abstract", "NAME", 1, 1, cmd_connect_abstract},
    {"connect-tcp", "PORT", 1, 1, cmd_connect_tcp},
    {"connect-unix", "PATH", 1, 1, cmd_connect_unix},
    {"bind-unix", "PATH", 1, 1, cmd_bind_unix},
    {"socketpair", "", 0, 0, cmd_socketpair},
    {"tcp-self", "", 0, 0, cmd_tcp_self},
    {"i386-getpid", "", 0, 0, cmd_i386_getpid},
    {"x32-getpid", "", 0, 0, cmd_x32_getpid},
    {"creds", "", 0, 0, cmd_creds},
    // Metadata and host IPC (tests/integration/landlock_escape_test.cpp).
    {"meta", "chmod|fchmod|chown|utimensat|setxattr|removexattr|chattr|chattr-high PATH", 2, 2, cmd_meta},
    {"ipc", "shm|msg|sem ID | mq NAME", 2, 2, cmd_ipc},
    {"daemonise", "[TOKEN...]", 0, -1, cmd_daemonise},
    // Limits (tests/integration/limits_test.cpp).
    {"fork-bomb", "MAX", 1, 1, cmd_fork_bomb},
    {"hog", "MIB", 1, 1, cmd_hog},
    {"rlimit", "core|nofile|nproc|as|fsize", 1, 1, cmd_rlimit},
    // --watch-writes (tests/integration/watch_writes_test.cpp, docs/bench.md).
    {"write-at", "DIR NAME", 2, 2, cmd_write_at},
    {"write-race", "PATH_A PATH_B N", 3, 3, cmd_write_race},
    {"open-loop", "PATH N [ro]", 2, 3, cmd_open_loop},
};

void print_usage() {
  // Usage goes to stderr: stdout carries only answers.
  const char* head = "usage: nsrun-probe SUBCOMMAND [ARG]...\n";
  write_all(STDERR_FILENO, head, strlen(head));
  for (const Subcommand& s : kSubcommands) {
    char buf[256];
    snprintf(buf, sizeof buf, "  %s %s\n", s.name, s.usage);
    write_all(STDERR_FILENO, buf, strlen(buf));
  }
}

}  // namespace

// tools/nsrun-outer.cpp: the hostile host around nsrun, for ladder tests.
int outer_main(int argc, char** argv);

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "outer") == 0) return outer_main(argc - 2, argv + 2);
  if (argc < 2) {
    print_usage();
    return kExitUsage;
  }
  for (const Subcommand& s : kSubcommands) {
    if (strcmp(argv[1], s.name) != 0) continue;
    int n = argc - 2;
    if (n < s.min_args || (s.max_args >= 0 && n > s.max_args)) {
      char buf[256];
      snprintf(buf, sizeof buf, "nsrun-probe: usage: %s %s\n", s.name, s.usage);
      write_all(STDERR_FILENO, buf, strlen(buf));
      return kExitUsage;
    }
    return s.run(Args{argv + 2, n});
  }
  char buf[256];
  snprintf(buf, sizeof buf, "nsrun-probe: unknown subcommand '%s'\n", argv[1]);
  write_all(STDERR_FILENO, buf, strlen(buf));
  return kExitUsage;
}
