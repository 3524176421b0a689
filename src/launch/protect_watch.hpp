// What nsrun can see of the protected paths (issue 14) around a run: how
// each was kept, and which missing one that direct mode does not keep
// exists afterwards. One call before the ladder, one after.
#pragma once

#include <vector>

#include "launch/report.hpp"
#include "policy/policy.hpp"
#include "policy/protect.hpp"

namespace nsrun {

struct ProtectWatch {
  std::vector<ProtectedPathState> before;
};

ProtectWatch watch_protected(const Policy& policy);

// Fills report.protected_paths and report.hidden_credentials; prints one
// line on stderr for each path not kept that the run left behind
// (`nsrun: protected path P: created during the run ...`).
void report_protected(const ProtectWatch& watch, const Policy& policy, LaunchReport& report);

}  // namespace nsrun
