#include "cli/native.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "cli/options.hpp"
#include "cli/settings.hpp"
#include "policy/cow.hpp"
#include "policy/paths.hpp"
#include "policy/protect.hpp"
#include "policy/settings_copy.hpp"
#include "probe/backend.hpp"
#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

std::optional<std::string> home_in_passwd(std::string_view text, unsigned uid) {
  const std::string id = std::to_string(uid);
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // name:password:uid:gid:gecos:dir:shell
    std::string_view fields[7];
    std::size_t n = 0;
    for (; n < 7; ++n) {
      const std::size_t colon = line.find(':');
      fields[n] = line.substr(0, colon);
      if (colon == std::string_view::npos) break;
      line = line.substr(colon + 1);
    }
    if (n < 5 || fields[2] != id) continue;
    if (!fields[5].starts_with('/') || fields[5].find('\0') != std::string_view::npos) return std::nullopt;
    return std::string(fields[5]);
  }
  return std::nullopt;
}

namespace {

#ifdef NSRUN_STATIC
std::optional<std::string> read_account_home() {
  Fd fd(::open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  auto text = read_all(fd.get(), "read", "/etc/passwd", std::size_t{16} << 20);
  if (!text) return std::nullopt;
  return home_in_passwd(*text, ::getuid());
}
#else
// getpwuid_r of the real uid: the account nsrun runs for, whatever $HOME
// says. An entry without an absolute home counts as none.
std::optional<std::string> read_account_home() {
  std::vector<char> buf(16384);
  while (true) {
    struct passwd pw{};
    struct passwd* found = nullptr;
    const int rc = ::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (std::size_t{1} << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc != 0 || found == nullptr || pw.pw_dir == nullptr || pw.pw_dir[0] != '/') return std::nullopt;
    return std::string(pw.pw_dir);
  }
}
#endif

std::optional<std::string> read_settings_file(const std::string& path) {
  // O_NONBLOCK: a FIFO put at ~/.npmrc must not hang the launch.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > settings_copy_max)
    return std::nullopt;
  auto text = read_all(fd.get(), "read", path, settings_copy_max + 1);
  if (!text || text->size() > settings_copy_max) return std::nullopt;
  return std::move(*text);
}

}  // namespace

CallerContext read_caller_context() {
  CallerContext ctx;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) != nullptr) ctx.cwd = buf;
  else ctx.cwd_errno = errno;
  if (const char* b = std::getenv("NSRUN_HOST_BACKEND")) ctx.host_backend_env = b;
  ctx.lakebox_marker = ::access(lakebox_marker, F_OK) == 0;
  auto var = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  ctx.socket_env = SocketEnv{var("XDG_RUNTIME_DIR"), var("SSH_AUTH_SOCK"), var("HOME")};
  ctx.xdg_state_home = var("XDG_STATE_HOME");
  ctx.account_home = read_account_home();
  ctx.lookup = lookup_host_path;
  ctx.read_settings = read_settings_file;
  ctx.xdg_config_home = var("XDG_CONFIG_HOME");
  ctx.read_settings_file = read_settings_text;
  return ctx;
}

