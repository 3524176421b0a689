#include "seccomp/filter.hpp"

#include <sys/prctl.h>

#include <linux/seccomp.h>

#include <algorithm>
#include <set>

#include <fmt/core.h>

#include "seccomp/precompiled.hpp"

namespace nsrun {

Result<BpfProgram> compile_filter(const Policy& policy, FilterRung rung) {
  // An empty program for --seccomp none, except on the Landlock rung,
  // whose own rules are always there.
  return precompiled_filter(filter_key(policy, rung));
}

bool filter_loads(const FilterKey& key) { return precompiled_filter_size(key) != 0; }

Result<BpfProgram> compile_notify_filter(const Policy& policy, FilterRung rung) {
  return precompiled_notify_filter(filter_key(policy, rung));
}

Result<BpfProgram> compile_no_userns_filter() { return precompiled_no_userns_filter(); }

Result<BpfProgram> compile_watch_writes_filter() { return precompiled_watch_writes_filter(); }

Result<BpfProgram> compile_notify_watch_filter(const Policy& policy, FilterRung rung) {
  return precompiled_notify_watch_filter(filter_key(policy, rung));
}

Result<BpfProgram> compile_notify_guard_filter(const Policy& policy, FilterRung rung) {
  return precompiled_notify_guard_filter(filter_key(policy, rung));
}

std::string describe_filter(const FilterSpec& spec, const BpfProgram& program) {
  if (!spec.enabled) return "none (no filter is loaded)";
  std::set<std::string_view> calls;
  for (const Rule& r : spec.rules) calls.insert(r.syscall);
  std::string names;
  for (auto c : calls) names += fmt::format("{}{}", names.empty() ? "" : " ", c);
  return fmt::format("{} ({} rules on {} system calls, {} BPF instructions; {}; other ABIs refused): {}",
                     spec.log ? "log (matches are logged, not refused)" : "default",
                     spec.rules.size(), calls.size(), program.size(),
                     std::ranges::any_of(spec.rules, [](const Rule& r) { return r.syscall == "clone3"; })
                         ? "nested user namespaces refused"
                         : "nested user namespaces allowed",
                     names);
}

Result<void> load_filter(const BpfProgram& program) {
  if (program.empty()) return {};
  sock_fprog prog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) return fail(sys_error(Operation::seccomp_load));
  return {};
}

}  // namespace nsrun
