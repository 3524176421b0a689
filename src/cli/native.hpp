// The native front end: nsrun's own command line -> Policy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"
#include "policy/sockets.hpp"
#include "sys/error.hpp"


namespace nsrun {

// Where one value of the Policy came from, for `nsrun policy
// --explain-source`: a settings file's key (cli/settings.hpp), or the
// command line.
struct SettingSource {
  std::string origin;  // a file's path, or "command line"
  std::string key;     // "network.allow[0]"; empty for the command line
  std::string option;  // the option it was applied as
  std::vector<std::string> values;
};

struct Invocation {
  enum class Action { run, policy, explain, probe, help, version };
  Action action = Action::run;
  Policy policy;
  bool json = false;  // nsrun probe --json
  // For each of policy.mounts, the option that added it as the user typed
  // it (`--ro`, which is a ro_bind), so that validate() names that option;
  // empty: from a --policy file, named by its kind.
  std::vector<std::string> mount_options;
  // Where each value came from, in the order applied: the settings files'
  // keys, then the command line (nsrun policy --explain-source).
  std::vector<SettingSource> sources;
  bool explain_source = false;  // nsrun policy --explain-source
  // --idle-timeout: `nsrun session start` only (docs/sessions.md).
  std::optional<uint64_t> idle_timeout_ms;
};

// What the front end reads from the caller's world, passed in so parsing
// stays testable: the current directory and NSRUN_HOST_BACKEND.
struct CallerContext {
  std::string cwd;      // empty when getcwd failed
  int cwd_errno = 0;    // why it failed (ENOENT: the directory was removed)
  std::optional<std::string> host_backend_env;
  bool lakebox_marker = false;
  // For the well-known sockets to hide: the caller's variables, and how
  // to ask the host whether a path exists (unset: nothing exists).
  SocketEnv socket_env;
  PathLookup lookup;
  std::string xdg_state_home;  // $XDG_STATE_HOME, for the copy-on-write layers
  // The real uid's home directory in the password database (nullopt: no
  // entry, or none could be read), asked here, before anything runs and
  // never again (NSS after the root changes would read the sandbox's).
  std::optional<std::string> account_home;
  // Reads a hidden settings file for its copy (policy/settings_copy.hpp):
  // a regular file of at most settings_copy_max bytes, opened through no
  // symlink; nullopt otherwise (it stays hidden whole). Unset: no copies.
  std::function<std::optional<std::string>(const std::string&)> read_settings;
  // Settings files for people (cli/settings.hpp): $XDG_CONFIG_HOME, and
  // how to read a file (nsrun's own: read_settings_text). Unset: no
  // settings file is read.
  std::string xdg_config_home;
  std::function<Result<std::optional<std::string>>(const std::string& path, bool workspace_file)> read_settings_file;
};

CallerContext read_caller_context();

// The home directory of `uid` in a password file's text (passwd(5)
// lines), the first entry for it; nullopt when none has an absolute home.
// The static nsrun reads /etc/passwd with it instead of NSS, whose modules
// a static binary would have to dlopen (about 160 KB more, and nothing to
// load on a microVM that holds only nsrun).
std::optional<std::string> home_in_passwd(std::string_view text, unsigned uid);

// `args` excludes the program name.
Result<Invocation> parse_native(std::span<const std::string> args, const CallerContext& ctx);

// A note for stderr before a direct workspace-write run whose workspace
// the caller may not write (another user's tree after `sudo -u`, a
// read-only mount): every write of the command would fail, each with its
// own riddle. nullopt: nothing to say.
std::optional<std::string> workspace_note(const Policy& p);

std::string native_usage();

// Whether `arg` is one of the native command line's options.
bool is_native_option(std::string_view arg);

}  // namespace nsrun
