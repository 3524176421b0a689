// The table -> BPF, with libseccomp. Used when nsrun is built (to
// precompile every filter variant) and by the tests; never at launch.
#pragma once

#include <string>

#include "seccomp/filter.hpp"
#include "seccomp/rules.hpp"

namespace nsrun {

// For the native architecture; another ABI (i386 and x32 on x86_64) gets
// spec.foreign_abi_err for every call. A system call that libseccomp cannot
// name is an error, never a rule silently left out.
Result<BpfProgram> compile_spec(const FilterSpec& spec);

// The native number of a system call by name: libseccomp's, else a short
// table of calls newer than the libseccomp release; __NR_SCMP_ERROR when
// neither knows it.
int syscall_number(const std::string& name);

}  // namespace nsrun
