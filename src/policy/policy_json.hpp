// Policy <-> JSON. Reading is strict: an unknown field or a wrong type is a
// usage error naming the field. Writing then reading gives the same Policy.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/json.hpp"
#include "policy/policy.hpp"

namespace nsrun {

json::Value to_json(const Policy& policy);

// Fields present in `doc` replace those of `base`; lists replace lists.
Result<Policy> from_json(const json::Value& doc, Policy base = {});

// The top-level fields from_json reads (the option table's `json` names are
// checked against them, tests/unit/options_test.cpp).
std::vector<std::string_view> policy_json_fields();

// Reads and parses a policy file; errors name the file.
Result<Policy> load_policy_file(const std::string& path, Policy base = {});

}  // namespace nsrun