namespace {

// What the settings files depend on, read from the command line before
// they are applied (the command line is applied after them, and wins).
struct SettingsArgs {
  std::optional<std::string> workspace, file;
  bool none = false, help = false;
};

// Views into `args`, and literals of known length: this runs over every
// option of the command line (a thousand --ro binds) before the loop does.
SettingsArgs settings_args(std::span<const std::string> args, std::size_t i) {
  using namespace std::string_view_literals;
  SettingsArgs out;
  for (; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--"sv || !arg.starts_with('-')) break;
    std::optional<std::string_view> inline_value;
    if (auto eq = arg.find('='); eq != std::string_view::npos && arg.starts_with("--"sv)) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const OptionSpec* opt = find_option(Dialect::native, arg);
    if (opt == nullptr) break;  // the loop says what is wrong with it
    std::optional<std::string_view> value = inline_value;
    if (!value && opt->arity >= 1 && i + 1 < args.size()) value = args[i + 1];
    if (!inline_value) i += static_cast<std::size_t>(opt->arity);
    auto kept = [&] { return value ? std::optional<std::string>(*value) : std::nullopt; };
    if (arg == "--workspace"sv) out.workspace = kept();
    else if (arg == "--settings"sv) out.file = kept();
    else if (arg == "--no-settings"sv) out.none = true;
    else if (opt->native.name == "--help"sv || arg == "--version"sv) out.help = true;
  }
  return out;
}

// --allow-read of a single file inside a hidden directory (~/.ssh/known_hosts
// in the hidden ~/.ssh): the directory stays hidden and the file is shown
// on its own (Policy::shown_in_hidden), read-only. Only as itself: not a
// symlink (its target could be a hidden key), not a file with another name
// (a hard link made where the keys are), nothing but a regular file. Each
// rung checks the file again where it opens it.
Result<void> show_in_hidden(Policy& p, const PathLookup& lookup) {
  for (const auto& a : p.allow_read) {
    const auto found = lookup(a);
    auto hidden_dir = std::find_if(p.hidden_paths.begin(), p.hidden_paths.end(), [&](const std::string& h) {
      return h.ends_with('/') && ((a.starts_with(h) && a.size() > h.size()) || (found && found->real.starts_with(h)));
    });
    if (hidden_dir == p.hidden_paths.end()) continue;
    const std::string dir = hidden_dir->substr(0, hidden_dir->size() - 1);
    auto refuse = [&](std::string_view why) {
      return fail(usage_error(fmt::format("--allow-read {}", a),
                              fmt::format("{} (inside the hidden {}, nsrun shows a single file only as itself)", why,
                                          dir)));
    };
    struct stat st{};
    if (::lstat(a.c_str(), &st) != 0) return refuse(std::strerror(errno));
    if (S_ISLNK(st.st_mode)) return refuse("is a symlink; give the file it names, if that is what you mean");
    if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
    if (st.st_nlink != 1)
      return refuse(fmt::format("has {} hard links (another name of it could be a hidden file)", st.st_nlink));
    if (!found || !found->real.starts_with(*hidden_dir) || found->real.size() <= hidden_dir->size() ||
        (a.starts_with(*hidden_dir) && found->real != a))
      return refuse("has a symlink on its way");
    if (std::find(p.shown_in_hidden.begin(), p.shown_in_hidden.end(), found->real) == p.shown_in_hidden.end())
      p.shown_in_hidden.push_back(found->real);
  }
  return {};
}

// The user's settings file, then the workspace's, onto `p`.
Result<void> apply_settings_files(const SettingsArgs& a, const CallerContext& ctx, NativeParse& state, Policy& p) {
  if (a.none || a.help || !ctx.read_settings_file) return {};
  SettingsVars vars;
  if (ctx.socket_env.home.starts_with('/')) vars.home = ctx.socket_env.home;
  else if (ctx.account_home) vars.home = *ctx.account_home;
  vars.workspace = a.workspace ? *a.workspace : ctx.cwd;
  if (!vars.workspace.starts_with('/')) vars.workspace.clear();

  std::string user;
  if (a.file) user = *a.file;
  else if (ctx.xdg_config_home.starts_with('/')) user = ctx.xdg_config_home + "/nsrun/settings.json";
  else if (!vars.home.empty()) user = vars.home + "/.config/nsrun/settings.json";
  if (!user.empty()) {
    auto text = ctx.read_settings_file(user, false);
    if (!text) return fail(text.error());
    if (!*text && a.file) return fail(usage_error(fmt::format("--settings {}", user), "no such file"));
    if (*text)
      if (auto r = apply_settings({user, std::move(**text), false}, vars, state, p, state.inv.sources); !r) return r;
  }
  if (!vars.workspace.empty()) {
    const std::string path =
        fmt::format("{}{}{}", vars.workspace, vars.workspace.ends_with('/') ? "" : "/", workspace_settings_name);
    auto text = ctx.read_settings_file(path, true);
    if (!text) return fail(text.error());
    if (*text)
      if (auto r = apply_settings({path, std::move(**text), true}, vars, state, p, state.inv.sources); !r) return r;
  }
  return {};
}

}  // namespace

