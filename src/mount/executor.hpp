// The child-side half of the mount plan: runs inside the new user and mount
// namespaces and turns each MountStep into system calls, then pivots.
#pragma once

#include <vector>

#include "mount/plan.hpp"
#include "sys/error.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

// Makes / private, assembles a tmpfs root from `steps`, pivots into it and
// detaches the old root. On return the process's / is the new root.
// Marks "mounts" and "pivot" on `timeline`.
Result<void> build_root(const std::vector<MountStep>& steps, Timeline& timeline);

// Whether build_root() will enter the new root by chroot rather than by
// pivot_root: "/" is an initramfs (or another tmpfs). A pivot moves every
// process whose root or working directory is the old root; a chroot moves
// only the caller. False when "/" cannot be examined (build_root then fails).
bool root_enters_by_chroot();

}  // namespace nsrun
