// Checks a launch report against docs/report.schema.json, for the subset of
// JSON Schema that file uses: type (one or a list), enum, required,
// properties, additionalProperties (false or a schema), items, anyOf.
// Each mismatch comes back as "where: what" (empty: the report conforms).
#pragma once

#include <string>
#include <vector>

#include "policy/json.hpp"

namespace nsrun_test {

// docs/report.schema.json of the source tree the suite was built from.
const nsrun::json::Value& report_schema();

std::vector<std::string> schema_errors(const nsrun::json::Value& schema, const nsrun::json::Value& v);

inline std::vector<std::string> report_schema_errors(const nsrun::json::Value& report) {
  if (!report_schema().is_object()) return {"docs/report.schema.json does not parse"};
  return schema_errors(report_schema(), report);
}

}  // namespace nsrun_test
