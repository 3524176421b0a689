// One exec's report and verdict (`nsrun exec --report/--verdict`): a
// launch report (launch/report.hpp, docs/report.schema.json) made by the
// session's nsrun from the session's facts, how the command ended and
// what was attributed to it (session/ledger.hpp). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launch/refusals.hpp"
#include "launch/report.hpp"
#include "session/ledger.hpp"

namespace nsrun::session {

// What every exec's report shares: the session's (rung, mode, hidden
// credentials, layers, limits) and the facts its refusals are read with.
struct SessionReportBase {
  LaunchReport report;
  RefusalFacts facts;  // facts.egress is set per exec
  bool proxy = false;  // --network proxy
};

struct ExecEnd {
  enum class How { exited, failed, session_ended } how = How::exited;
  int code = 125;                  // what the caller's nsrun exec exits with
  std::optional<int> wait_status;  // exited: the command's own (from PID 1)
  std::string error;               // failed, session_ended: why
  bool session_timeout = false;    // session_ended: by the session's --timeout
  bool timed_out = false;          // exited after its own --timeout's SIGTERM
  bool killed = false;             // ... and SIGKILL
  uint64_t timeout_ms = 0, kill_after_ms = 2000;
  uint64_t wall_us = 0;            // from the command's start, as the session's nsrun saw it
  uint64_t user_us = 0, sys_us = 0, maxrss_kb = 0;
  // Other jobs of the session that ran while this exec did: their egress
  // denials cannot be told from its own.
  std::vector<int64_t> beside;
  // Processes an earlier command left in the session, running at its end
  // (counted only when it has egress denials to tell apart).
  std::size_t strays = 0;
};

LaunchReport exec_report(const SessionReportBase& base, const ExecEnd& end, const ExecObservations& obs);

// The report as JSON of at most `max_bytes` once dumped: refusals past the
// bound are dropped from the end and said under `unobserved`.
json::Value bounded_json(LaunchReport report, std::size_t max_bytes);

}  // namespace nsrun::session
