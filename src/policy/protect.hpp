// Protected paths inside writable roots and the credentials
// hidden by default: the one place that says which paths, why,
// and whether a given path is one of them.
//
// A protected path is relative to a writable root (the workspace, each
// --writable DIR): files that run code later, outside any sandbox, the
// next time the user runs git, enters the directory or opens an editor or
// an agent there. The command may read them; it may not write, replace,
// remove or create them. `nsrun commit` (the copy-on-write workspace)
// refuses them through match_protected().
//
// A hidden credential is a path under $HOME that holds a secret the command
// has no business reading (registry tokens, keys, cloud logins). Reads fail
// (EACCES or ENOENT); nothing is made on the host for it.
//
// Everything here but scan_protected() and the lookups is pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

struct DefaultPath {
  std::string_view path;  // relative to a writable root, or (credentials) to $HOME
  std::string_view why;   // for docs, --help and explain
};

// The default protected set, in a fixed order (docs/hardening.md).
std::span<const DefaultPath> default_protected();

// The default hidden credentials, relative to $HOME (docs/hardening.md).
std::span<const DefaultPath> default_credentials();

// The protected set a Policy asks for: the defaults (unless
// protect_defaults is off), then Policy::protect, minus Policy::unprotect;
// normalised (no "." or empty components, no trailing '/'), without
// duplicates, in order. Absolute --protect paths are kept absolute (they
// apply to the writable root they are in, see protected_in_root()).
std::vector<std::string> protected_paths(const Policy& policy);

// Normalises a relative path ("./.git//hooks/" -> ".git/hooks"); nullopt
// for one that is empty, absolute or has a ".." component.
std::optional<std::string> normal_relative(std::string_view path);

enum class ProtectMatch {
  none,         // not protected
  protected_,   // a protected path, or below one: never written, replaced, removed or created
  ancestor,     // a directory on the way to one (".git" for ".git/hooks"): may exist as a directory, must not
                // be removed, renamed, replaced or made a symlink or a file
};

// Names compared with ASCII case folded, as every match here compares them
// (a case-insensitive file system reaches .git as .GIT).
bool same_folded(std::string_view a, std::string_view b);

// Whether `rel` (a path relative to a writable root, normalised as above;
// "" is the root itself) is protected by `set` (as protected_paths() gives,
// relative entries only), names compared without ASCII case (a
// case-insensitive workspace reaches .git as .GIT). Pure; this is what
// `nsrun commit` asks per file.
ProtectMatch match_protected(std::string_view rel, std::span<const std::string> set);

// The protected paths of one writable root, relative to it: every relative
// entry of `set`, and the absolute ones that lie strictly inside `root`.
std::vector<std::string> protected_in_root(const std::string& root, std::span<const std::string> set);

// What the sandbox holds read-only in one writable root: protected_in_root()
// but, in the copy-on-write workspace, .git/config: its changes stay in
// the run's layer and `nsrun commit` reviews them key by key
// (policy/gitconfig.hpp), so git config and git remote add work inside.
std::vector<std::string> held_in_root(const Policy& policy, const std::string& root, std::span<const std::string> set);

// --protect, --unprotect, --allow-read and hidden_paths: relative paths
// without "..", absolute ones without ".."; an absolute --protect must lie
// strictly inside a writable root (workspace-write mode). Called by validate().
Result<void> validate_protection(const Policy& policy);

// How direct mode keeps a protected path, decided from what the host holds
// at the path (resolved from the root through no symlink).
enum class ProtectState {
  read_only,   // it exists (file or directory): bound read-only on itself
  covered,     // it, or a directory on the way, is a symlink or not a directory: covered, never followed
  sealed,      // missing below an existing directory strictly inside the root: that directory is shown
               // sealed (its entries are the real ones, no new name can be made in it)
  not_kept,    // missing directly in the root (or in .git): direct mode cannot stop its creation
               // without a placeholder on the host; use the copy-on-write workspace
  unreachable, // the root itself is missing or not a directory
};
std::string_view name(ProtectState);

// Where the walk from the root stopped: the state, and (sealed) the
// directory to seal, relative to the root.
struct ProtectDecision {
  ProtectState state = ProtectState::not_kept;
  std::string sealed_dir;  // for `sealed`
};

// The rule for a missing path whose nearest existing directory is `dir`
// (relative to the root, "" the root itself). Shared by the executor and
// scan_protected(), so what explain says is what the sandbox does.
ProtectDecision missing_below(std::string_view dir);

