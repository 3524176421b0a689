#include "cli/native.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <fmt/format.h>

#include "policy/policy_json.hpp"
#include "probe/backend.hpp"

namespace nsrun {

namespace {

using Args = std::span<const std::string>;
using Handler = std::function<Result<void>(Policy&, Args)>;

struct Option {
  std::string_view name;
  int arity;  // number of values that follow
  std::string_view values;  // for --help
  std::string_view help;
  Handler apply;
};

template <class E>
Handler set_enum(E Policy::*member, std::optional<E> (*parse)(std::string_view), std::string_view option,
                 std::string_view choices) {
  return [=](Policy& p, Args a) -> Result<void> {
    auto v = parse(a[0]);
    if (!v) return fail(usage_error(option, fmt::format("unknown value '{}' (expected {})", a[0], choices)));
    p.*member = *v;
    return {};
  };
}

Handler set_string(std::string Policy::*member) {
  return [member](Policy& p, Args a) -> Result<void> {
    p.*member = a[0];
    return {};
  };
}

template <class T>
Handler set_value(T Policy::*member, T value) {
  return [member, value](Policy& p, Args) -> Result<void> {
    p.*member = value;
    return {};
  };
}

Handler add_mount(MountOp::Kind kind) {
  return [kind](Policy& p, Args a) -> Result<void> {
    MountOp m;
    m.kind = kind;
    m.dest = a[0];
    if (kind == MountOp::Kind::ro_bind) m.source = a[0];
    p.mounts.push_back(std::move(m));
    return {};
  };
}

Handler add_env(EnvOp::Kind kind) {
  return [kind](Policy& p, Args a) -> Result<void> {
    EnvOp e{kind, a[0], kind == EnvOp::Kind::set ? a[1] : std::string()};
    p.env.push_back(std::move(e));
    return {};
  };
}

Handler share_namespace(bool Namespaces::*member) {
  return [member](Policy& p, Args) -> Result<void> {
    p.ns.*member = false;
    return {};
  };
}

Result<int> parse_fd(std::string_view option, const std::string& text) {
  int fd = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fd);
  if (ec != std::errc() || end != text.data() + text.size() || fd < 0)
    return fail(usage_error(option, fmt::format("'{}' is not a file descriptor number", text)));
  return fd;
}

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      {"--mode", 1, "MODE", "read-only, workspace-write (default) or full-access",
       set_enum(&Policy::mode, parse_mode, "--mode", "read-only, workspace-write or full-access")},
      {"--workspace", 1, "DIR", "the workspace (default: the current directory)",
       set_string(&Policy::workspace)},
      {"--writable", 1, "DIR", "another writable root (repeatable)",
       [](Policy& p, Args a) -> Result<void> {
         p.writable.push_back(a[0]);
         return {};
       }},
      {"--ro", 1, "DIR", "keep DIR read-only, even inside a writable root", add_mount(MountOp::Kind::ro_bind)},
      {"--hide", 1, "DIR", "cover DIR with an empty read-only directory", add_mount(MountOp::Kind::hide)},
      {"--tmpfs", 1, "DIR", "an empty private tmpfs on DIR", add_mount(MountOp::Kind::tmpfs)},
      {"--chdir", 1, "DIR", "working directory inside (default: the current one, else /)",
       set_string(&Policy::chdir)},
      {"--setenv", 2, "NAME VALUE", "set a variable", add_env(EnvOp::Kind::set)},
      {"--unsetenv", 1, "NAME", "remove a variable", add_env(EnvOp::Kind::unset)},
      {"--clearenv", 0, "", "start from an empty environment",
       set_value(&Policy::clearenv, true)},
      {"--proc", 1, "MODE", "auto (default), fresh, host-bind or none",
       set_enum(&Policy::proc, parse_proc_mode, "--proc", "auto, fresh, host-bind or none")},
      {"--backend", 1, "RUNG", "auto (default: namespaces, else landlock), namespaces or landlock",
       set_enum(&Policy::backend, parse_backend, "--backend", "auto, namespaces or landlock")},
      {"--as-pid-1", 0, "", "the command is PID 1 (no reaper)",
       set_value(&Policy::as_pid_1, true)},
      {"--policy", 1, "FILE", "read a Policy from JSON; later options override it",
       [](Policy& p, Args a) -> Result<void> {
         auto loaded = load_policy_file(a[0], p);
         if (!loaded) return fail(loaded.error());
         p = std::move(*loaded);
         return {};
       }},
      {"--report", 1, "PATH", "write a JSON launch report to PATH (opened before the run; no symlinks)",
       set_string(&Policy::report_path)},
      {"--report-fd", 1, "FD", "write the JSON launch report to FD",
       [](Policy& p, Args a) -> Result<void> {
         auto fd = parse_fd("--report-fd", a[0]);
         if (!fd) return fail(fd.error());
         p.report_fd = *fd;
         return {};
       }},
      // Hardening (docs/hardening.md).
      {"--network", 1, "MODE", "share (default) or none (own network namespace, only lo; not unix sockets)",
       set_enum(&Policy::network, parse_network, "--network", "share or none")},
      {"--seccomp", 1, "MODE", "default (the built-in filter), none, or log (log instead of refusing)",
       set_enum(&Policy::seccomp, parse_seccomp_mode, "--seccomp", "default, none or log")},
      {"--seccomp-log", 0, "", "same as --seccomp log",
       [](Policy& p, Args) -> Result<void> {
         p.seccomp = SeccompMode::log;
         return {};
       }},
      {"--unix-sockets", 1, "MODE",
       "hide-known (default: hide the well-known host sockets) or none (no AF_UNIX socket but socketpair)",
       set_enum(&Policy::unix_sockets, parse_unix_sockets, "--unix-sockets", "hide-known or none")},
      {"--allow-socket", 1, "PATH", "do not hide this well-known host socket (repeatable)",
       [](Policy& p, Args a) -> Result<void> {
         p.allow_sockets.push_back(a[0]);
         return {};
       }},
      {"--allow-nested-userns", 0, "", "let the command make user namespaces of its own",
       set_value(&Policy::allow_nested_userns, true)},
      {"--share-ipc", 0, "", "keep the host's IPC namespace", share_namespace(&Namespaces::ipc)},
      {"--share-uts", 0, "", "keep the host's UTS namespace (and hostname)", share_namespace(&Namespaces::uts)},
      {"--share-cgroup", 0, "", "keep the host's cgroup namespace", share_namespace(&Namespaces::cgroup)},
      {"--env-allow", 1, "GLOB", "keep only variables matching GLOB (repeatable)", add_env(EnvOp::Kind::allow)},
      {"--env-deny", 1, "GLOB", "remove variables matching GLOB (repeatable)", add_env(EnvOp::Kind::deny)},
      {"--new-session", 0, "", "always setsid (default: only when stdin is not a terminal)",
       set_value(&Policy::new_session, std::optional<bool>(true))},
      {"--no-new-session", 0, "", "never setsid (TIOCSTI stays refused by the filter)",
       set_value(&Policy::new_session, std::optional<bool>(false))},
      // Copy-on-write layers (issues 14, 17; src/layers/).
      {"--workspace-mode", 1, "MODE", "direct (default) or cow: writes go to a run layer for nsrun commit",
       set_enum(&Policy::workspace_mode, parse_workspace_mode, "--workspace-mode", "direct or cow")},
      {"--cow-dir", 1, "DIR", "where run layers go (default $XDG_RUNTIME_DIR/nsrun/runs)",
       set_string(&Policy::cow_dir)},
      {"--home", 1, "MODE", "ro (default), cow (writes go to a persistent home layer) or rw",
       set_enum(&Policy::home, parse_home_mode, "--home", "ro, cow or rw")},
      {"--home-layer", 1, "NAME", "the home layer to use (default: one per workspace)",
       set_string(&Policy::home_layer)},
      {"--pass-fd", 1, "FD", "keep FD open for the command (repeatable)",
       [](Policy& p, Args a) -> Result<void> {
         auto fd = parse_fd("--pass-fd", a[0]);
         if (!fd) return fail(fd.error());
         p.pass_fds.push_back(*fd);
         return {};
       }},
  };
  return table;
}

