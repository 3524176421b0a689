// The seccomp filter: built from the Policy and compiled with libseccomp in
// the parent, before clone; the child only loads the compiled program, last,
// immediately before exec.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

using BpfProgram = std::vector<sock_filter>;

// An empty program means "no filter" (seccomp none).
Result<BpfProgram> compile_filter(const Policy& policy);

// Child side: loads a compiled program (no libseccomp call after clone).
Result<void> load_filter(const BpfProgram& program);

}  // namespace nsrun
