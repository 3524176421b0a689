// Overlay work directories for a layer that many launches mount, one after
// another or at once (the copy-on-write home): a small pool of numbered
// slots, `work-0`, `work-1`, ..., each flock()ed by the launch that uses
// it, reused rather than made and removed per launch (a mkdir, a rename and
// a removal walk fewer on the launch's path; docs/bench.md, the home layer).
//
// Why this is safe (`work/work` below is the slot's `work` subdirectory,
// the one overlayfs makes and uses):
// - overlayfs must never have two mounts on one work directory (each
//   empties `work/work` when it mounts; with index=off the kernel only
//   warns). The lock is taken before the mount and held by nsrun until
//   its sandbox is gone (PID 1 drops its inherited copy after the mounts),
//   so a launch only ever takes a slot no live launch holds; a locked
//   slot is skipped, never waited for.
// - A launch killed at any moment (nsrun and its PID 1) releases its lock
//   with its last descriptor: the slot is free for the next launch, and
//   the kernel empties its `work/work` at the next mount. (Between a killed
//   nsrun's death and its PID 1's, a new launch may take the slot while the
//   dying overlay exists: a copy-up in flight in the dying sandbox can then
//   fail; the kernel's temporary names come from one global counter, so
//   the new mount is not affected. docs/hardening.md.)
// - What the kernel cannot empty (it cleans one level of directories
//   below `work/work`; anything deeper makes it mount the layer read-only)
//   is removed first: a slot whose `work/work` has a subdirectory is
//   emptied before use (never the case after a clean unmount).
// - Nothing accumulates: slots past the kept ones (more launches at once
//   than kept_work_slots) are removed by their launch after the run, and
//   leftovers (a killed launch's overflow slot, the per-launch work
//   directories of older nsrun versions) go when a slot is next made.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::layers {

// The slots kept between launches; a launch beyond that many at once gets
// one of its own, removed after it.
inline constexpr unsigned kept_work_slots = 8;

// Pure. "work-<n>" for slot n.
std::string work_slot_name(unsigned index);
// Pure. The slot number of a slot name ("work-0", "work-17"; no sign, no
// leading zero), nullopt for any other name.
std::optional<unsigned> work_slot_index(std::string_view name);

struct WorkSlot {
  Fd lock;  // the slot directory, flock()ed (LOCK_EX) while the sandbox lives
  std::string name;
  unsigned index = 0;
  bool kept() const { return index < kept_work_slots; }
};

// Takes the lowest free slot in the layer directory `layer` (an fd of it;
// `shown` names it in errors), making it when missing (mode 0700).
Result<WorkSlot> take_work_slot(int layer, const std::string& shown);

// After the run: an overflow slot is removed (under its lock); a kept
// one is only unlocked.
void release_work_slot(int layer, WorkSlot& slot, const std::string& shown);

}  // namespace nsrun::layers
