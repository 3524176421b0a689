// The launch pipeline: everything that can be decided is decided before
// clone (plan, environment, exec candidates, capabilities); the child only
// executes named steps, and any failure reaches the parent whole.
#pragma once

#include <functional>
#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "launch/watch.hpp"
#include "mount/plan.hpp"
#include "policy/limits.hpp"
#include "net/egress.hpp"
#include "ns/credentials.hpp"
#include "policy/policy.hpp"
#include "policy/write_scope.hpp"
#include "seccomp/filter.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

struct CommandSetup;

// The namespace rung's launch spec (and what both rungs' command start
// shares), built once from the Policy and the host facts by prepare(): the
// launch, `nsrun probe` and `nsrun explain` read it, not the Policy. The
// Landlock rung's own part is landlock::Readiness (launch/landlock_rung.hpp).
// Only `timeline` changes during a launch (and the children's copies).
struct Prepared {
  LaunchPlan plan;
  std::vector<std::string> env;            // resolved environment
  std::vector<std::string> exec_paths;     // tried in order, execvp-style
  std::vector<std::string> argv;
  std::vector<int> pass_fds;
  std::vector<cap_value_t> keep_caps;      // kept inside (bwrap --cap-add)
  bool cap_grant_inheritable = true;       // Policy::cap_grant_inheritable
  // --allow-nested-userns run by root: the namespace rung also keeps
  // CAP_SETFCAP, in the sandbox's own user namespace (never on the
  // Landlock rung, where it would be the host's).
  bool keep_setfcap = false;
  int new_session = -1;                    // -1: when stdin is not a terminal
  bool die_with_parent = true;
  FilterKey filter;                        // the namespace rung's filter (cheap: explain builds its rules) ...
  BpfProgram seccomp;                      // ... compiled; loaded last, before exec
  std::vector<BpfProgram> extra_seccomp;   // the no-userns filter, then the caller's, after `seccomp`
  bool assert_userns_disabled = false;
  int info_fd = -1;                        // status fds, -1: none
  int json_status_fd = -1;
  int block_fd = -1;
  int userns_block_fd = -1;
  int userns_fd = -1;                      // existing namespaces to join, -1: none
  int userns2_fd = -1;
  int pidns_fd = -1;
  std::optional<uid_t> join_uid;           // set in the joined user namespace (no id maps there)
  std::optional<gid_t> join_gid;
  std::vector<std::string> lock_files;
  Timeline timeline;                       // started before prepare()
  // Limits and observation.
  LimitsPlan limits;                       // for this rung; rlimits set on the command before exec
  bool observe = false;                    // a report or --verdict wants the verdict
  BpfProgram seccomp_notify;               // `seccomp` with refusals sent to nsrun; empty: none
  std::optional<FilterKey> seccomp_notify_key;  // its filter: the rules, for the answers' errnos, when asked
  // --watch-writes: its rules are in `seccomp_notify` when there is one
  // (one listener per task); else this program, with a listener of its own.
  BpfProgram watch_writes;
  std::optional<WriteScope> write_scope;   // set: watched; where this rung lets the command write
  int words_fd = -1;                       // the sandbox's end of the last-words socket (ns/outcome.hpp)
  int words_parent_fd = -1;                // nsrun's end
  int last_pid_fd = -1;                    // PID 1: /proc/sys/kernel/ns_last_pid
  bool child_is_command = false;           // nsrun's child is the command (no PID 1, no supervisor)
  bool child_is_supervisor = false;        // nsrun's child is the Landlock rung's supervisor
  std::string cgroup_base;                 // the delegated cgroup v2 when limits.use_cgroup
  // ... or, as root on a v1 host, controller -> the caller's v1 cgroup
  std::vector<std::pair<std::string, std::string>> cgroup_v1_dirs;
  // --network proxy: the proxy's rules (log_fd set by run()),
  // the sandbox's end of the socketpair its listeners cross, and the
  // decisions once the command has ended.
  std::optional<egress::EgressConfig> egress;
  int egress_fd = -1;
  std::vector<egress::Decision> egress_decisions;
  NotifyHandler notify_handler;            // the Landlock rung's connect() and listen() (net/connector.hpp)
  bool require_listener = false;           // no plain-filter fall back: the handler is the promise
  // `nsrun probe`: the whole launch, with the command's process exiting 0
  // where it would exec; no command runs.
  bool stop_before_exec = false;
  // A sandbox that dies before the command's exec: an error of the phase
  // "set-up" (nsrun's way), or, as bwrap does, its status passed on
  // silently as the command's (SetupDeath::as_status).
  bool setup_death_as_status = false;
  // A session (src/session/): PID 1, built and confined as for a command,
  // calls `session_serve` (which never returns) instead of starting one;
  // it serves requests on `session_fd`. nsrun calls `session_started`
  // right after PID 1's clone.
  int session_fd = -1;
  void (*session_serve)(Prepared& p, int channel, const sigset_t& original_mask, const CommandSetup& setup,
                        const std::vector<Fd>& keep) = nullptr;
  std::function<void(pid_t pid1)> session_started;
};

