// `nsrun-probe outer`: builds the hostile host a ladder test needs, around
// nsrun rather than inside it, then execs the given command. Each option
// changes only a namespace or a filter of this process, never the host:
//
//   --userns           a new user (and mount) namespace, the caller mapped to
//                      0, like `unshare -Ur` (needed by the unprivileged user
//                      for the options below, and to lower userns limits)
//   --userns-self      a new user (and mount) namespace, the caller mapped to
//                      itself (its uid, not root, after exec: the unprivileged
//                      user's way to the options that mount)
//   --mountns          a new private mount namespace (root), like `unshare -m`
//   --bind-file SRC DST  bind SRC over DST (a password database naming a
//                      home the test made)
//   --mask PATH        bind /dev/null over PATH (a masked /proc file, the way
//                      container runtimes mask /proc/timer_list)
//   --run-tmpfs        an empty tmpfs over /run
//   --marker PATH      create an empty file (e.g. /run/lakebox)
//   --sysctl NAME=V    write V to /proc/sys/user/NAME (max_user_namespaces,
//                      max_pid_namespaces, max_mnt_namespaces) in this userns
//   --deny-userns      seccomp: clone3 -> ENOSYS, clone/unshare with
//                      CLONE_NEWUSER -> EPERM (user namespaces refused)
//   --deny-landlock    seccomp: landlock_create_ruleset -> ENOSYS (no Landlock)
//
// Failures print `outer: <what>: <errno name>` on stderr and exit 2.
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

[[noreturn]] void die(const char* what, const char* arg = "") {
  char buf[512];
  snprintf(buf, sizeof buf, "outer: %s %s: %s\n", what, arg, strerror(errno));
  if (write(STDERR_FILENO, buf, strlen(buf)) < 0) {
  }
  _exit(2);
}

void write_text(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) die("open", path);
  if (write(fd, text, strlen(text)) < 0) die("write", path);
  close(fd);
}

// `self`: the caller keeps its ids inside; else it is root there.
void enter_userns(bool self) {
  const unsigned uid = getuid(), gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) die("unshare", "CLONE_NEWUSER|CLONE_NEWNS");
  char map[64];
  snprintf(map, sizeof map, "%u %u 1\n", self ? uid : 0, uid);
  write_text("/proc/self/uid_map", map);
  write_text("/proc/self/setgroups", "deny\n");
  snprintf(map, sizeof map, "%u %u 1\n", self ? gid : 0, gid);
  write_text("/proc/self/gid_map", map);
}

void install(sock_filter* code, unsigned short len) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
  sock_fprog prog{len, code};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) die("seccomp");
}

constexpr unsigned kNr = offsetof(seccomp_data, nr);
constexpr unsigned kArch = offsetof(seccomp_data, arch);
constexpr unsigned kArg0 = offsetof(seccomp_data, args);  // low 32 bits on little-endian

void deny_landlock() {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  install(code, sizeof code / sizeof code[0]);
}

void deny_userns() {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 8),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
      // clone3 passes its flags in memory, out of a filter's sight: make the
      // caller fall back to clone(2), as container runtimes do.
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  install(code, sizeof code / sizeof code[0]);
}

}  // namespace

int outer_main(int argc, char** argv) {
  int i = 0;
  bool want_deny_userns = false, want_deny_landlock = false;
  for (; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--") == 0) {
      ++i;
      break;
    }
    if (strcmp(a, "--userns") == 0) {
      enter_userns(false);
    } else if (strcmp(a, "--userns-self") == 0) {
      enter_userns(true);
    } else if (strcmp(a, "--bind-file") == 0 && i + 2 < argc) {
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make private", "/");
      if (mount(argv[i + 1], argv[i + 2], nullptr, MS_BIND, nullptr) != 0) die("bind", argv[i + 2]);
      i += 2;
    } else if (strcmp(a, "--mountns") == 0) {
      if (unshare(CLONE_NEWNS) != 0) die("unshare", "CLONE_NEWNS");
    } else if (strcmp(a, "--mask") == 0 && i + 1 < argc) {
      // Private first, so nothing propagates back to the host.
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make private", "/");
      if (mount("/dev/null", argv[++i], nullptr, MS_BIND, nullptr) != 0) die("mask", argv[i]);
    } else if (strcmp(a, "--run-tmpfs") == 0) {
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make private", "/");
      if (mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) die("tmpfs", "/run");
    } else if (strcmp(a, "--marker") == 0 && i + 1 < argc) {
      int fd = open(argv[++i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) die("create", argv[i]);
      close(fd);
    } else if (strcmp(a, "--sysctl") == 0 && i + 1 < argc) {
      const char* spec = argv[++i];
      const char* eq = strchr(spec, '=');
      if (eq == nullptr) die("--sysctl wants NAME=VALUE:", spec);
      char path[256];
      snprintf(path, sizeof path, "/proc/sys/user/%.*s", static_cast<int>(eq - spec), spec);
      write_text(path, eq + 1);
    } else if (strcmp(a, "--deny-userns") == 0) {
      want_deny_userns = true;
    } else if (strcmp(a, "--deny-landlock") == 0) {
      want_deny_landlock = true;
    } else {
      errno = EINVAL;
      die("unknown option", a);
    }
  }
  if (i >= argc) {
    errno = EINVAL;
    die("no command after --");
  }
  // Filters last: the namespace options above may need what they deny.
  if (want_deny_userns) deny_userns();
  if (want_deny_landlock) deny_landlock();
  execvp(argv[i], argv + i);
  die("exec", argv[i]);
}
