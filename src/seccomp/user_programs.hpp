// Seccomp programs that are not nsrun's default filter: the caller's own
// compiled programs (read from fds, bwrap's --seccomp / --add-seccomp-fd)
// and the filter that keeps the command from making user namespaces. All
// are read or compiled in the parent, before clone, and loaded last.
#pragma once

#include <vector>

#include "seccomp/filter.hpp"
#include "sys/error.hpp"

namespace nsrun {

// Reads one compiled classic-BPF program (an array of struct sock_filter)
// from each fd, in order, to end-of-file.
Result<std::vector<BpfProgram>> read_user_programs(const std::vector<int>& fds);

// A filter refusing every way to make or enter a user namespace: unshare
// and clone with CLONE_NEWUSER, setns into one, and clone3 (its flags are
// out of a filter's reach, so it answers ENOSYS and libc falls back to
// clone). The errno is ENOSPC, what a user-namespace limit of 1 gives.
Result<BpfProgram> compile_no_userns_filter();

}  // namespace nsrun
