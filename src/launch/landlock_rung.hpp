// The Landlock rung: no namespaces; the command runs on the host's file
// system under a Landlock ruleset that keeps the mode's file-effect promise.
// nsrun forks once, waits (forwarding termination signals), kills whatever
// the command left behind and removes the private TMPDIR.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "landlock/ruleset.hpp"
#include "launch/launch.hpp"
#include "policy/policy.hpp"

namespace nsrun::landlock {

// Everything decided before fork: the ABI, the ruleset, why the rung
// cannot be used.
struct Readiness {
  int abi = 0;          // 0: Landlock missing
  std::string reason;   // stable code when unusable: landlock-missing, landlock-cannot-express
  std::string detail;   // the error or the item behind the reason
  Ruleset ruleset;      // valid when reason is empty (tmpdir rule not yet added)
};

// Reads the kernel's ABI and plans the ruleset for `policy`, without
// touching the file system. Used by the ladder and by `nsrun probe`.
Readiness assess(const Policy& policy);

// Runs the prepared command on this rung. `ready` must come from assess()
// with an empty reason.
LaunchOutcome run(Prepared& prepared, const Policy& policy, Readiness ready);

// The parent pid field of a /proc/<pid>/stat line, -1 when `stat` is not
// one. The command name before it may hold spaces and ')', and only the
// last ')' closes it.
pid_t parent_in_stat(std::string_view stat);

// ttyname() of each of fds 0-2 that is a terminal, without duplicates.
std::vector<std::string> terminals();

}  // namespace nsrun::landlock
