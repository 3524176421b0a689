// The namespace rung: clone with new namespaces, a root built from the
// plan, PID 1, the command. The ladder's first rung (launch/rung.hpp).
#pragma once

#include "launch/attempt.hpp"
#include "launch/spec.hpp"

namespace nsrun {

// Runs `spec` on the namespace rung (up to the exec when
// spec.stop_before_exec). Reads the spec only; the fds, the roles of the
// processes, the timeline and the egress decisions are `a`'s.
LaunchOutcome run_namespaces(const LaunchSpec& spec, Attempt& a);

}  // namespace nsrun
