// The launch report (--report PATH, --report-fd N): one JSON object saying
// which rung ran the command, why the others did not, and how long each
// launch phase took. Reason codes are stable; docs/report.md lists them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ns/timeline.hpp"
#include "policy/json.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

struct RungReport {
  std::string name;      // "namespaces", "landlock"
  bool used = false;
  std::string reason;    // stable code when not used: "userns-denied", "not-tried", ...
  std::string detail;    // the error message behind the reason, if any
};

struct LaunchReport {
  std::string rung;                    // the rung that ran the command, "unconfined", or "none"
  Mode mode = Mode::workspace_write;
  ProcMode proc = ProcMode::fresh;     // resolved
  std::string host_backend;
  SeccompMode seccomp = SeccompMode::standard;
  int landlock_abi = 0;                // 0: not probed or missing
  std::string landlock_enforcement;    // "full", "partial", "" when Landlock was not used
  std::vector<std::string> landlock_dropped;  // what this ABI cannot enforce ("truncate", ...)
  std::vector<std::string> landlock_refused;  // refused everywhere, writable roots too ("file-metadata", ...)
  std::vector<RungReport> rungs;
  std::vector<PhaseTime> phases;
  int exit_code = 125;
  std::optional<Error> error;
};

json::Value to_json(const LaunchReport& report);

// Writes the report where the Policy asks (path and/or fd); does nothing
// when it asks for none.
Result<void> write_report(const Policy& policy, const LaunchReport& report);

}  // namespace nsrun
