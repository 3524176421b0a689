// One rung's attempt at running a LaunchSpec (crun's "state"): the fds,
// the pids' roles, the timeline, the channel ends and what the rung decides
// late (the capabilities PID 1 can hand on, the command's environment once
// the Landlock supervisor named its TMPDIR), then the egress decisions and
// the outcome. A rung reads its spec `const` and writes only here; each
// attempt starts fresh, so nothing of one rung's try leaks into the next.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/spec.hpp"
#include "launch/watch.hpp"
#include "net/egress.hpp"
#include "ns/credentials.hpp"
#include "seccomp/notify.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

struct Attempt;
struct CommandSetup;

// A session's hooks into the namespace rung (src/session/, docs/
// sessions.md). Not a rung of the table: a session is this rung's launch
// with PID 1 in another role (it serves requests instead of starting one
// command), never an alternative the ladder, `nsrun probe` or `nsrun
// explain` would try or show, and the Landlock rung refuses it.
struct SessionHooks {
  int fd = -1;  // PID 1's end of the session's socket
  // PID 1, built and confined as for a command, calls it instead of
  // starting one; it never returns. `keep`: the fds PID 1 holds (locks).
  void (*serve)(const LaunchSpec& spec, Attempt& a, int channel, const sigset_t& original_mask,
                const CommandSetup& setup, const std::vector<Fd>& keep) = nullptr;
  // nsrun, after PID 1's clone and once --network proxy's process is
  // forked (nothing forks from nsrun after this, so it may start threads);
  // `proxy`: that proxy, or nullptr.
  std::function<void(pid_t pid1, egress::Egress* proxy)> started;
  // Told of each call the session's listener answers (launch/watch.hpp).
  NotifyTap* tap = nullptr;
};

// How one launch on a rung ended.
struct LaunchOutcome {
  int exit_code = 125;
  std::optional<Error> error;   // nsrun's own failure, not yet printed
  bool command_started = false; // the exec succeeded: no other rung may run it
  Timeline timeline;
  Verdict verdict;              // how the command ended, what it used and was refused
};

struct Attempt {
  // `timeline`: the launch's phases so far (the spec's, and the ladder's
  // marks between rungs).
  Attempt(const LaunchSpec& spec, const Timeline& timeline) : timeline(timeline), keep_caps(spec.keep_caps) {}
  explicit Attempt(const LaunchSpec& spec) : Attempt(spec, spec.timeline) {}

  Timeline timeline;
  // The spec's, then (namespace rung, in PID 1) with CAP_SETFCAP and only
  // what the process holds: what PID 1 and the command keep.
  std::vector<cap_value_t> keep_caps;
  // Set when the command's environment is not the spec's: the Landlock
  // supervisor's private TMPDIR (command_env()).
  std::optional<std::vector<std::string>> env;
  int words_fd = -1;                       // the sandbox's end of the last-words socket (ns/outcome.hpp)
  int words_parent_fd = -1;                // nsrun's end
  int last_pid_fd = -1;                    // PID 1: /proc/sys/kernel/ns_last_pid
  int egress_fd = -1;                      // --network proxy: the sandbox's end of the listeners' socketpair
  bool child_is_command = false;           // nsrun's child is the command (no PID 1, no supervisor)
  bool child_is_supervisor = false;        // nsrun's child is the Landlock rung's supervisor
  NotifyHandler notify_handler;            // the Landlock rung's connect() and listen() (net/connector.hpp)
  std::vector<egress::Decision> egress_decisions;  // --network proxy, once the command has ended
  // The plan run when it was not the spec's: the namespace rung's second
  // attempt, of the home's cache-redirect spec (launch/home_fallback.hpp).
  std::optional<LaunchPlan> plan;
  LaunchOutcome outcome;                   // how the attempt ended (the rung's run() fills it)
  // Set: this attempt is a session's (namespace rung only).
  std::optional<SessionHooks> session;
};

// The environment the command gets on this attempt.
inline const std::vector<std::string>& command_env(const LaunchSpec& spec, const Attempt& a) {
  return a.env ? *a.env : spec.env;
}

}  // namespace nsrun
