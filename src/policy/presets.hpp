// Mode presets: a mode expands into the head of the ordered mount list.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// One operation, the way presets and tests write them.
MountOp mount_op(MountOp::Kind kind, std::string source, std::string dest);

// The preset's operations for `policy.mode`, without the policy's own mounts.
std::vector<MountOp> preset_mounts(const Policy& policy);

// The preset (when on) followed by the policy's own mounts: later entries win.
std::vector<MountOp> effective_mounts(const Policy& policy);

}  // namespace nsrun
