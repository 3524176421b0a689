// Policy <-> JSON. Reading is strict: an unknown field or a wrong type is a
// usage error naming the field. Writing then reading gives the same Policy.
#pragma once

#include <string>

#include "policy/json.hpp"
#include "policy/policy.hpp"

namespace nsrun {

json::Value to_json(const Policy& policy);

// Fields present in `doc` replace those of `base`; lists replace lists.
Result<Policy> from_json(const json::Value& doc, Policy base = {});

// Reads and parses a policy file; errors name the file.
Result<Policy> load_policy_file(const std::string& path, Policy base = {});

}  // namespace nsrun
