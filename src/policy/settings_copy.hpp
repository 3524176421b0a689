// Some default credentials are settings files that hold a secret among
// ordinary settings (~/.npmrc: `fund=false` beside `_authToken=`). Hidden
// whole, the tool inside behaves differently with no hint; the namespace
// rung can instead show a copy with every line that could carry a secret
// left out. What is kept is decided here, from the text alone.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/gitconfig.hpp"

namespace nsrun {

// The files that get a copy, by their canonical name's last component.
bool has_settings_copy(std::string_view file_name);

struct SettingsCopyText {
  std::string text;         // what the command reads instead of the file
  std::size_t dropped = 0;  // lines left out
};

// The copy of `text`, a file named `file_name` (".npmrc", ".pypirc");
// nullopt for any other name. Fails closed: a line kept is one whose key
// is known to carry no secret (.pypirc: index-servers, repository) or, in
// .npmrc, one whose key names nothing like a credential and whose value
// holds no URL with a user or password; comments, section contents of
// .npmrc, lines without `=` and lines with a NUL or a CR are left out.
std::optional<SettingsCopyText> settings_copy(std::string_view file_name, std::string_view text);

// git's own config files (~/.gitconfig, ~/.config/git/config,
// $XDG_CONFIG_HOME/git/config) are settings first: they are hidden only
// when an entry could hold a secret, and then the copy keeps every other
// entry, so git behaves the same.
//
// Why `e` could carry a secret (docs/hardening.md lists each), "" when
// it cannot: a credential.* entry; include.* and includeIf.* (they load
// another file, unfiltered); a key whose name holds token, pass, secret,
// auth, cred, cookie, key (but user.signingKey, a key's id or public
// half), user, header, cert or otp; a value or subsection with a URL that
// has a password, or a user on any scheme but ssh (https://TOKEN@host);
// `user:pass@host`; a value naming a password, token, secret,
// Authorization, Bearer or a known token prefix (ghp_, glpat-, ...).
std::string git_config_secret(const ConfigEntry& e);

// The copy of a git config file's `text`: nullopt when no entry could
// hold a secret (the file is shown as it is). Otherwise the entries kept,
// written back canonically (serialize(): git reads exactly what was
// judged, whatever this parser and git's disagree on), under a comment.
// A file the parser refuses (a NUL byte, a line it cannot read plainly,
// more than max_config_bytes) keeps nothing.
std::optional<SettingsCopyText> git_config_copy(std::string_view text);

// The files a git config's include.path and includeIf.*.path name, as
// written (git reads "~/" as $HOME, a relative one beside the file).
// They are left out of the copy, and the front end hides each whole
// (and what each of them includes), so none is read by another path.
std::vector<std::string> git_config_includes(std::string_view text);

// The largest file copied; a larger one stays hidden whole.
inline constexpr std::size_t settings_copy_max = 256 * 1024;

}  // namespace nsrun
