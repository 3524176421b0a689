// How the Landlock rung keeps the protected paths (policy/protect.hpp) that
// exist in a writable root: Landlock rights only add up along a path, so a
// read-only .git/hooks inside a writable workspace cannot be a rule. The
// rung instead takes a snapshot of each such path before the command starts
// (type, mode, owner, content; a directory's whole tree; the directories on
// the way, held open) and, once every process of the command is dead, puts
// it back as it was: what the run changed, made or put in place of a
// protected path or of a directory on the way to one is renamed to a
// quarantine name beside it (nothing deleted), the original is brought back
// (a directory renamed away, found through the fd held since before the
// run) or written again from the snapshot. Every walk is by directory fd,
// through no symlink and never above the root (openat2 RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS).
//
// The window: during the run the protected paths may hold what the command
// put there. A host process that runs them meanwhile (the user's own git in
// the workspace, an editor opening it) obeys the command's version.
// docs/ladder.md, "Protected paths on this rung".
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>
#include <vector>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

struct ProtectedPathState;  // policy/protect.hpp

// Whether the Landlock rung keeps `st` by snapshot: each protected path
// that exists (or is sealed, or covered), and each missing directly in the
// root (.envrc, .vscode, ...: the snapshot says "absent", and what the run
// makes there is quarantined). Missing in or as .git: left to the git scan
// (policy/gitdirs.hpp), which quarantines the hooks and config of a
// repository the command made (`git init`), not the repository itself.
bool kept_by_snapshot(const ProtectedPathState& st);

// What `nsrun probe` and `nsrun explain` say of the mechanism: how the
// rung keeps the protected set, and what it cannot keep.
inline constexpr const char* snapshot_words =
    "snapshot and restore (taken before the command starts; after every process of the command is dead, what "
    "it changed, made or moved is put back, what it made is renamed to NAME.nsrun-quarantine-XXXXXXXX, each "
    "reported); not kept during the run: a host process that runs a protected path meanwhile (the user's own git, "
    "an editor opening the folder) obeys the command's version, and a nsrun killed with SIGKILL restores nothing";

// One file, directory, symlink or other node of the snapshot.
struct SnapNode {
  std::string rel;  // relative to the root
  unsigned type = 0;  // S_IFREG, S_IFDIR, S_IFLNK, other S_IF*; 0: absent
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  nlink_t nlink = 0;
  long long size = 0;
  struct statx_timestamp ctime{};
  std::string content{};  // a file's bytes, a symlink's target
  std::vector<SnapNode> children{};  // a directory's, by name
};

// One directory on the way from a root to a protected path, held open
// (O_PATH) since before the run.
struct SnapDir {
  std::string rel;
  dev_t dev = 0;
  ino_t ino = 0;
  Fd fd;
};

struct RootSnapshot {
  std::string root;
  Fd fd;  // O_PATH, opened before the run
  dev_t dev = 0;
  ino_t ino = 0;
  std::vector<SnapDir> dirs;     // shallowest first
  std::vector<SnapNode> kept;    // each protected path, or where its walk stopped (a symlink, a file, a missing name)
};

struct ProtectSnapshot {
  std::vector<RootSnapshot> roots;
  std::size_t bytes = 0;  // content held
  std::size_t nodes = 0;
};

// What the snapshot may hold: past these the launch is refused rather
// than a protected path left without its copy.
inline constexpr std::size_t snapshot_max_bytes = 32u << 20;
inline constexpr std::size_t snapshot_max_nodes = 20000;

// The snapshot of `paths` (root, path relative to it): the protected paths
// the scan found present (or sealed, or covered). An unreadable file, a
// directory that cannot be listed or a snapshot over its bounds is an
// error: nothing could put that path back.
Result<ProtectSnapshot> snapshot_protected(const std::vector<std::pair<std::string, std::string>>& paths);

// One thing the verification found and what it did.
struct Restored {
  std::string path;        // absolute
  std::string change;      // changed, created, removed, replaced, moved
  std::string action;      // restored, quarantined, moved-back, not-restored
  std::string renamed_to;  // the run's version, beside it ("" when none was kept)
  std::string detail;      // why not restored
};

// Verifies every node of `snap` against the host and puts it back. Called
// once every process of the command is dead. `token`: quarantine_token().
std::vector<Restored> restore_protected(const ProtectSnapshot& snap, const std::string& token);

// The same comparison restore_protected() makes, pure: whether a node
// that is there now (`now`, from statx without following) is the one the
// snapshot saw, unchanged. A directory compares its own identity only
// (its entries are looked at one by one); anything else also its ctime,
// which no unprivileged process can set back, and its link count.
bool unchanged(const SnapNode& before, const struct statx& now);

}  // namespace nsrun
