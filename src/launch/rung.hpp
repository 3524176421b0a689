// A rung of the ladder: one way to run a LaunchSpec, behind one interface
// (assess, run, explain), kept in a table (rungs()) that the ladder
// (launch/ladder.cpp) and `nsrun probe` walk in order. A new rung is a
// class here and one entry in the table (launch/rungs.cpp).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launch/attempt.hpp"
#include "launch/protect_watch.hpp"
#include "launch/report.hpp"
#include "launch/spec.hpp"
#include "policy/json.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// What the ladder does after a rung's run.
enum class LadderStep {
  stop,       // the rung decided the launch (the command ran, or a failure that is the user's to see): later rungs are not tried
  next,       // the host refused the rung before the command ran: the next rung is tried
  break_off,  // nsrun's own failure before the rung could be judged: the launch ends, later rungs left unjudged
};

class Rung {
 public:
  virtual ~Rung() = default;
  // Stable: the report's rungs, `nsrun probe`, --backend.
  virtual std::string_view name() const = 0;
  // Before anything of the rung runs: whether it can run `spec` on this
  // host, and its own part of the spec, kept for run() and explain().
  // When it cannot, fills `rung`'s reason and detail and returns false.
  // `report` gets what the rung notes whether or not it runs.
  virtual bool assess(const Policy& policy, const LaunchSpec& spec, const ProtectWatch* protect, RungReport& rung,
                      LaunchReport& report) = 0;
  // Runs the command of `spec` (up to its exec when spec.stop_before_exec)
  // once assess() said yes. Reads `spec`, never writes it (a rung that
  // needs another spec makes a new one from it); what the run learns, and
  // how it ended (a.outcome, with the exit code the launch ends with when
  // the step is `stop`), is `a`'s. Fills `rung` (used, reason, detail) and
  // the report's rung, verdict and notes.
  virtual LadderStep run(const Policy& policy, const LaunchSpec& spec, Attempt& a, RungReport& rung,
                         LaunchReport& report) = 0;
  // What `nsrun explain` prints for the rung: its plan of `spec` (mounts
  // or ruleset, capabilities, filter, network), without running anything;
  // an error when the rung cannot run the policy at all.
  virtual Result<void> explain(const Policy& policy, const LaunchSpec& spec, std::string& out) = 0;
  // What `nsrun probe` prints for the rung after assess() (and, when it
  // said yes, a run up to the exec) filled `rung`: its lines of text, and
  // its object of the JSON's "rungs".
  virtual void explain_probe(const RungReport& rung, std::string& text) const = 0;
  virtual json::Value explain_probe_json(const RungReport& rung) const = 0;
};

// The ladder's rungs, in the order tried: the namespace rung, then the
// Landlock rung. Fresh objects: each keeps what its assess() found.
std::vector<std::unique_ptr<Rung>> rungs();

// Whether --backend lets the rung named `rung` run (auto: every rung).
bool rung_allowed(Backend backend, std::string_view rung);

}  // namespace nsrun
