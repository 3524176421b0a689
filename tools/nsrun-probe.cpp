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
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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

// signal PID SIGNUM: kill(PID, SIGNUM); `ok` or `error <NAME>`.
int cmd_signal(Args a) {
  return report(kill(static_cast<pid_t>(strtol(a.v[0], nullptr, 10)), static_cast<int>(strtol(a.v[1], nullptr, 10))));
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
    {"signal", "PID SIGNUM", 2, 2, cmd_signal},
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
