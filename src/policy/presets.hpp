// Mode presets: a mode expands into the head of the ordered mount list.
#pragma once

#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// The preset's operations for `policy.mode`, without the policy's own mounts.
std::vector<MountOp> preset_mounts(const Policy& policy);

// The preset (when on) followed by the policy's own mounts: later entries win.
std::vector<MountOp> effective_mounts(const Policy& policy);

}  // namespace nsrun