Result<Prepared> prepare(const Policy& policy);

// The facts plan_limits() needs on this host, for one rung.
LimitFacts limit_facts(const Policy& policy, bool namespaces_rung);
// One rung's limits (plan, cgroup, the notifying filter), decided from
// the Policy before the rung runs; apply_limits() puts them into `p`
// (with the tmpfs sizes).
struct RungLimits {
  LimitsPlan plan;
  bool observe = false;
  BpfProgram notify;
  std::optional<FilterKey> notify_key;
  BpfProgram watch_writes;
  std::optional<WriteScope> write_scope;
  std::string cgroup_base;
  std::vector<std::pair<std::string, std::string>> cgroup_v1_dirs;
};
Result<RungLimits> rung_limits(const Policy& policy, FilterRung rung);
void apply_limits(Prepared& p, RungLimits limits);

// How one launch on the namespace rung ended.
struct LaunchOutcome {
  int exit_code = 125;
  std::optional<Error> error;   // nsrun's own failure, not yet printed
  bool command_started = false; // the exec succeeded: no other rung may run it
  Timeline timeline;
  Verdict verdict;              // how the command ended, what it used and was refused
};

LaunchOutcome run_namespaces(Prepared& prepared);

// How the process that becomes the command starts.
struct CommandSetup {
  int landlock_ruleset = -1;  // restricts the command to it (the Landlock rung)
  int close_in_child = -1;    // an fd of the parent the command must not keep
  // The parent already entered the working directory, emptied the
  // capability sets, set no_new_privs and loaded `Prepared::seccomp`; the
  // command inherits all of it instead of doing it again.
  bool confined_by_parent = false;
  // The rung's own filter instead of `Prepared::seccomp` (the Landlock
  // rung's, from its spec), so that no rung rewrites the shared spec.
  const BpfProgram* filter = nullptr;
};

// Shared by the rungs. Child side: the process that becomes the command
// (session, directory, fds, capabilities, no_new_privs, the Landlock
// ruleset when one is given, seccomp last, exec); failures go to `channel`.
[[noreturn]] void start_command(int channel, Prepared& p, const sigset_t& original_mask, const CommandSetup& setup);
// Parent side: starts start_command() in a new process sharing this one's
// memory until it execs (CLONE_VM|CLONE_VFORK). With a Landlock ruleset the
// child first arms die-with-parent and empties its bounding set.
pid_t spawn_command(int channel, Prepared& p, const sigset_t& original_mask, const CommandSetup& setup);
// Child side: PDEATHSIG, and a check that the parent did not die before it.
void arm_die_with_parent(int channel);
// Parent side, after fork/clone of `child` (named `first_process` in a
// message): reads the channel to its end, then waits for the command,
// forwarding signals. A sandbox that dies before the command's exec
// (SIGKILL, the OOM killer) ends as an error of the phase "set-up" (exit
// 125); one that dies after it, with the status it died with (137 for a
// SIGKILL), as the command would. `proxy` (--network proxy) has its thread
// started by the wait loop at the first connection or query.
LaunchOutcome supervise(pid_t child, int channel, Prepared& p, const sigset_t& original_mask,
                        std::string_view first_process, egress::Egress* proxy = nullptr);

// Runs the command; returns nsrun's exit status (the command's, or 125, 126,
// 127 for nsrun's own failures, with the message already printed).
int run(const Policy& policy);

// Shows one of nsrun's own failures and returns the exit status it gives.
// A front end with other conventions (bwrap's messages, exit 1) passes its
// own; the launch does not know which front end it serves. `cause`, when
// set, is the namespace rung's own failure behind a refusal of the ladder.
using ErrorReporter = std::function<int(const Error& error, const std::optional<Error>& cause)>;
// How a sandbox killed before the command's exec ends the run (see
// Prepared::setup_death_as_status).
enum class SetupDeath { error, as_status };
int run(const Policy& policy, const ErrorReporter& report_error, SetupDeath setup_death = SetupDeath::error);

// The candidate paths execvp would try for `name` under `path_var`.
std::vector<std::string> exec_candidates(const std::string& name, const char* path_var);

}  // namespace nsrun
