// The namespace rung's half of the protected paths: one
// MountStep::Op::protect, run in the new root once every other mount is in
// place. What to do is policy/protect.hpp's walk_protected(); this file
// only mounts. docs/hardening.md, "Protected paths", says why these mounts.
#pragma once

#include <string>

#include "mount/plan.hpp"
#include "policy/protect.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// The writable root the protect steps of one root share, opened once: each
// open by path is one more moment at which a name swapped on the host
// refuses the launch (fail closed, but a root with nine protected paths
// would otherwise be walked nine times).
struct ProtectRoot {
  std::string source;
  Fd top;
  ProtectWalker walker;  // the walks below `top`
};

// `root` is the new root (an fd of its top), `host` the host's root (for
// /dev/null), `last` the writable root the previous protect step opened.
// Nothing is made on the host: every mount is in this mount namespace,
// every mount point is an existing name or in a private tmpfs.
Result<void> protect_path(int root, int host, const MountStep& step, ProtectRoot& last);

}  // namespace nsrun
