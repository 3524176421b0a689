// Validation runs before any namespace exists. Every failure is a usage
// error naming the option (or policy field) and the problem; nothing runs.
#pragma once

#include <span>
#include <string>

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// `need_command`: false for `nsrun explain` and `nsrun policy`, where the
// command may be absent. `mount_options[i]`, when given and not empty, is
// how errors name policy.mounts[i]: the option the user typed (`--ro`),
// where the kind's own name (`--ro-bind`) would name another option.
Result<void> validate(const Policy& policy, bool need_command, std::span<const std::string> mount_options = {});

}  // namespace nsrun
