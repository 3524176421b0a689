#include "launch/protect_watch.hpp"

#include <cstdio>

#include <fmt/format.h>

namespace nsrun {

ProtectWatch watch_protected(const Policy& policy) {
  return ProtectWatch{scan_protected(policy), writable_roots(policy), protected_paths(policy)};
}

void report_protected(const ProtectWatch& watch, const Policy& policy, LaunchReport& report) {
  report.hidden_credentials = policy.hidden_paths;
  if (watch.before.empty()) return;
  // Only the paths not kept can have been created: one more walk for each
  // of them, none for the others (issue 16, fourth pass).
  std::vector<ProtectedPathState> after;
  for (const auto& st : watch.before)
    if (st.decision.state == ProtectState::not_kept) {
      after = rescan_not_kept(watch.before);
      break;
    }
  for (std::size_t i = 0; i < watch.before.size(); ++i) {
    const auto& st = watch.before[i];
    ProtectedReport pr{fmt::format("{}/{}", st.root, st.path), std::string(name(st.decision.state)), {}};
    if (st.decision.state == ProtectState::not_kept && i < after.size() && after[i].root == st.root &&
        after[i].path == st.path && after[i].decision.state != ProtectState::not_kept &&
        after[i].decision.state != ProtectState::unreachable) {
      pr.operation = "created";
      fmt::print(stderr,
                 "nsrun: protected path {}: created during the run (direct mode cannot keep a missing path directly "
                 "in a writable root; the copy-on-write workspace can)\n",
                 printable(pr.path));
    }
    report.protected_paths.push_back(std::move(pr));
  }
}

}  // namespace nsrun
