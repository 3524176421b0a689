#include "sys/syscalls.hpp"

#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace nsrun::sys {

namespace {
// The kernel's struct clone_args (v0) and struct open_how.
struct CloneArgs {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
  uint64_t set_tid, set_tid_size, cgroup;  // v2 (Linux 5.7): CLONE_INTO_CGROUP
};
struct OpenHow {
  uint64_t flags, mode, resolve;
};
}  // namespace

pid_t clone_fork(uint64_t flags) {
  CloneArgs args{};
  args.flags = flags;
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid >= 0 || errno != ENOSYS) return static_cast<pid_t>(pid);
  // clone(2) with a null stack duplicates the caller's stack, like fork().
  return static_cast<pid_t>(syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

pid_t clone_fork_into(uint64_t flags, int cgroup_fd) {
  CloneArgs args{};
  args.flags = flags | CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_fd);
  // No fallback: a child that starts outside its cgroup is not limited.
  return static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
}

int pivot_root(const char* new_root, const char* put_old) {
  return static_cast<int>(syscall(SYS_pivot_root, new_root, put_old));
}

int openat2(int dfd, const char* path, int flags, unsigned mode, uint64_t resolve) {
  OpenHow how{static_cast<uint64_t>(flags), mode, resolve};
  return static_cast<int>(syscall(SYS_openat2, dfd, path, &how, sizeof how));
}

}  // namespace nsrun::sys
