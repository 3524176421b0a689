#include "sys/syscalls.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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

int open_tree_attrs(int dfd, const char* path, unsigned flags, uint64_t attr_set, const char** failed_call) {
  // x86_64's number (the same on every architecture since Linux 5.1 but
  // alpha's); no glibc or kernel header of Debian 12 names it.
  constexpr long nr_open_tree_attr = 467;
  // Set at its first failure, whatever the errno (ENOSYS from an older
  // kernel, EPERM or ENOSYS from a filter around nsrun, a real error): the
  // process makes the two calls from then on, which is always correct, and
  // a refused call is not tried again for every bind.
  static bool unusable = false;
  struct mount_attr attr{};
  attr.attr_set = attr_set;
  if (attr_set != 0 && !unusable) {
    const long fd = syscall(nr_open_tree_attr, dfd, path, flags, &attr, sizeof attr);
    if (fd >= 0) return static_cast<int>(fd);
    unusable = true;
  }
  const int fd = ::open_tree(dfd, path, flags);
  if (fd < 0) {
    if (failed_call) *failed_call = "open_tree";
    return -1;
  }
  if (attr_set == 0) return fd;
  if (::mount_setattr(fd, "", AT_EMPTY_PATH | (flags & AT_RECURSIVE), &attr, sizeof attr) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    if (failed_call) *failed_call = "mount_setattr";
    return -1;
  }
  return fd;
}

int openat2(int dfd, const char* path, int flags, unsigned mode, uint64_t resolve) {
  OpenHow how{static_cast<uint64_t>(flags), mode, resolve};
  return static_cast<int>(syscall(SYS_openat2, dfd, path, &how, sizeof how));
}

int single_link_file(int fd, bool* stat_failed) {
  struct stat st{};
  *stat_failed = ::fstat(fd, &st) != 0;
  if (*stat_failed) return errno;
  if (!S_ISREG(st.st_mode)) return EINVAL;
  return st.st_nlink == 1 ? 0 : EMLINK;
}

void close_all_but(std::vector<int> keep) {
  std::erase_if(keep, [](int fd) { return fd < 3; });
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(from, ~0U, 0);
}

}  // namespace nsrun::sys
