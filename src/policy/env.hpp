// The command's environment, computed before clone from the caller's
// environment and the Policy's operations.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// Order of application: start from `inherited` (nothing with clearenv);
// keep only names matching an allow glob when any is given; drop names
// matching a deny glob; then apply set and unset in the order given.
std::vector<std::string> resolve_env(const Policy& policy, const std::vector<std::string>& inherited);

// --network none: the variables that make package managers fail at once
// rather than retry a network that is not there. Only where the Policy
// asks for them (native front ends, offline_env).
const std::vector<std::pair<std::string, std::string>>& offline_environment();
bool wants_offline_environment(const Policy& policy);

// Sets NAME=VALUE in `env`, replacing an inherited value, unless the
// Policy sets NAME itself (--setenv wins).
void set_unless_policy_sets(const Policy& policy, std::vector<std::string>& env, std::string_view name,
                            std::string_view value);

// The caller's environment as a vector.
std::vector<std::string> current_environment();

// The value of NAME in a resolved environment, or nullptr.
const char* env_lookup(const std::vector<std::string>& env, std::string_view name);

}  // namespace nsrun
