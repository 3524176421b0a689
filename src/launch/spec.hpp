// The launch spec (crun's "spec"): everything that can be decided is
// decided here, before any clone (plan, environment, exec candidates,
// capabilities, filters, limits), into one LaunchSpec that is `const` from
// then on. What a rung learns or decides while it runs lives in its
// Attempt (launch/attempt.hpp); a rung that needs a different spec (the
// Landlock rung's limits, the home's cache redirect) makes a new one with a
// function of the old, never a write into it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mount/plan.hpp"
#include "net/egress.hpp"
#include "ns/credentials.hpp"
#include "policy/limits.hpp"
#include "policy/policy.hpp"
#include "policy/write_scope.hpp"
#include "seccomp/filter.hpp"
#include "sys/error.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

// The namespace rung's launch spec (and what both rungs' command start
// shares), built once from the Policy and the host facts by prepare(): the
// launch, `nsrun probe` and `nsrun explain` read it, not the Policy. The
// Landlock rung's own part is landlock::Readiness (launch/landlock_rung.hpp).
struct LaunchSpec {
  LaunchPlan plan;
  std::vector<std::string> env;            // resolved environment
  std::vector<std::string> exec_paths;     // tried in order, execvp-style
  std::vector<std::string> argv;
  std::vector<int> pass_fds;
  std::vector<cap_value_t> keep_caps;      // asked to be kept inside (bwrap --cap-add); Attempt::keep_caps holds them
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
  // The launch's phases up to the spec (started before prepare()); each
  // Attempt goes on from a copy.
  Timeline timeline;
  // Limits and observation.
  LimitsPlan limits;                       // for this rung; rlimits set on the command before exec
  bool observe = false;                    // a report or --verdict wants the verdict
  BpfProgram seccomp_notify;               // `seccomp` with refusals sent to nsrun; empty: none
  std::optional<FilterKey> seccomp_notify_key;  // its filter: the rules, for the answers' errnos, when asked
  // --watch-writes: its rules are in `seccomp_notify` when there is one
  // (one listener per task); else this program, with a listener of its own.
  BpfProgram watch_writes;
  std::optional<WriteScope> write_scope;   // set: watched; where this rung lets the command write
  std::string cgroup_base;                 // the delegated cgroup v2 when limits.use_cgroup
  // ... or, as root on a v1 host, controller -> the caller's v1 cgroup
  std::vector<std::pair<std::string, std::string>> cgroup_v1_dirs;
  // --network proxy: the proxy's rules (log_fd set by run() before the
  // ladder). The sandbox's end of the socketpair its listeners cross and
  // the decisions are the Attempt's.
  std::optional<egress::EgressConfig> egress;
  bool require_listener = false;           // no plain-filter fall back: the handler is the promise (Landlock rung's spec)
  // `nsrun probe`: the whole launch, with the command's process exiting 0
  // where it would exec; no command runs.
  bool stop_before_exec = false;
  // A sandbox that dies before the command's exec: an error of the phase
  // "set-up" (nsrun's way), or, as bwrap does, its status passed on
  // silently as the command's (SetupDeath::as_status).
  bool setup_death_as_status = false;
};

// Which rungs a spec is made for. A launch whose --backend leaves the
// namespace rung out needs no mount list: prepare() then plans none
// (plan_without_mounts(), LaunchPlan::mounts_planned false), nor unpacks
// the namespace rung's programs (`seccomp`, `seccomp_notify`,
// `watch_writes` stay empty; `filter` is set, which is what the report
// reads of them), since the Landlock rung loads programs of its own. The
// rest of the spec, the namespace rung's limits and the refusals they make
// included, is as for every rung (tests/unit/spec_for_landlock_test.cpp,
// tests/unit/landlock_programs_test.cpp).
enum class SpecFor { every_rung, landlock_only };

Result<LaunchSpec> prepare(const Policy& policy, SpecFor rungs = SpecFor::every_rung);

// The facts plan_limits() needs on this host, for one rung.
LimitFacts limit_facts(const Policy& policy, bool namespaces_rung);
// One rung's limits (plan, cgroup, the notifying filter), decided from
// the Policy before the rung runs; apply_limits() puts them into a spec
// being made (with the tmpfs sizes).
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
// `programs`: the observation's programs unpacked (`notify`,
// `watch_writes`, and with them `notify_key` and `write_scope`), or only
// decided (`observe`) for a spec whose rung never runs them.
enum class RungPrograms { unpacked, none };
Result<RungLimits> rung_limits(const Policy& policy, FilterRung rung, RungPrograms programs = RungPrograms::unpacked);
void apply_limits(LaunchSpec& p, RungLimits limits);

// The last of the spec, before the ladder: the protect guard
// (seccomp/writes.hpp) on the namespace rung, armed when the launch's scan
// found protected paths that mounts hold (`held`). Nothing for a spec made
// for the Landlock rung alone (no mounts hold anything there; its rung
// spec replaces every field the guard sets).
Result<void> arm_protect_guard(LaunchSpec& p, const Policy& policy, std::vector<std::string> held);

// The candidate paths execvp would try for `name` under `path_var`.
std::vector<std::string> exec_candidates(const std::string& name, const char* path_var);

}  // namespace nsrun
