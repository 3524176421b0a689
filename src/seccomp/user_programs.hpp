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

}  // namespace nsrun
