// nsrun's side of a sandbox once its first process is cloned, for every
// rung: the channel read to its end, then the command watched to its end.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string_view>

#include "launch/attempt.hpp"
#include "launch/spec.hpp"
#include "net/egress.hpp"

namespace nsrun {

// Parent side, after fork/clone of `child` (named `first_process` in a
// message): reads the channel to its end, then waits for the command,
// forwarding signals. A sandbox that dies before the command's exec
// (SIGKILL, the OOM killer) ends as an error of the phase "set-up" (exit
// 125); one that dies after it, with the status it died with (137 for a
// SIGKILL), as the command would. `proxy` (--network proxy) has its thread
// started by the wait loop at the first connection or query.
LaunchOutcome supervise(pid_t child, int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                        std::string_view first_process, egress::Egress* proxy = nullptr);

}  // namespace nsrun
