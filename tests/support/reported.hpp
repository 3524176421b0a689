// Runs nsrun with --report into a directory of its own and hands back the
// run and the parsed report, for the tests that assert what the report
// claims (limits, --watch-writes). Header-only: the integration suite links
// core (for the JSON parser), the VM suite does not include this.
#pragma once

#include <string>
#include <vector>

#include "harness.hpp"
#include "rungs.hpp"
#include "policy/json.hpp"

namespace nsrun_test {

struct Reported {
  RunResult run;
  nsrun::json::Value report;  // null when no report was written or it did not parse
};

inline Reported run_reported(const TempDir& ws, const std::vector<std::string>& args, Millis timeout = 30s) {
  TempDir out("report");
  const std::string path = out / "r.json";
  RunOptions opts = at(ws);
  opts.timeout = timeout;
  Reported r;
  r.run = nsrun(concat({"--report", path}, args), opts);
  if (file_exists(path)) {
    auto doc = nsrun::json::parse(read_file(path));
    if (doc) r.report = std::move(*doc);
  }
  return r;
}

// The string at `v`, or "<none>" where there is none (so a CHECK shows it).
inline std::string str(const nsrun::json::Value* v) {
  return v != nullptr && v->is_string() ? v->as_string() : "<none>";
}

}  // namespace nsrun_test
