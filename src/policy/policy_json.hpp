// Policy <-> JSON. Reading is strict: an unknown field or a wrong type is a
// usage error naming the field. Writing then reading gives the same Policy.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "policy/json.hpp"
#include "policy/policy.hpp"

namespace nsrun {

// One row per Policy member: the key of the policy JSON that holds it, how
// that key is read and written, or why the member is not in the JSON.
// from_json and to_json read nothing else; the option table names a row
// by its key (OptionSpec::json), and tests/unit/policy_fields_test.cpp
// holds the rows to the members of Policy and to the options.
struct PolicyField {
  std::string_view key;      // in the JSON; empty: the member is left out
  std::string_view members;  // the Policy members the key holds, space-separated
  // Reads the key's value into the Policy; `path` is the key as errors name it.
  std::function<Result<void>(const json::Value&, Policy&, const std::string& path)> read;
  std::function<std::optional<json::Value>(const Policy&)> write;  // nullopt: the key is not written
  std::string_view unwritten;  // no key: why
};

// In the order to_json writes the keys.
std::span<const PolicyField> policy_fields();

// The row of a JSON key, or nullptr.
const PolicyField* policy_field(std::string_view key);

json::Value to_json(const Policy& policy);

// Fields present in `doc` replace those of `base`; lists replace lists.
Result<Policy> from_json(const json::Value& doc, Policy base = {});

// Reads and parses a policy file; errors name the file.
Result<Policy> load_policy_file(const std::string& path, Policy base = {});

}  // namespace nsrun
