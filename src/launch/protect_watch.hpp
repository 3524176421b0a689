// What nsrun can see of the protected paths around a run: how
// each was kept, and which missing one that direct mode does not keep
// exists afterwards; and, after the run, the git material made or changed
// anywhere in a writable root, quarantined (policy/gitdirs.hpp). One call
// before the ladder, one after.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/report.hpp"
#include "policy/policy.hpp"
#include "policy/protect.hpp"

namespace nsrun {

struct ProtectWatch {
  std::vector<ProtectedPathState> before;
  // What `before` was scanned for (writable_roots(), protected_paths()):
  // a scan of a Policy with the same two is the same walk, so the Landlock
  // rung's refusal check takes `before` instead of walking again
  // (landlock::assess()).
  std::vector<std::string> roots;
  std::vector<std::string> set;
  // The git scan after the run, in `git_roots`: the writable roots but a
  // copy-on-write workspace (`nsrun commit` refuses what is in its layer),
  // none when the set has no .git/config (--protect-defaults none,
  // --unprotect .git/config); for each, from `git_since` on.
  std::vector<std::string> git_roots;
  std::vector<struct timespec> git_since;
  std::string home;
};

ProtectWatch watch_protected(const Policy& policy);

// The absolute paths the namespace rung makes mount points for the
// protected set, from the scan: each path kept read-only or covered, and
// each sealed directory (the protect guard's WriteScope::held).
std::vector<std::string> held_mounts(const ProtectWatch& watch);

// Fills report.protected_paths and report.hidden_credentials; prints one
// line on stderr for each path not kept that the run left behind
// (`nsrun: protected path P: created during the run ...`), and one for
// each piece of git material the run made or changed, renamed to a
// quarantine name (`nsrun: git configuration P: ...`), or each directory
// the git scan could not look into. Called once every process of the
// command is dead.
// `failure`: the launch's error, if any; the git scan is skipped when it
// says the command never started (the launch refused before it), where
// nothing of the command's can be found and a refused root (a symlink
// swapped in) would only be said twice.
void report_protected(const ProtectWatch& watch, const Policy& policy, LaunchReport& report,
                      const std::optional<Error>& failure = std::nullopt);

}  // namespace nsrun
