// Settings files for people (docs/settings.md): a short JSON object
// whose keys are native options by another spelling. Each key names one
// entry of the option table (src/cli/options.cpp) and is applied through
// that entry's setter, so a key means exactly what its option means.
//
// Two files, applied before the command line (which wins): the user's
// ($XDG_CONFIG_HOME/nsrun/settings.json, or --settings FILE) and the
// workspace's (<workspace>/.nsrun.json). The workspace's file is one the
// sandboxed command can write, read on the next launch: it may only
// narrow what the user's file and nsrun's defaults allow, so whatever the
// command writes there cannot widen a later run.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/options.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// The name of the workspace's file, and the most either file may hold.
inline constexpr std::string_view workspace_settings_name = ".nsrun.json";
inline constexpr std::size_t settings_max_bytes = 64 * 1024;

// What a workspace file's key may do.
enum class Narrowing {
  always,    // it only adds a restriction (--ro, --hide, --deny-host)
  never,     // it adds a permission (--writable, --allow-host): refused there
  measured,  // a value on a scale (--mode, --limit-memory): no higher than before
};

struct SettingKey {
  std::string_view path;    // "network.allow"
  std::string_view option;  // "--allow-host"
  enum class Shape { one, list, map, flag } shape = Shape::one;
  // Shape::flag: the boolean value that applies the option (the other
  // one is nsrun's default and applies nothing).
  bool when = true;
  bool paths = false;  // values are paths: a leading ~ is the home
  Narrowing narrowing = Narrowing::never;
  // Narrowing::measured: the Policy's position on the key's scale; a
  // workspace file may not raise it.
  long long (*measure)(const Policy&) = nullptr;
  std::string_view help;  // one line for docs and messages
};

std::span<const SettingKey> settings_keys();

struct SettingsFile {
  std::string path;        // as named in messages
  std::string text;
  bool narrow_only = false;  // the workspace's file
};

// What ~, ${HOME} and ${WORKSPACE} stand for.
struct SettingsVars {
  std::string home;       // empty: ~ and ${HOME} are refused
  std::string workspace;  // empty: ${WORKSPACE} is refused
};

// Applies `file` onto `p` through the option table, appending what it did
// to `sources`. Errors are usage errors whose message is
// "<file>: <key.path>: <why>"; nothing of a refused file is applied.
Result<void> apply_settings(const SettingsFile& file, const SettingsVars& vars, NativeParse& state, Policy& p,
                            std::vector<SettingSource>& sources);

// Reads a settings file for apply_settings. `workspace_file`: through no
// symlink anywhere in the path (RESOLVE_NO_SYMLINKS), a regular file with
// one link; otherwise the user's own (a symlink into a dotfiles tree is
// followed). Both at most settings_max_bytes, never blocking on a FIFO.
// nullopt: there is no such file.
Result<std::optional<std::string>> read_settings_text(const std::string& path, bool workspace_file);

// `nsrun policy --explain-source`: one line per source, in the order
// applied (later wins; lists add up).
std::string explain_sources(std::span<const SettingSource> sources);

}  // namespace nsrun
