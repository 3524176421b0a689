// The launch plan: Policy -> the exact, ordered intent of every system call
// the namespace rung will make. Building it makes no system call, so it is
// unit-tested without privileges and printed by `nsrun explain`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "sys/error.hpp"
#include "sys/flags.hpp"  // attr::

namespace nsrun {

struct MountStep {
  enum class Op {
    bind,        // clone the tree at `source` (recursive), attach on `dest`
    tmpfs,       // a new tmpfs on `dest`
    proc,        // a new procfs on `dest`
    devpts,      // a new devpts instance on `dest`
    mqueue,      // a new mqueue filesystem on `dest`
    set_attr,    // set `attrs` on the mount tree at `dest` (recursive)
    mkdir,       // create directory `dest`
    symlink,     // create symlink `dest` -> `source`
    write_file,  // create file `dest` holding `data`
    chmod,       // chmod `dest` to `mode`
    overlay,     // overlayfs on `dest`: `layers` (uppermost first), upper `source`, `workdir`
    protect,     // keep `data` (a protected path relative to the writable root `source`) read-only and
                 // uncreatable, as policy/protect.hpp decides (walk_protected)
  };
  Op op = Op::bind;
  std::string source;              // host path, or for `source_in_root` a path in the new root
  std::string dest;                // path in the new root
  bool source_in_root = false;     // the source lives in the new root (e.g. /proc/sys)
  bool optional = false;           // skip when the source does not exist
  bool dest_is_file = false;       // mount point must be a file, not a directory
  uint64_t attrs = 0;              // attr:: bits to set on the new mount
  uint32_t mode = 0755;            // for tmpfs roots, created dirs and files
  uint64_t size = 0;               // tmpfs size in bytes, 0: the kernel's default
  std::string options;             // extra filesystem options (devpts, proc)
  std::string data;                // for write_file
  int source_fd = -1;              // bind: an inherited fd to clone instead of `source`
  uint32_t parent_mode = 0755;     // for missing parent directories of `dest`
  std::vector<std::string> layers; // overlay: host directories, uppermost first
  std::string workdir;             // overlay: host work directory beside the upper `source`
  bool private_upper = false;      // overlay: upper and work on a private tmpfs (writes vanish)
  bool cover = false;              // a cover over an existing path (a hidden socket): never made; skipped when
                                   // the path is gone or out of the sandbox's reach (EACCES)
  // bind / hide: `source` (on the host) and `dest` (in the new root) are
  // resolved through no symlink, and a bind of a path onto itself must find
  // the very object it cloned (the native protections; docs/hardening.md).
  bool no_symlinks = false;
  // bind of a host path onto the same path, where the new root shows the
  // host's own tree (the nearest earlier mount at or above `dest` is such a
  // bind too): what the new root finds at `dest` must be the object cloned
  // from `source`, or a writer renamed or swapped it in between.
  bool host_view = false;
  // bind: the source must be a regular file with one link (a file shown
  // inside a hidden directory: another name of it could be a hidden key).
  bool one_link = false;

  bool operator==(const MountStep&) const = default;
};

struct IdMapping {
  uint32_t inside = 0;
  uint32_t outside = 0;
  bool operator==(const IdMapping&) const = default;
};

// What the plan needs to know about the caller. Gathered before clone by the
// launcher; given literally in tests.
struct HostFacts {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string cwd;
};

struct LaunchPlan {
  uint64_t clone_flags = 0;           // CLONE_NEW* bits
  bool id_maps = true;                // write uid_map / gid_map (a user namespace was made)
  IdMapping uid_map;
  IdMapping gid_map;
  std::string hostname;               // set when a UTS namespace is made
  std::vector<MountStep> mounts;      // in order, relative to the new root
  bool reaper = true;                 // PID 1 is nsrun's reaper, the command PID 2
  std::string chdir;                  // working directory inside
  bool chdir_required = false;        // --chdir given: its absence is an error
  // The current directory missing inside: bwrap's dialect runs in / (as
  // bwrap does); the native one refuses, since a command run elsewhere
  // than its caller thinks can write in the wrong place.
  bool chdir_fallback = true;
  ProcMode proc = ProcMode::fresh;    // resolved: fresh, host_bind or none
  // false: `mounts` was never planned (plan_without_mounts()); only a
  // launch the namespace rung cannot run has such a plan.
  bool mounts_planned = true;
};

// Policy (validated) + host facts -> plan. Pure.
Result<LaunchPlan> make_plan(const Policy& policy, const HostFacts& host);
// make_plan() but the mount list: every other field as make_plan() sets
// it (tests/unit/landlock_spec_test.cpp compares the two), `mounts` empty
// and `mounts_planned` false. What a launch only the Landlock rung may run
// reads of the plan: the working directory, the reaper, the clone flags,
// /proc's mode for the report.
LaunchPlan plan_without_mounts(const Policy& policy, const HostFacts& host);

// Drops a bind or hide that an identical later one covers while nothing in
// between can see it: the two are adjacent, or every step between is a
// no_symlinks bind or hide on a path that is neither the same as, above nor
// below its destination. The kernel walks a stack of mounts on one
// directory at every lookup, attach and in-root check, so N mounts on one
// path cost N^2; after this, repeating an option costs nothing. Linear (a
// hash set of destinations, and a map only when one repeats). Part of
// make_plan(); exposed for the unit tests.
void collapse_duplicates(std::vector<MountStep>& steps);

// Sets MountStep::host_view on each host path bound onto itself where the
// nearest earlier mount at or above its destination is such a bind too.
// Part of make_plan(); exposed for the unit tests.
void mark_host_views(std::vector<MountStep>& steps);

// An absolute path whose text is its only spelling: no empty, "." or ".."
// component, no trailing slash. Only such paths are compared as text.
// Part of make_plan(); exposed for the unit tests.
bool plain_path(std::string_view path);

// Whether the source of a bind may be the host's root directory on its
// root mount, which a root stacked on "/" cannot take as a bind's source
// (the executor then asks the source's identity, one statx, and refuses or
// replaces the root). `followed_link`: the source's lookup went through a
// symlink. Not when the source is:
// - in the new root: it holds only mounts nsrun made (clones, new
//   filesystems), and the host's root mount is attached nowhere but at the
//   top of the namespace;
// - a plain path (plain_path()) other than "/" reached through no symlink:
//   it descends from the root by name only, no directory is its own
//   descendant, and another mount of "/" (a bind of it elsewhere) is
//   another mount.
// Pure.
bool may_name_host_root(const MountStep& step, bool followed_link);

// A bind whose source is looked up in the new root at its own destination
// (/proc/sys onto itself): the lookup of the source is the lookup of the
// destination, and nothing is mounted between the two, so the executor
// attaches the clone on the fd the source was found by. Pure.
bool binds_onto_own_source(const MountStep& step);

// Human-readable rendering for `nsrun explain`.
std::string describe(const LaunchPlan& plan);
std::string describe(const MountStep& step);

}  // namespace nsrun
