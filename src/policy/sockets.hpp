// The well-known host sockets nsrun hides by default.
// A pathname unix socket is a door out of any sandbox that shows it: the
// container engine's socket is a root shell, the D-Bus buses start and stop
// services, ssh-agent and gpg-agent sign as the user, X11 and Wayland read
// keystrokes and the screen. `--network none` does not close them: they are
// files, not network.
//
// The list depends on the caller's environment ($XDG_RUNTIME_DIR,
// $SSH_AUTH_SOCK, $HOME); building it is pure, so it is unit-tested with a
// given environment. The front end keeps those that exist and records the
// result in Policy::hidden_sockets; the plan reads only that.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "sys/error.hpp"

namespace nsrun {

struct SocketEnv {
  std::string xdg_runtime_dir;  // $XDG_RUNTIME_DIR
  std::string ssh_auth_sock;    // $SSH_AUTH_SOCK
  std::string home;             // $HOME
};

struct KnownSocket {
  std::string path;  // absolute; a directory is hidden whole
  bool dir = false;
  std::string what;  // for docs and explain: whose socket it is

  bool operator==(const KnownSocket&) const = default;
};

// The candidates, existing or not, in a fixed order. Variables that are
// empty or not absolute contribute nothing.
std::vector<KnownSocket> well_known_sockets(const SocketEnv& env);

// What a path is on the host, asked by the front end: nullopt when it does
// not exist; otherwise its canonical path and whether it is a directory.
struct FoundPath {
  std::string real;
  bool dir = false;
};
using PathLookup = std::function<std::optional<FoundPath>(const std::string&)>;

// The host's answer: realpath() and stat() (following symlinks).
std::optional<FoundPath> lookup_host_path(const std::string& path);

// The paths to hide, as Policy::hidden_sockets holds them: the candidates
// that exist (a file candidate must not be a directory, a directory one
// must be one), canonical, a directory with a trailing '/', without
// duplicates, in order, after `already` (from a policy file); minus every
// path in `allowed` (compared canonically, trailing '/' ignored).
std::vector<std::string> sockets_to_hide(const std::vector<KnownSocket>& candidates,
                                         const std::vector<std::string>& already,
                                         const std::vector<std::string>& allowed, const PathLookup& lookup);

// The homes whose default credentials are hidden: $HOME and the account's
// home from the password database (getpwuid_r of the real uid), each
// when absolute, without a trailing '/', once when they are the same.
// Both, because $HOME is the caller's to set: unset, `/` or `/tmp` would
// otherwise leave the real ~/.ssh readable. Empty: neither is known, and
// the front end refuses rather than hide nothing.
std::vector<std::string> credential_homes(std::string_view env_home, const std::optional<std::string>& account_home);

// The default credentials (policy/protect.hpp) to hide, as
// Policy::hidden_paths holds them: those under each of `homes` (unless
// `defaults` is off) that exist, canonical (a symlinked ~/.aws is hidden
// where it leads), a directory with a trailing '/'; minus every path in
// `allowed` and what is below one, compared canonically. An allowed path
// strictly inside a hidden directory is refused: the cover is the whole
// directory (allow the directory itself).
Result<std::vector<std::string>> credentials_to_hide(std::span<const std::string> homes, bool defaults,
                                                     const std::vector<std::string>& allowed,
                                                     const PathLookup& lookup);

}  // namespace nsrun
