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

// The largest file copied; a larger one stays hidden whole.
inline constexpr std::size_t settings_copy_max = 256 * 1024;

}  // namespace nsrun