// One walk from a writable root to a protected path, shared by the
// executor (which mounts) and scan_protected() (which only looks): one
// component at a time, through no symlink (a symlink met is the end of the
// walk, opened as the link itself) and never above `root`. For each
// existing directory on the way `pin(parent, name, dir)` is called before
// the walk goes into it; it may replace `dir` (the executor binds it on
// itself, so it can no longer be renamed or removed, and reopens it).
struct ProtectWalk {
  ProtectDecision decision;
  Fd at;             // read_only: the path; covered: the link or non-directory met; sealed: the directory
  bool link = false; // covered: `at` is a symlink
  bool missing_at_root = false;  // the first component itself is missing
};
struct DirPinner {
  virtual Result<void> pin(int parent, const std::string& name, Fd& dir) = 0;
  virtual ~DirPinner() = default;
};
// `pinner` may be null (scan_protected() only looks).
Result<ProtectWalk> walk_protected(int root, std::string_view rel, DirPinner* pinner);

// The walks for the protected paths of one writable root in one pass (the
// executor's protect steps, scan_protected()). A first component found
// missing at the root is not looked up again for the other paths below it
// (.git/hooks, .git/config, .git/commondir ... when there is no .git):
// they get the answer its first walk got, missing_below(""), as if all the
// walks had run at that one instant. Nothing the pass does creates a name
// at the root (the executor mounts only on what it found, and seals only
// directories below the root), so the answer is the one a new walk would
// give unless the host changes the root meanwhile, which a new walk a
// moment later would miss as well. One walker per root.
//
// A walk without a pinner (a scan) also keeps the directory it went into
// at the root (.git), and the pass's later walks below it go on from that
// fd instead of opening it again. The executor's
// walks (with a pinner) do not share directories.
class ProtectWalker {
 public:
  Result<ProtectWalk> walk(int root, std::string_view rel, DirPinner* pinner);

 private:
  std::vector<std::string> missing_at_root_;
  std::vector<std::pair<std::string, Fd>> opened_at_root_;
};

struct ProtectedPathState {
  std::string root;  // the writable root
  std::string path;  // relative to it
  ProtectDecision decision;
};

// Looks at the host (openat2, no symlink followed, never leaving the root)
// for each protected path of each writable root of `policy`
// (workspace-write mode only; nothing otherwise).
std::vector<ProtectedPathState> scan_protected(const Policy& policy);
// The same scan for `roots` and `set` the caller has already computed
// (writable_roots(policy), protected_paths(policy)): a launch keeps both
// beside the scan and computes each once.
std::vector<ProtectedPathState> scan_protected(const Policy& policy, const std::vector<std::string>& roots,
                                               const std::vector<std::string>& set);

// Looks again at the entries of `before` (a scan_protected() answer) that
// were not kept, and only at those: the others are held by mounts (or
// refused, on the Landlock rung) and cannot have become "created". The
// answer has one entry per entry of `before`, in order; an entry not
// looked at again is copied as it was.
std::vector<ProtectedPathState> rescan_not_kept(const std::vector<ProtectedPathState>& before);

// The writable roots a Policy's preset makes (workspace-write mode): the
// workspace and each --writable DIR.
std::vector<std::string> writable_roots(const Policy& policy);

// The paths git runs code from in each writable root beyond the default
// set (host lookups, through no symlink, never above a root): the hooks and
// config of the git directory a `.git` file names (git init
// --separate-git-dir), of an existing commondir's target, of each submodule
// (<gitdir>/modules/...) and linked worktree (<gitdir>/worktrees/...), and
// core.hooksPath (from the repository's config and the user's, ~/.gitconfig
// and $XDG_CONFIG_HOME/git/config) where it lies inside the root, and each
// file those configs include (include.path, includeIf.<cond>.path, nested
// to git's depth of 10) inside the root. Absolute, each strictly inside its
// root, for Policy::protect. A config git would read that nsrun cannot
// read whole (over 1 MiB, or a read error) is an error: its includes
// would go unprotected.
Result<std::vector<std::string>> git_protected_paths(const std::vector<std::string>& roots, const std::string& home);

// credentials_to_hide(), the host lookup of the defaults, is beside
// sockets_to_hide() in policy/sockets.hpp.

}  // namespace nsrun
