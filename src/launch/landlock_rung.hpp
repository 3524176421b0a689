// The Landlock rung: no namespaces; the command runs on the host's file
// system under a Landlock ruleset that keeps the mode's file-effect promise.
// nsrun forks once, waits (forwarding termination signals), kills whatever
// the command left behind and removes the private TMPDIR.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "landlock/ruleset.hpp"
#include "launch/attempt.hpp"
#include "launch/spec.hpp"
#include "launch/protect_watch.hpp"
#include "policy/policy.hpp"
#include "seccomp/filter.hpp"

namespace nsrun::landlock {

// The rung's launch spec, everything decided before fork from the Policy
// and the host (the ABI, the terminals): the ruleset, this rung's seccomp
// filter, or why the rung cannot be used. The launch (run()), `nsrun
// probe` and `nsrun explain --backend landlock` read only this, never the
// Policy.
struct Readiness {
  int abi = 0;          // 0: Landlock missing
  // The supervisor ends the sandbox from a Landlock signal scope (ABI 6):
  // kill(-1) reaches all of it at once. Without, one process at a time,
  // which a fork bomb outruns.
  bool signal_scope = false;
  std::string reason;   // stable code when unusable: landlock-missing, landlock-cannot-express, failed
  std::string detail;   // the error or the item behind the reason
  Ruleset ruleset;      // valid when reason is empty (tmpdir rule not yet added)
  FilterKey filter;     // this rung's filter (FilterRung::landlock) ...
  BpfProgram seccomp;   // ... compiled; loaded by the command last
  RungLimits limits;    // this rung's limits ...
  std::optional<Error> limits_error;  // ... or why one of them cannot be kept here
  std::string redirect; // a copy-on-write home's cache-redirect directory (src/layers/), or empty
  bool redirect_stated = false;  // --home cow was asked for: the fallback is said on stderr too
  // The protected paths present in the writable roots (root, path), which
  // no Landlock rule can keep read-only: run() snapshots them before the
  // command starts and restores them once it is dead
  // (launch/protect_restore.hpp).
  std::vector<std::pair<std::string, std::string>> snapshot_paths;
};

// Reads the kernel's ABI, plans the ruleset for `policy` and compiles the
// rung's filter, without touching the file system. Used by the ladder,
// `nsrun probe` and `nsrun explain`. `scanned`: the protected paths as
// the launch scanned them just before (launch/protect_watch.hpp), reused
// when they were scanned for the same writable roots and set; otherwise
// (or null) scanned again here.
Readiness assess(const Policy& policy, const ProtectWatch* scanned = nullptr);

// Runs the command of `spec` on this rung. `ready` must come from assess()
// with an empty reason. The rung's own spec (its limits, the redirected
// caches, the proxy's port) is a new one made from `spec` before the fork;
// neither is written after it: what the run learns is `a`'s.
LaunchOutcome run(const LaunchSpec& spec, Attempt& a, Readiness ready);

// The rung's spec, a new one made from the launch's (run() makes it before
// its fork): this rung's limits and observation (apply_limits(): every
// field of the namespace rung's replaced, its notifying program among
// them), the well-known caches pointed at a cow home's redirect directory,
// and --network proxy's environment retargeted to the proxy's port on the
// host (the connector answers connect(), so no plain-filter fall back).
// What the command loads here is this spec's `seccomp_notify`,
// `watch_writes` and `extra_seccomp`, and Readiness::seccomp; never the
// base's `seccomp`.
LaunchSpec rung_spec(const LaunchSpec& base, RungLimits limits, const std::string& redirect,
                     std::optional<uint16_t> proxy_port);

// The parent pid field of a /proc/<pid>/stat line, -1 when `stat` is not
// one. The command name before it may hold spaces and ')', and only the
// last ')' closes it.
pid_t parent_in_stat(std::string_view stat);

// ttyname() of each of fds 0-2 that is a terminal, without duplicates.
std::vector<std::string> terminals();

}  // namespace nsrun::landlock
