// Git material anywhere in a writable root: what a later git (or an editor
// that scans for nested repositories) on the host would obey, beyond the
// protected set of policy/protect.hpp, which holds the top-level .git and
// the git directories that exist at launch.
//
// Direct mode cannot stop a command from making a new repository in a
// subdirectory (`git init vendor/lib`), a submodule's git directory
// (.git/modules/NAME), a `.git` file or a linked worktree: there is no name
// to mount on before it exists. So after the run, when every process of the
// command is dead, nsrun walks each writable root and renames each piece of
// git configuration, hook or gitdir indirection that was made or changed
// during the run (ctime at or after the launch: the command cannot set a
// ctime back) to a quarantine name beside it, and reports it. `nsrun commit`
// refuses the same material (git_armed_path()). docs/hardening.md, "Git
// directories anywhere in a writable root".
#pragma once

#include <ctime>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sys/error.hpp"

namespace nsrun {

// ".git" with ASCII case folded (a case-insensitive file system reaches
// .git as .GIT, as match_protected() treats it).
bool is_git_name(std::string_view name);

// The entries of a git directory that decide what git runs: config,
// config.worktree (once extensions.worktreeConfig), commondir (config and
// hooks come from the directory it names), gitdir (a linked worktree's way
// back to its .git file), hooks, info/attributes (filter and diff drivers).
// Pure: `rel` relative to a git directory, normalised; true for these and
// anything below them.
bool armed_in_gitdir(std::string_view rel);

// Pure; what `nsrun commit` refuses beyond the protected set. `rel` is
// relative to the workspace, normalised. True when it is, or lies below:
// - a `.git` entry below the top level (a nested repository's or a
//   submodule's .git, directory, file or link): the whole nested git
//   directory, objects and refs too, since a tree added as a whole is
//   applied as a whole;
// - in a git directory below the top-level .git's modules/ or worktrees/
//   (NAME may hold '/'), a component past the first NAME component that
//   armed_in_gitdir() names (config, hooks, ...): objects, refs, the index
//   and logs of an existing submodule stay committable.
bool git_armed_path(std::string_view rel);

// One iterative walk of a directory tree, shared by the host scan and the
// commit's walk of the layer. No symlink is followed, no mount point is
// crossed (RESOLVE_NO_XDEV: reported, not entered), the tree is never left
// (RESOLVE_BENEATH); memory and fds stay bounded whatever the depth (a
// directory deeper than the first levels is opened from the deepest open
// ancestor by its relative path; one longer than PATH_MAX is reported: no
// program can use it as a working directory).
struct TreeVisit {
  // Each entry (not "." or ".."); `type` is a DT_* value, DT_UNKNOWN
  // resolved with fstatat. Returns whether to go into it (directories only).
  std::function<bool(int dir, const std::string& rel_dir, const std::string& name, unsigned char type)> entry;
  // A directory the walk could not read or enter: a mount point, EACCES,
  // a path too long, the budget spent. `rel` relative to the tree.
  std::function<void(const std::string& rel, const std::string& why)> unscanned;
  std::size_t max_dirs = 1'000'000;
};
void walk_tree(int root, const TreeVisit& visit);

// The paths in the tree under `dir` (a directory fd: the copy-on-write
// layer) that git_armed_path() names, each without what lies below it, and
// each directory the walk could not read, with why (fail closed: to be
// refused as well).
struct GitArmed {
  std::vector<std::string> armed;
  std::vector<std::pair<std::string, std::string>> unread;  // path, why
};
GitArmed find_git_armed(int dir);

struct GitFinding {
  std::string root;      // the writable root
  std::string rel;       // relative to it
  bool unscanned = false;  // a directory the scan could not look into (`why`)
  std::string why;
  bool created = false;    // its birth time is at or after the launch (else: changed, or the file system has none)
  std::string renamed_to;  // the quarantine name it was given, beside it; "" when not renamed
  std::optional<Error> failed;  // the rename failed: it is still armed
};

// The scan after the run: in each writable root, every `.git` entry (any
// depth, case folded) made or changed at or after `since`, when it is not
// a directory, and in every git directory (those, the top-level one, their
// modules/ and worktrees/) each armed entry (armed_in_gitdir(), a hook
// other than *.sample) made or changed since then; and, for each `.git`,
// what git_protected_paths() names for it (core.hooksPath, included
// configs, a hook manager's files) when made or changed since then. Paths
// `held` names for the root (relative; a mount held them read-only for the
// whole run, match_protected()) are skipped. Directories not entered are
// findings with `unscanned`.
std::vector<GitFinding> scan_git_armed(const std::vector<std::string>& roots, const struct timespec& since,
                                       const std::function<std::vector<std::string>(const std::string&)>& held,
                                       const std::string& home);

// Renames each armed finding to "<name>.nsrun-quarantine-<token>" in its
// own directory (renameat2 RENAME_NOREPLACE, from directory fds opened
// through no symlink from the root): nothing is deleted, nothing is made,
// `mv` back restores it. A directory the command left without write
// permission for its owner gets it for the rename and its mode back after.
void quarantine(std::vector<GitFinding>& findings, std::string_view token);

// 8 random hex digits for quarantine(): a name the command could not have
// made in advance.
std::string quarantine_token();

}  // namespace nsrun
