// `nsrun session start`: the host side of a session. The nsrun process that
// makes the sandbox (as a one-shot launch makes it: the same layers,
// policy, egress proxy, limits) detaches from the caller, keeps the
// sandbox's PID 1 as its child (die-with-parent: when this process dies,
// by SIGKILL too, PID 1 and with it the PID namespace's every process
// die) and serves the control socket on a thread of its own while the
// launch's supervision (timeout, seccomp listener, proxy) runs as for
// one command. Everything PID 1 sends is treated as hostile: bounded
// messages, no fds accepted, a malformed one ends the session.
#pragma once

#include <cstdint>
#include <string>

#include "policy/policy.hpp"

namespace nsrun::session {

struct StartOptions {
  std::string name;
  uint64_t idle_timeout_ms = 0;  // 0: none. The whole-session limit is the launch's --timeout.
  bool verdict = false;          // --verdict: every foreground exec prints its verdict line
};

// Returns the caller's exit status once the session is ready (0) or has
// failed to start (125, its message printed).
int start(const Policy& policy, const StartOptions& options);

// Why the Landlock rung refuses sessions, for messages and docs.
std::string_view landlock_refusal();

// The bounds of a background job's log: the current file is moved to
// NAME.1 once it holds this much, so at most twice this is kept.
inline constexpr uint64_t log_file_max = 4 * 1024 * 1024;

}  // namespace nsrun::session
