// What a copy-on-write layer holds, against its lower directory, and how
// it is reviewed back: `nsrun changes` (a list, or a patch `git apply`
// accepts), `nsrun commit` (atomic per file, no symlink followed, host
// changes since the run started refused as conflicts) and `nsrun home
// diff`. overlayfs records a deletion as a whiteout (a 0:0 character
// device, or an empty file with user.overlay.whiteout) and a directory that
// replaced the lower one as opaque (user.overlay.opaque = "y"); a file
// copied up from the lower layer carries user.overlay.origin.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/gitconfig.hpp"
#include "sys/error.hpp"

namespace nsrun::layers {

struct Change {
  enum class Kind { added, modified, deleted, replaced };
  Kind kind = Kind::added;
  std::string path;   // relative to the layer's root
  bool dir = false;   // a directory: added / deleted / replaced as a whole tree
  bool operator==(const Change&) const = default;
};

// Walks `upper` (a directory fd) against `lower` (-1: nothing below).
Result<std::vector<Change>> collect(int upper, int lower);

// "A path", "M path", "D path", "R path" lines (directories end in '/');
// names quoted as git quotes them when they hold special bytes.
std::string list(const std::vector<Change>& changes);

// git's own bookkeeping among the changes: a git directory's object store
// (<dir>/.git/objects and below) and index (<dir>/.git/index). A `git
// commit` in the run adds hundreds of them; a reviewer wants the summary,
// the work tree's files listed. One per git directory.
struct GitInternals {
  std::string git_dir;     // ".git", "sub/.git"
  std::size_t entries = 0; // the changes it stands for
  uint64_t files = 0;      // regular files in the layer under them
  uint64_t bytes = 0;
};

// Takes the changes inside a git directory's object store or index out of
// `changes` and returns their summaries, in the order they first appear.
// Their files are counted through `upper` (no symlink followed).
std::vector<GitInternals> split_git_internals(int upper, std::vector<Change>& changes);

// "git objects: 143 files, 2.1 MB in .git (objects, index; 37 entries)".
std::string describe(const GitInternals& g);

// A git-style unified diff of the regular files and symlinks the changes
// touch; a file with a NUL byte as a git binary patch (layers/gitbin.hpp).
// Special files (devices, fifos) are named in a comment line instead (git
// apply skips it); directories have no text of their own.
Result<std::string> patch(int upper, int lower, const std::vector<Change>& changes);

// git's quoting of a path in a patch or a listing ("a b" stays bare, a
// newline, quote, backslash, control byte or byte >= 0x80 is quoted C-style).
std::string quote_path(std::string_view path);

struct CommitOptions {
  std::vector<std::string> paths;  // empty: everything; else these (relative) paths and what is below them
  bool force = false;              // apply conflicts too
  struct timespec start{};         // the run's start: a host file changed at or after it is a conflict
  // Whether a path (relative to the workspace) is protected: refused,
  // reported, nothing applied for it. HOOK(protected paths).
  std::function<bool(std::string_view)> is_protected;
  // The run is over (no sandbox has the layer mounted: run_over()): a
  // changed regular file may be moved out of the layer instead of copied.
  // Never while a sandbox runs on it, which could write on through a file
  // it holds open after the commit.
  bool move = false;
  // The top-level .git/config, protected as a file, is reviewed key by key
  // instead (review_git_config()): the keys that run nothing are written
  // to the host's file, the others refused and named.
  bool review_git_config = false;
};

// The review of the layer's .git/config against the host's.
struct GitConfigOutcome {
  ConfigReview review;   // review.error: the layer's file refused whole
  bool written = false;  // the host's file was rewritten with the keys applied
};

struct CommitOutcome {
  std::vector<Change> applied;
  std::vector<Change> conflicts;   // the host changed it since the run started
  std::vector<Change> refused;     // protected
  std::vector<std::pair<Change, Error>> failed;
  std::optional<GitConfigOutcome> git_config;  // a .git/config change was reviewed
};

// The layer's top-level .git/config (`upper`) reviewed against the host's
// (`lower`), both opened through no symlink; nullopt when the layer has
// none. A layer file that is not a regular file (a symlink, a fifo) or is
// larger than max_config_bytes is refused whole (review.error).
Result<std::optional<ConfigReview>> review_layer_git_config(int upper, int lower);

// Applies the changes in `upper` to the workspace `lower` (a directory fd),
// each file through a temporary name and a rename, and drops each applied
// one from `upper`, so `nsrun changes` lists what is left.
Result<CommitOutcome> commit(int upper, int lower, const CommitOptions& options);

}  // namespace nsrun::layers
