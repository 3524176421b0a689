// Thin wrappers over system calls that glibc 2.36 does not wrap. (It does
// wrap the new mount API, close_range and pidfd_open: use those directly.)
// Each returns -1 and sets errno, like libc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace nsrun::sys {

// clone3 without a new stack: returns like fork(). Falls back to clone(2)
// when the kernel has no clone3 (ENOSYS). The exit signal is SIGCHLD.
pid_t clone_fork(uint64_t flags);

// The same, the child starting in the cgroup `cgroup_fd` (a directory fd):
// clone3 with CLONE_INTO_CGROUP (Linux 5.7), without a fallback.
pid_t clone_fork_into(uint64_t flags, int cgroup_fd);

int pivot_root(const char* new_root, const char* put_old);

// openat2 with a `resolve` mask (RESOLVE_*).
int openat2(int dfd, const char* path, int flags, unsigned mode, uint64_t resolve);

// open_tree(dfd, path, flags) with OPEN_TREE_CLONE, and `attr_set` set on
// the clone as mount_setattr(2) would (recursively when `flags` has
// AT_RECURSIVE): one system call, open_tree_attr (Linux 6.15), instead of
// two. Where that call fails for any reason (an older kernel, a filter
// around nsrun that refuses it, a real error) the two calls are made
// instead, then and for the rest of the process, so a failure is reported
// by the call that fails, as before;
// `failed_call` says which ("open_tree" or "mount_setattr").
int open_tree_attrs(int dfd, const char* path, unsigned flags, uint64_t attr_set, const char** failed_call = nullptr);

// A file shown inside a hidden directory must not be another name of a
// hidden one: 0 when `fd` is a regular file with exactly one link, EMLINK
// for a regular file with more, EINVAL for anything else; fstat's errno,
// with `*stat_failed` set, when it cannot be looked at.
int single_link_file(int fd, bool* stat_failed);
inline constexpr const char* single_link_rule = "a file shown inside a hidden directory must be a regular file with one link";

// Closes every fd above 2 but those in `keep` (negative entries and 0-2
// are ignored), in as few close_range() calls as there are gaps.
void close_all_but(std::vector<int> keep);

}  // namespace nsrun::sys
