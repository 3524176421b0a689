// The launch: one Policy in, the command run on the first usable rung,
// nsrun's exit status out. The pipeline, in the order a launch goes
// through its files: the spec (launch/spec.hpp), the ladder
// (launch/ladder.hpp) over the rungs (launch/rung.hpp), the command's
// start (launch/command.hpp), nsrun's supervision (launch/supervise.hpp).
#pragma once

#include <functional>
#include <optional>

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// Runs the command; returns nsrun's exit status (the command's, or 125, 126,
// 127 for nsrun's own failures, with the message already printed).
int run(const Policy& policy);

// Shows one of nsrun's own failures and returns the exit status it gives.
// A front end with other conventions (bwrap's messages, exit 1) passes its
// own; the launch does not know which front end it serves. `cause`, when
// set, is the namespace rung's own failure behind a refusal of the ladder.
using ErrorReporter = std::function<int(const Error& error, const std::optional<Error>& cause)>;
// How a sandbox killed before the command's exec ends the run (see
// LaunchSpec::setup_death_as_status).
enum class SetupDeath { error, as_status };
int run(const Policy& policy, const ErrorReporter& report_error, SetupDeath setup_death = SetupDeath::error);

}  // namespace nsrun
