// The seccomp filter: chosen from the Policy in the parent, before clone;
// the child only loads the program, last, immediately before exec. The
// programs are compiled with libseccomp when nsrun is built (every variant
// the Policy can ask for is a handful), so launching pays neither for
// libseccomp nor for linking it.
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

// Whether compile_filter() gives a program for `key` (false: --seccomp
// none on the namespace rung), without unpacking it: what the report says
// of a spec whose program was not unpacked (SpecFor::landlock_only).
bool filter_loads(const FilterKey& key);

// The notifying variant (seccomp/notify.hpp); empty when there is none.
Result<BpfProgram> compile_notify_filter(const Policy& policy, FilterRung rung = FilterRung::namespaces);

// The --watch-writes filter (seccomp/writes.hpp).
Result<BpfProgram> compile_watch_writes_filter();
// The notifying variant with the watch's rules; empty when there is none.
Result<BpfProgram> compile_notify_watch_filter(const Policy& policy, FilterRung rung = FilterRung::namespaces);
// The notifying variant with the protect guard's rules (seccomp/writes.hpp).
Result<BpfProgram> compile_notify_guard_filter(const Policy& policy, FilterRung rung = FilterRung::namespaces);

// The filter behind bwrap's --disable-userns (see no_userns_spec()).
Result<BpfProgram> compile_no_userns_filter();

// One line for `nsrun explain` and the docs: which filter, how big.
std::string describe_filter(const FilterSpec& spec, const BpfProgram& program);

// Child side: loads a compiled program (no libseccomp call after clone).
Result<void> load_filter(const BpfProgram& program);

}  // namespace nsrun