const Option* find_option(std::string_view name) {
  const auto& table = options();
  auto it = std::find_if(table.begin(), table.end(), [&](const Option& o) { return o.name == name; });
  return it == table.end() ? nullptr : &*it;
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
  ctx.lookup = lookup_host_path;
  return ctx;
}

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
  std::optional<std::string> host_backend_option;
  std::vector<std::string> values;
  for (; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--help" || arg == "-h") {
      inv.action = Invocation::Action::help;
      return inv;
    }
    if (arg == "--version") {
      inv.action = Invocation::Action::version;
      return inv;
    }
    if (!arg.starts_with("-")) break;

    // --name=value is the same as --name value for one-value options.
    values.clear();
    if (auto eq = arg.find('='); eq != std::string::npos && arg.starts_with("--")) {
      values.push_back(arg.substr(eq + 1));
      arg.resize(eq);
    }
    if (arg == "--json" && inv.action == Invocation::Action::probe) {
      inv.json = true;
      continue;
    }
    if (arg == "--host-backend") {
      if (values.empty() && i + 1 >= args.size()) return fail(usage_error(arg, "needs a value: NAME"));
      host_backend_option = values.empty() ? args[++i] : values[0];
      continue;
    }
    const Option* opt = find_option(arg);
    if (opt == nullptr) return fail(usage_error(arg, "unknown option (see nsrun --help)"));
    if (!values.empty() && opt->arity != 1) return fail(usage_error(arg, "does not take '=' (give values as separate arguments)"));
    while (static_cast<int>(values.size()) < opt->arity) {
      if (i + 1 >= args.size()) return fail(usage_error(arg, fmt::format("needs a value: {}", opt->values)));
      values.push_back(args[++i]);
    }
    if (auto r = opt->apply(p, values); !r) return fail(r.error());
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
  {
    // The home layer is mounted at $HOME's canonical path.
    std::string home;
    if (ctx.lookup && ctx.socket_env.home.starts_with('/'))
      if (auto found = ctx.lookup(ctx.socket_env.home); found && found->dir) home = found->real;
    resolve_layers(p, ctx.socket_env.xdg_runtime_dir, ctx.xdg_state_home, home);
  }
  if (host_backend_option || ctx.host_backend_env || p.host_backend.empty())
    p.host_backend = detect_backend(host_backend_option ? host_backend_option : ctx.host_backend_env,
                                    ctx.lakebox_marker);
  return inv;
}

