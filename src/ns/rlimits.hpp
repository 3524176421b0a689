// Child side of the limits: the rlimits the command starts with.
#pragma once

#include <vector>

#include "policy/limits.hpp"
#include "sys/error.hpp"

namespace nsrun {

// setrlimit() for each, in order. Lowering needs no privilege; raising a
// hard limit above the caller's needs CAP_SYS_RESOURCE in the host's user
// namespace, which a sandbox never has: that fails with the kernel's EPERM,
// naming the limit.
Result<void> apply_rlimits(const std::vector<RlimitSetting>& rlimits);

}  // namespace nsrun
