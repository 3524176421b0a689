// The command's environment, computed before clone from the caller's
// environment and the Policy's operations.
#pragma once

#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// Order of application: start from `inherited` (nothing with clearenv);
// keep only names matching an allow glob when any is given; drop names
// matching a deny glob; then apply set and unset in the order given.
std::vector<std::string> resolve_env(const Policy& policy, const std::vector<std::string>& inherited);

// The caller's environment as a vector.
std::vector<std::string> current_environment();

// The value of NAME in a resolved environment, or nullptr.
const char* env_lookup(const std::vector<std::string>& env, std::string_view name);

}  // namespace nsrun
