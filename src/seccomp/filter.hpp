// The seccomp filter: built from the Policy and compiled with libseccomp in
// the parent, before clone; the child only loads the compiled program, last,
// immediately before exec.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "seccomp/rules.hpp"
#include "sys/error.hpp"

namespace nsrun {

using BpfProgram = std::vector<sock_filter>;

// An empty program means "no filter" (seccomp none).
Result<BpfProgram> compile_filter(const Policy& policy, FilterRung rung = FilterRung::namespaces);

// The table -> BPF for the native architecture; another ABI (i386 and x32
// on x86_64) gets spec.foreign_abi_err for every call. A system call that
// libseccomp cannot name is an error, never a rule silently left out.
Result<BpfProgram> compile_spec(const FilterSpec& spec);

// One line for `nsrun explain` and the docs: which filter, how big.
std::string describe_filter(const FilterSpec& spec, const BpfProgram& program);

// Child side: loads a compiled program (no libseccomp call after clone).
Result<void> load_filter(const BpfProgram& program);

}  // namespace nsrun