std::string native_usage() {
  std::string out =
      "usage: nsrun [OPTIONS] [--] COMMAND [ARG]...\n"
      "       nsrun policy [OPTIONS]              print the resolved Policy as JSON\n"
      "       nsrun explain [OPTIONS] [-- COMMAND] print the plan; run nothing\n"
      "       nsrun probe [--json] [OPTIONS]       which rungs this host allows, and why not\n"
      "       nsrun bench [BENCH-OPTIONS]         measure start-up latency (nsrun bench --help)\n"
      "       nsrun bwrap [BWRAP-OPTIONS] [--] COMMAND   bubblewrap's command line (also as `bwrap`)\n"
      "\n"
      "Runs COMMAND in a sandbox: it may read the host's files and write only its\n"
      "workspace (the current directory), the --writable roots and a private /tmp.\n"
      "\n"
      "options:\n";
  for (const auto& o : options()) {
    std::string left = fmt::format("{} {}", o.name, o.values);
    out += fmt::format("  {:<28} {}\n", left, o.help);
  }
  out += fmt::format("  {:<28} {}\n", "--host-backend NAME", "the host backend (overrides NSRUN_HOST_BACKEND)");
  out += fmt::format("  {:<28} {}\n", "--help, --version", "");
  out +=
      "\nexit status: the command's; 128+N when it died of signal N; 125 when nsrun\n"
      "itself failed or its input was bad; 126 command not executable; 127 not found.\n";
  return out;
}

bool is_native_option(std::string_view arg) {
  if (arg == "--help" || arg == "--version") return true;
  for (const auto& o : options())
    if (o.name == arg) return true;
  return false;
}

}  // namespace nsrun
