// --watch-writes: where the command may write, as a pure
// question about a path. Built from the Policy for one rung, so the
// watch's "outside" is the rung's own: the namespace rung's mounts (the
// last mount that covers a path decides, as the kernel's mount tree does),
// or the Landlock rung's writable roots (rights add up along a path) and
// its private TMPDIR. Protected sub-paths of a writable root
// count as outside: the namespace rung keeps them read-only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

enum class WritePlace {
  writable,    // a writable root, the private /tmp or TMPDIR, a --tmpfs, a writable bind
  outside,     // the read-only host, or no mount at all
  protected_,  // a protected path inside a writable root
  kernel,      // /dev and /proc: devices and process files (/dev/null, /proc/self/fd/1), not host files
};
std::string_view name(WritePlace);

struct WriteScope {
  bool landlock = false;
  // Namespace rung: mount destinations in order, and whether each makes
  // the tree below it writable (true), read-only (false).
  std::vector<std::pair<std::string, bool>> mounts;
  // Landlock rung: the writable binds (any one of them grants).
  std::vector<std::string> writable;
  std::vector<std::string> roots;           // writable roots, for the protected check
  std::vector<std::string> protected_set;   // protected_paths(policy)
  std::string tmpdir;                       // Landlock: the private TMPDIR, once known
  // --watch-writes: every attempt outside is recorded. false: the protect
  // guard alone (seccomp/writes.hpp), which records only what it refused.
  bool watch_all = true;
  // The guard: the absolute paths that are mount points in the sandbox
  // because a protected path was held there at launch (the path bound
  // read-only, a sealed directory; held_mounts()).
  std::vector<std::string> held;
};

WriteScope write_scope(const Policy& policy, bool landlock_rung);

// `path`: absolute and lexically normal, as the command sees it.
WritePlace classify(const WriteScope& scope, std::string_view path);

// For a `path` classify() calls protected: the entry of the protected set
// it is or lies below, as --unprotect names it (".git/config"); "" for
// any other path.
std::string protected_entry(const WriteScope& scope, std::string_view path);

}  // namespace nsrun
