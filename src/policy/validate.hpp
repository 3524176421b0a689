// Validation runs before any namespace exists. Every failure is a usage
// error naming the option (or policy field) and the problem; nothing runs.
#pragma once

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// `need_command`: false for `nsrun explain` and `nsrun policy`, where the
// command may be absent.
Result<void> validate(const Policy& policy, bool need_command);

}  // namespace nsrun