Result<Invocation> parse_native(std::span<const std::string> args, const CallerContext& ctx) {
  Invocation inv;
  std::size_t i = 0;
  if (!args.empty()) {
    if (args[0] == "policy") inv.action = Invocation::Action::policy, i = 1;
    else if (args[0] == "explain") inv.action = Invocation::Action::explain, i = 1;
    else if (args[0] == "probe") inv.action = Invocation::Action::probe, i = 1;
  }

  Policy& p = inv.policy;
  // Every other argument may be a mount (--ro DIR): room for them at once,
  // so a long list is not copied while it grows.
  p.mounts.reserve(args.size() / 2);
  NativeParse state{inv, {}};
  if (auto r = apply_settings_files(settings_args(args, i), ctx, state, p); !r) return fail(r.error());
  // What each option does is its entry in the option table
  // (src/cli/options.cpp); this loop is nsrun's argument syntax.
  std::vector<std::string> values;
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!arg.starts_with("-")) break;

    // --name=value is the same as --name value for one-value options.
    values.clear();
    if (auto eq = arg.find('='); eq != std::string::npos && arg.starts_with("--")) {
      values.push_back(arg.substr(eq + 1));
      arg.resize(eq);
    }
    const OptionSpec* opt = find_option(Dialect::native, arg);
    if (opt == nullptr) {
      if (auto near = nearest_option(Dialect::native, arg))
        return fail(usage_error(arg, fmt::format("unknown option; did you mean {}? (see nsrun --help)", *near)));
      return fail(usage_error(arg, "unknown option (see nsrun --help)"));
    }
    if (!values.empty() && opt->arity != 1) return fail(usage_error(arg, "does not take '=' (give values as separate arguments)"));
    while (static_cast<int>(values.size()) < opt->arity) {
      if (i + 1 >= args.size()) return fail(usage_error(arg, fmt::format("needs a value: {}", opt->native.metavar)));
      values.push_back(args[++i]);
    }
    OptionCall call{p, values, arg, &state, nullptr};
    if (auto r = opt->set(call); !r) return fail(r.error());
    // Where each value came from is read by `nsrun policy --explain-source`
    // only (refused with any other action): a launch records none of its
    // command line (a thousand --ro binds, each a copy of its option and
    // value kept until exit).
    if (inv.action == Invocation::Action::policy) inv.sources.push_back({"command line", "", arg, values});
    if (inv.action == Invocation::Action::help || inv.action == Invocation::Action::version) return inv;
    // The mounts this option added are named as typed in later errors
    // (validate: `--ro /x`, not the `--ro-bind` it becomes).
    inv.mount_options.resize(p.mounts.size(), arg);
  }
  p.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())), args.end());

  // The front end resolves what depends on where nsrun was started, so the
  // Policy below it is complete: the workspace, the host backend.
  if (p.workspace.empty()) {
    // The default workspace is the current directory; when it is gone (or
    // unreachable), say that, not "--workspace: empty path" for an option
    // the user never gave.
    if (ctx.cwd.empty() && p.mode != Mode::full_access && p.preset) {
      Error e = usage_error("current directory",
                            fmt::format("{} (it is the default workspace); cd to an existing directory or give "
                                        "--workspace DIR",
                                        ctx.cwd_errno == ENOENT ? "no longer exists"
                                                                : std::strerror(ctx.cwd_errno != 0 ? ctx.cwd_errno : ENOENT)));
      return fail(std::move(e));
    }
    // Started from / in workspace-write mode, the default workspace would be
    // the whole host, writable: more likely a harness that lost its
    // directory than a wish. Saying `--writable /` (or `--workspace /`)
    // means it; the namespace rung then keeps /proc, /dev and /tmp private
    // and /sys read-only, and the Landlock rung refuses it.
    const bool whole_host_named = std::find(p.writable.begin(), p.writable.end(), "/") != p.writable.end();
    if (ctx.cwd == "/" && p.preset && p.mode == Mode::workspace_write && !whole_host_named &&
        inv.action != Invocation::Action::probe)
      return fail(usage_error("--workspace", "the current directory is /, and a workspace of / would make the "
                                             "whole host writable: give --workspace DIR, or --writable / to mean it"));
    p.workspace = ctx.cwd;
  }
  // The well-known host sockets that exist now, minus --allow-socket: the
  // plan covers them (namespace rung); the Landlock rung, which cannot,
  // refuses AF_UNIX sockets while any is listed (docs/hardening.md).
  if (p.mode != Mode::full_access && ctx.lookup)
    p.hidden_sockets = sockets_to_hide(well_known_sockets(ctx.socket_env), p.hidden_sockets, p.allow_sockets,
                                       ctx.lookup);
  // The default credentials that exist now, minus --allow-read: covered on
  // both rungs (docs/hardening.md).
  // Under $HOME and under the account's home: $HOME is the caller's to
  // set, and unset, `/` or `/tmp` must not show the real ~/.ssh.
  if (p.mode != Mode::full_access && ctx.lookup) {
    const std::vector<std::string> homes = credential_homes(ctx.socket_env.home, ctx.account_home);
    if (homes.empty() && p.hide_defaults)
      return fail(usage_error("hidden credentials",
                              fmt::format("no home directory to hide them in ($HOME is {} and the password database "
                                          "has no home for this user): set HOME, or give --hide-defaults none",
                                          ctx.socket_env.home.empty() ? "unset" : "not absolute")));
    // A '..' could name a hidden file by way of another (~/.ssh/x/../id_rsa).
    for (const auto& a : p.allow_read)
      if (a == ".." || a.starts_with("../") || a.ends_with("/..") || a.find("/../") != std::string::npos)
        return fail(usage_error(fmt::format("--allow-read {}", a), "a '..' component (name the path plainly)"));
    auto hidden = credentials_to_hide(homes, p.hide_defaults, p.allow_read, ctx.lookup);
    if (!hidden) return fail(hidden.error());
    // A policy file's own list loses what --allow-read names too.
    std::erase_if(p.hidden_paths, [&](const std::string& h) {
      const std::string plain = h.size() > 1 && h.ends_with('/') ? h.substr(0, h.size() - 1) : h;
      return std::any_of(p.allow_read.begin(), p.allow_read.end(), [&](const std::string& a) {
        auto found = ctx.lookup(a);
        return a == plain || (found && found->real == plain);
      });
    });
    for (auto& h : *hidden)
      if (std::find(p.hidden_paths.begin(), p.hidden_paths.end(), h) == p.hidden_paths.end())
        p.hidden_paths.push_back(std::move(h));
    if (auto r = show_in_hidden(p, ctx.lookup); !r) return fail(r.error());
    // The settings files among them get their copy now, read once: what
    // the command sees is what was filtered, whatever changes after.
    if (p.settings_copy && ctx.read_settings)
      for (const auto& h : p.hidden_paths) {
        if (h.ends_with('/')) continue;
        if (!has_settings_copy(std::string_view(h).substr(h.find_last_of('/') + 1))) continue;
        if (std::any_of(p.settings_copies.begin(), p.settings_copies.end(),
                        [&](const SettingsCopy& c) { return c.path == h; }))
          continue;
        auto text = ctx.read_settings(h);
        if (!text) continue;
        auto copy = settings_copy(std::string_view(h).substr(h.find_last_of('/') + 1), *text);
        if (copy) p.settings_copies.push_back({h, std::move(copy->text)});
      }
    // git's own config files are settings: hidden (and copied) only when
    // an entry could hold a secret (policy/settings_copy.hpp). One that
    // cannot be read for a look (not a regular file, too big) is hidden.
    if (p.hide_defaults && ctx.read_settings) {
      std::vector<std::string> git_configs;
      for (const auto& home : homes)
        for (const char* rel : {"/.gitconfig", "/.config/git/config"})
          git_configs.push_back((home == "/" ? std::string() : home) + rel);
      if (ctx.xdg_config_home.starts_with('/')) git_configs.push_back(ctx.xdg_config_home + "/git/config");
      // Each file, then the files its includes name (at most 16 of those),
      // by the same rule: an include names a path, not a secret.
      std::size_t included = 0;
      std::vector<std::string> seen;  // real paths looked at
      for (std::size_t n = 0; n < git_configs.size(); ++n) {
        const std::string g = git_configs[n];
        auto found = ctx.lookup(g);
        if (!found || found->dir) continue;
        const std::string& real = found->real;
        auto covers = [&](const std::string& a) {
          auto af = ctx.lookup(a);
          return at_or_below(g, a) || at_or_below(real, a) || (af && at_or_below(real, af->real));
        };
        if (std::any_of(p.allow_read.begin(), p.allow_read.end(), covers)) continue;
        if (std::any_of(p.hidden_paths.begin(), p.hidden_paths.end(), [&](const std::string& h) {
              return h == real || (h.ends_with('/') && real.starts_with(h));
            }))
          continue;
        if (std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
        seen.push_back(real);
        auto text = ctx.read_settings(real);
        if (text)
          for (auto& written : git_config_includes(*text)) {
            if (included == 16) break;
            std::string target;
            if (written.starts_with("~/") && ctx.socket_env.home.starts_with('/'))
              target = ctx.socket_env.home + written.substr(1);
            else if (written.starts_with('/'))
              target = written;
            else if (!written.starts_with('~'))
              target = real.substr(0, real.find_last_of('/') + 1) + written;
            if (target.empty()) continue;
            ++included;
            git_configs.push_back(std::move(target));
          }
        std::optional<SettingsCopyText> copy;
        if (text) {
          copy = git_config_copy(*text);
          if (!copy) continue;
        }
        p.hidden_paths.push_back(real);
        if (p.settings_copy && copy) p.settings_copies.push_back({real, std::move(copy->text)});
      }
    }
  }
  // Where git really takes hooks and config from in each writable root
  // (core.hooksPath, a .git file's gitdir, submodules): protected with the
  // defaults (docs/hardening.md, "Hooks and config git really uses").
  if (p.protect_defaults && ctx.lookup) {
    auto git = git_protected_paths(writable_roots(p), ctx.socket_env.home);
    if (!git) return fail(git.error());
    for (auto& g : *git)
      if (std::find(p.protect.begin(), p.protect.end(), g) == p.protect.end() &&
          std::find(p.unprotect.begin(), p.unprotect.end(), g) == p.unprotect.end())
        p.protect.push_back(std::move(g));
  }
  {
    // The home layer is mounted at $HOME's canonical path.
    std::string home;
    if (ctx.lookup && ctx.socket_env.home.starts_with('/'))
      if (auto found = ctx.lookup(ctx.socket_env.home); found && found->dir) home = found->real;
    resolve_layers(p, ctx.socket_env.xdg_runtime_dir, ctx.xdg_state_home, home);
  }
  // --home ro shows the home as it is, the home layers' base with it: what
  // other workspaces' runs wrote into their cow homes (keys, tokens).
  // Hidden as a credential is (the cow home and its fallbacks hide it
  // themselves).
  hide_home_base(p);
  if (state.host_backend || ctx.host_backend_env || p.host_backend.empty())
    p.host_backend = detect_backend(state.host_backend ? state.host_backend : ctx.host_backend_env,
                                    ctx.lakebox_marker);
  return inv;
}

