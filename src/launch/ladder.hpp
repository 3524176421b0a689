// The fail-closed ladder: the namespace rung, then Landlock, then a refusal
// naming each rung and why. The real launch is the probe: nothing runs
// beforehand, and the command runs at most once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "launch/attempt.hpp"
#include "launch/spec.hpp"
#include "launch/protect_watch.hpp"
#include "launch/report.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// Stable reason codes (docs/ladder.md); they never change meaning.
namespace reason {
inline constexpr std::string_view userns_denied = "userns-denied";
inline constexpr std::string_view pidns_denied = "pidns-denied";
inline constexpr std::string_view mntns_denied = "mntns-denied";
inline constexpr std::string_view netns_denied = "netns-denied";
inline constexpr std::string_view ipcns_denied = "ipcns-denied";
inline constexpr std::string_view utsns_denied = "utsns-denied";
inline constexpr std::string_view cgroupns_denied = "cgroupns-denied";
inline constexpr std::string_view ns_denied = "ns-denied";
inline constexpr std::string_view idmap_denied = "idmap-denied";
inline constexpr std::string_view proc_masked = "proc-masked";
inline constexpr std::string_view landlock_missing = "landlock-missing";
inline constexpr std::string_view landlock_cannot_express = "landlock-cannot-express";
inline constexpr std::string_view overlay_unavailable = "overlay-unavailable";
inline constexpr std::string_view not_tried = "not-tried";
inline constexpr std::string_view failed = "failed";
}  // namespace reason

// Marks a clone refusal that still needs diagnose_clone() to say which
// namespace the host refused.
inline constexpr std::string_view clone_refused = "clone-refused";

// Pure. The reason code when a namespace-rung failure means "this host does
// not allow it" (a reason to move to the next rung), else empty: a bad path
// or any other failure is the user's to see, never a reason to move.
// `proc` is the resolved proc mode of the attempt.
std::string classify_namespace_failure(const Error& e, ProcMode proc);

// Pure, given `try_clone` (flags -> 0 or the errno of a throwaway clone):
// which namespace of `flags` the host refuses. Asks the user namespace
// alone first, then it together with each other namespace in turn.
std::string diagnose_clone(uint64_t flags, const std::function<int(uint64_t)>& try_clone);

// A throwaway clone with `flags` whose child exits at once: 0 or errno.
int try_clone(uint64_t flags);

// The way out of a masked /proc, for messages.
std::string_view proc_masked_hint();

struct LadderOutcome {
  int exit_code = 125;
  std::optional<Error> error;
  // When `error` is the refusal ("no sandbox available"): the namespace
  // rung's own failure behind it, for a front end that speaks of it in
  // its own words (bwrap's "Can't mount proc on /newroot/proc: ...").
  std::optional<Error> cause;
  // --network proxy: the decisions of the last rung's attempt.
  std::vector<egress::Decision> egress_decisions;
  // The plan the namespace rung ran when it was not the spec's (the home's
  // cache redirect, launch/home_fallback.hpp).
  std::optional<LaunchPlan> plan;
};

// Runs the command on the first usable rung allowed by policy.backend and
// fills `report` (rung, rungs, Landlock ABI and enforcement, phases).
// `protect`: the launch's scan of the protected paths, which the Landlock
// rung's refusal check reuses (landlock::assess()).
LadderOutcome run_ladder(const Policy& policy, const LaunchSpec& spec, LaunchReport& report,
                         const ProtectWatch* protect = nullptr);

// `nsrun probe [--json]`: each rung, usable or not, with the same codes,
// without running a command. Returns nsrun's exit status: 0 when a rung is
// usable, 1 when none is.
int probe_rungs(const Policy& policy, bool json);

}  // namespace nsrun