std::optional<std::string> workspace_note(const Policy& p) {
  if (p.mode != Mode::workspace_write || !p.preset || p.workspace_mode != WorkspaceMode::direct) return std::nullopt;
  if (::faccessat(AT_FDCWD, p.workspace.c_str(), W_OK, AT_EACCESS) == 0) return std::nullopt;
  const int err = errno;
  if (err != EACCES && err != EROFS) return std::nullopt;
  struct stat st{};
  if (::stat(p.workspace.c_str(), &st) != 0) return std::nullopt;
  const std::string why = err == EROFS ? std::string("is on a read-only file system")
                                       : fmt::format("is not writable by uid {} (owner {}, mode {:04o})", ::geteuid(),
                                                     st.st_uid, st.st_mode & 07777);
  return fmt::format("nsrun: note: the workspace {} {}: the command's writes there will fail (run as a user who "
                     "may write it, or give --workspace DIR or --workspace-mode cow)\n",
                     p.workspace, why);
}

std::string native_usage() {
  // One screen (40 lines at most): the everyday options; every option and
  // subcommand is in the man page.
  static constexpr std::string_view common[] = {
      "--mode",    "--workspace",    "--writable", "--chdir",   "--tmp",          "--network", "--allow-host",
      "--timeout", "--limit-memory", "--report",   "--verdict", "--watch-writes", "--policy",  "--help",
  };
  std::string out =
      "usage: nsrun [OPTIONS] [--] COMMAND [ARG]...\n"
      "       nsrun explain [OPTIONS] [-- COMMAND]   print the plan; run nothing\n"
      "       nsrun policy|probe|bench|bwrap|connect|session|exec|jobs|logs|kill ..., nsrun help [TOPIC]\n"
      "       nsrun changes|commit|discard RUN, runs, home   review copy-on-write runs\n"
      "\n"
      "Runs COMMAND in a sandbox: it may read the host's files and write only its\n"
      "workspace (the current directory), the --writable roots and a private /tmp.\n"
      "\n"
      "common options (every option and subcommand: man nsrun, docs/nsrun.1):\n";
  out += option_help(Dialect::native, "  ", 22, common);
  // Listed here too because a harness that finds `bwrap` on PATH may
  // resolve the link to nsrun and ask that path's --help which options it
  // has (Codex looks for --as-pid-1, --perms and --argv0); it then runs
  // the path with argv[0] "bwrap", which selects the dialect.
  out +=
      "\nbwrap dialect (nsrun bwrap ..., nsrun named `bwrap`, or a first argument only\n"
      "bwrap has; `nsrun bwrap --help` explains each option):\n";
  out += option_names(Dialect::bwrap, "  ", 79);
  out +=
      "\nexit status: the command's; 128+N when it died of signal N; 124 timeout;\n"
      "125 nsrun itself failed or its input was bad; 126 not executable; 127 not found.\n";
  return out;
}

bool is_native_option(std::string_view arg) { return find_option(Dialect::native, arg) != nullptr; }

}  // namespace nsrun
