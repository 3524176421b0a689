#include "cli/options.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>

#include <fmt/core.h>

#include "policy/policy_json.hpp"
#include "policy/presets.hpp"

namespace nsrun {

namespace {

using Args = std::span<const std::string>;
// The table's `json` and `native_short` as literals of known length (no
// strlen at start-up).
using std::string_view_literals::operator""sv;
using K = MountOp::Kind;

// ---- setters of the native dialect ----

template <class E>
OptionSetter set_enum(E Policy::*member, std::optional<E> (*parse)(std::string_view), std::string_view choices) {
  return [=](OptionCall& c) -> Result<void> {
    auto v = parse(c.values[0]);
    if (!v) return fail(usage_error(c.name, fmt::format("unknown value '{}' (expected {})", c.values[0], choices)));
    c.policy.*member = *v;
    return {};
  };
}

OptionSetter set_string(std::string Policy::*member) {
  return [member](OptionCall& c) -> Result<void> {
    c.policy.*member = c.values[0];
    return {};
  };
}

OptionSetter append_string(std::vector<std::string> Policy::*member) {
  return [member](OptionCall& c) -> Result<void> {
    (c.policy.*member).push_back(c.values[0]);
    return {};
  };
}

// --network proxy's lists (Policy::egress).
OptionSetter append_egress(std::vector<std::string> EgressRules::*member) {
  return [member](OptionCall& c) -> Result<void> {
    (c.policy.egress.*member).push_back(c.values[0]);
    return {};
  };
}

template <class T>
OptionSetter set_value(T Policy::*member, T value) {
  return [member, value](OptionCall& c) -> Result<void> {
    c.policy.*member = value;
    return {};
  };
}

// --protect-defaults, --hide-defaults: `default` keeps a default set, `none` drops it.
OptionSetter default_set(bool Policy::*member) {
  return [member](OptionCall& c) -> Result<void> {
    if (c.values[0] != "default" && c.values[0] != "none")
      return fail(usage_error(c.name, fmt::format("unknown value '{}' (expected default or none)", c.values[0])));
    c.policy.*member = c.values[0] == "default";
    return {};
  };
}

// --tmp private|host|DIR: shorthand, so the Policy says what it became.
// host is --writable /tmp (a writable root: protected paths and the
// report's checks apply to it as to any); DIR is a read-write bind of DIR
// on /tmp, after the private one, which it covers.
Result<void> set_tmp(OptionCall& c) {
  const std::string& v = c.values[0];
  if (v == "private") return {};
  if (v == "host") {
    if (std::find(c.policy.writable.begin(), c.policy.writable.end(), "/tmp") == c.policy.writable.end())
      c.policy.writable.push_back("/tmp");
    return {};
  }
  if (!v.starts_with('/'))
    return fail(usage_error(c.name, fmt::format("unknown value '{}' (expected private, host or an absolute directory)", v)));
  MountOp m;
  m.kind = K::bind;
  m.source = v;
  m.dest = "/tmp";
  c.policy.mounts.push_back(std::move(m));
  return {};
}

// --ro DIR binds DIR read-only over itself.
OptionSetter add_mount(MountOp::Kind kind) {
  return [kind](OptionCall& c) -> Result<void> {
    MountOp m;
    m.kind = kind;
    m.dest = c.values[0];
    if (kind == K::ro_bind) m.source = c.values[0];
    c.policy.mounts.push_back(std::move(m));
    return {};
  };
}

OptionSetter add_env(EnvOp::Kind kind) {
  return [kind](OptionCall& c) -> Result<void> {
    c.policy.env.push_back(EnvOp{kind, c.values[0], kind == EnvOp::Kind::set ? c.values[1] : std::string()});
    return {};
  };
}

OptionSetter share_namespace(bool Namespaces::*member) {
  return [member](OptionCall& c) -> Result<void> {
    c.policy.ns.*member = false;
    return {};
  };
}

Result<int> native_fd(std::string_view option, const std::string& text) {
  int fd = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fd);
  if (ec != std::errc() || end != text.data() + text.size() || fd < 0)
    return fail(usage_error(option, fmt::format("'{}' is not a file descriptor number", text)));
  return fd;
}

Result<void> load_policy(OptionCall& c) {
  auto loaded = load_policy_file(c.values[0], c.policy);
  if (!loaded) return fail(loaded.error());
  // A policy that brings its own mount list replaces ours, and with it
  // what the options before it named (errors then name the kind).
  if (loaded->mounts != c.policy.mounts) c.native->inv.mount_options.assign(loaded->mounts.size(), "");
  c.policy = std::move(*loaded);
  return {};
}

// --help and --version in either dialect.
OptionSetter show(Invocation::Action native, BwrapInvocation::Action bwrap) {
  return [=](OptionCall& c) -> Result<void> {
    if (c.native != nullptr) c.native->inv.action = native;
    if (c.bwrap != nullptr) c.bwrap->inv.action = bwrap;
    return {};
  };
}

// ---- setters of the bwrap dialect (helpers: BwrapParse, src/cli/bwrap.cpp) ----

template <class T>
OptionSetter bwrap_flag(T BwrapParse::*member) {
  return [member](OptionCall& c) -> Result<void> {
    c.bwrap->*member = true;
    return {};
  };
}

OptionSetter unshare(bool Namespaces::*member, bool on = true) {
  return [member, on](OptionCall& c) -> Result<void> {
    c.policy.ns.*member = on;
    return {};
  };
}

// A descriptor into a Policy field. Status and blocking fds must be open
// now; of a namespace fd, as in bwrap, only the number is checked here (a
// closed or wrong fd is setns()'s error, in bwrap's words).
enum class FdCheck { number, open };
OptionSetter fd_into(std::optional<int> Policy::*member, FdCheck check) {
  return [member, check](OptionCall& c) -> Result<void> {
    auto f = check == FdCheck::open ? c.bwrap->open_fd(c.values[0]) : c.bwrap->fd(c.values[0]);
    if (!f) return fail(f.error());
    c.policy.*member = *f;
    return {};
  };
}

OptionSetter id_into(std::optional<uint32_t> Policy::*member) {
  return [member](OptionCall& c) -> Result<void> {
    auto v = bwrap_number(c.values[0]);
    if (!v) return fail(said_bwrap(fmt::format("Invalid {}: {}", c.name.substr(2), c.values[0])));
    c.policy.*member = static_cast<uint32_t>(*v);
    return {};
  };
}

OptionSetter bind(K kind, bool optional) {
  return [=](OptionCall& c) { return c.bwrap->bind(kind, optional, c.values); };
}
OptionSetter bind_fd(K kind) {
  return [=](OptionCall& c) { return c.bwrap->bind_fd(kind, c.values); };
}
OptionSetter dest_op(K kind, bool takes_perms = false) {
  return [=](OptionCall& c) { return c.bwrap->dest_op(kind, c.values[0], takes_perms); };
}
OptionSetter data_op(K kind) {
  return [=](OptionCall& c) { return c.bwrap->data_op(kind, c.values); };
}
OptionSetter overlay(K kind) {
  return [=](OptionCall& c) { return c.bwrap->overlay(kind, c.name, c.values); };
}

Result<void> seccomp_fd(OptionCall& c) {
  BwrapParse& b = *c.bwrap;
  auto f = b.fd(c.values[0]);
  if (!f) return fail(f.error());
  const bool single = c.name == "--seccomp";
  if (single && b.added_seccomp) return fail(said_bwrap("--seccomp cannot be combined with --add-seccomp-fd"));
  if (!single && b.single_seccomp) return fail(said_bwrap("--add-seccomp-fd cannot be combined with --seccomp"));
  if (single && b.single_seccomp) b.warn("Only the last --seccomp option will take effect");
  // bwrap reads (and closes) an --add-seccomp-fd at once, an --args fd
  // too: naming one again finds it closed.
  if (b.closed(*f)) return fail(said_bwrap("Can't read seccomp data", EBADF));
  if (single) c.policy.seccomp_fds.clear();  // the last --seccomp wins
  (single ? b.single_seccomp : b.added_seccomp) = true;
  c.policy.seccomp_fds.push_back(*f);
  b.used_fds.push_back(*f);
  if (!single) b.closed_fds.push_back(*f);
  return {};
}

// One limit value, parsed with the option's name in the message.
OptionSetter limit_value(std::optional<uint64_t> Limits::*member,
                         Result<uint64_t> (*parse)(std::string_view, std::string_view)) {
  return [member, parse](OptionCall& c) -> Result<void> {
    auto v = parse(c.name, c.values[0]);
    if (!v) return fail(v.error());
    c.policy.limits.*member = *v;
    return {};
  };
}

OptionSetter capability(bool add) {
  return [add](OptionCall& c) -> Result<void> {
    auto bits = c.bwrap->cap_bits(c.values[0]);
    if (!bits) return fail(bits.error());
    c.bwrap->cap_ops.emplace_back(add, *bits);
    return {};
  };
}

}  // namespace

// ---------------------------------------------------------------------------
// THE OPTION TABLE. To add an option: append one entry (in the group it
// belongs to; --help lists entries in this order) with
//   - its spelling per dialect: {name, metavar, help} for nsrun's own
//     command line and/or bwrap's (bwrap's list is bubblewrap 0.11's: add
//     there only what bwrap has, with bwrap's meaning); an empty name
//     leaves a dialect out;
//   - `json`: the key of the Policy field it sets, when the option is
//     exactly that field (a row of policy_fields() in
//     src/policy/policy_json.cpp; tests/unit/policy_fields_test.cpp checks
//     that, and wants a sample value for it);
//   - `arity` and the setter: a small function of OptionCall (the Policy,
//     the values, the dialect's state) that parses the values and stores
//     them; errors name `c.name`, the option as the caller spelled it;
//   - a line in docs/nsrun.1 for a native option (options_test checks it).
// E.g. a native option mirroring a new Policy field `egress` (its row in
// policy_fields(): row("egress", strings_field(&Policy::egress))):
//   {.native = {"--egress", "HOST", "allow connections to HOST (repeatable)"},
//    .json = "egress"sv, .arity = 1, .set = append_string(&Policy::egress)},
// The native loop (src/cli/native.cpp) and the bwrap loop (src/cli/bwrap.cpp)
// need no change; mounts a native option adds are named after it in
// validate()'s errors without more (Invocation::mount_options).
// ---------------------------------------------------------------------------
// Each entry names only the fields it has (designated initializers); the
// rest stay empty on purpose, which g++ 12 would warn about field by field.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::span<const OptionSpec> option_table() {
  // An array, not a std::vector: each entry is built in place, where a
  // vector copied every entry (and its setter) out of a temporary array
  // first (about 150 entries at every start).
  static const OptionSpec table[] = {
      // ---- both dialects ----
      {.native = {"--help", "", "print this text and exit"}, .native_short = "-h"sv,
       .bwrap = {"--help", "", "Show this text and exit"},
       .set = show(Invocation::Action::help, BwrapInvocation::Action::help)},
      {.native = {"--version", "", "print the version and exit"},
       .bwrap = {"--version", "", "Show the version and exit"},
       .set = show(Invocation::Action::version, BwrapInvocation::Action::version)},

      // ---- nsrun's own command line ----
      {.native = {"--mode", "MODE", "read-only, workspace-write (default) or full-access"}, .json = "mode"sv, .arity = 1,
       .set = set_enum(&Policy::mode, parse_mode, "read-only, workspace-write or full-access")},
      {.native = {"--workspace", "DIR", "the workspace (default: the current directory)"}, .json = "workspace"sv,
       .arity = 1, .set = set_string(&Policy::workspace)},
      {.native = {"--writable", "DIR", "another writable root (repeatable)"}, .json = "writable"sv, .arity = 1,
       .set = append_string(&Policy::writable)},
      {.native = {"--ro", "DIR", "keep DIR read-only, even inside a writable root"}, .arity = 1,
       .set = add_mount(K::ro_bind)},
      {.native = {"--hide", "DIR", "cover DIR with an empty read-only directory"}, .arity = 1,
       .set = add_mount(K::hide)},
      {.native = {"--tmpfs", "DIR", "an empty private tmpfs on DIR"}, .arity = 1, .set = add_mount(K::tmpfs)},
      {.native = {"--tmp", "WHERE",
                  "/tmp inside: private (default, empty), host (--writable /tmp) or DIR (bound on /tmp)"},
       .arity = 1, .set = set_tmp},
      {.native = {"--chdir", "DIR", "working directory inside (default: the current one; refused when not visible inside)"}, .json = "chdir"sv,
       .arity = 1, .set = set_string(&Policy::chdir)},
      {.native = {"--setenv", "NAME VALUE", "set a variable"}, .bwrap = {"--setenv", "VAR VALUE", "Set VAR to VALUE"},
       .arity = 2, .set = add_env(EnvOp::Kind::set)},
      {.native = {"--unsetenv", "NAME", "remove a variable"}, .bwrap = {"--unsetenv", "VAR", "Remove VAR"},
       .arity = 1, .set = add_env(EnvOp::Kind::unset)},
      {.native = {"--clearenv", "", "start from an empty environment"}, .json = "clearenv"sv,
       .set = set_value(&Policy::clearenv, true)},
      {.native = {"--proc", "MODE", "auto (default), fresh, host-bind or none"}, .json = "proc"sv, .arity = 1,
       .set = set_enum(&Policy::proc, parse_proc_mode, "auto, fresh, host-bind or none")},
      {.native = {"--backend", "RUNG", "auto (default: namespaces, else landlock), namespaces or landlock"},
       .json = "backend"sv, .arity = 1,
       .set = set_enum(&Policy::backend, parse_backend, "auto, namespaces or landlock")},
      {.native = {"--host-backend", "NAME", "the host backend (overrides NSRUN_HOST_BACKEND)"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         c.native->host_backend = c.values[0];  // normalised after the loop (probe/backend.hpp)
         return {};
       }},
      {.native = {"--as-pid-1", "", "the command is PID 1 (no reaper)"},
       .bwrap = {"--as-pid-1", "", "The command is PID 1 itself (needs --unshare-pid)"}, .json = "as_pid_1"sv,
       .set = set_value(&Policy::as_pid_1, true)},
      {.native = {"--policy", "FILE", "read a Policy from JSON; later options override it"}, .arity = 1,
       .set = load_policy},
      // Read before every other option (src/cli/native.cpp), which win over them.
      {.native = {"--settings", "FILE",
                  "read this settings file instead of $XDG_CONFIG_HOME/nsrun/settings.json (docs/settings.md)"},
       .arity = 1, .set = [](OptionCall&) -> Result<void> { return {}; }},
      {.native = {"--no-settings", "", "read no settings file, neither the user's nor the workspace's .nsrun.json"},
       .set = [](OptionCall&) -> Result<void> { return {}; }},
      {.native = {"--explain-source", "", "(nsrun policy) say where each value came from: a settings key or an option"},
       .set = [](OptionCall& c) -> Result<void> {
         if (c.native->inv.action != Invocation::Action::policy)
           return fail(usage_error(c.name, "only with nsrun policy (nsrun policy --explain-source [OPTIONS])"));
         c.native->inv.explain_source = true;
         return {};
       }},
      {.native = {"--report", "PATH", "write a JSON launch report to PATH (opened before the run; no symlinks)"},
       .json = "report_path"sv, .arity = 1, .set = set_string(&Policy::report_path)},
      {.native = {"--report-fd", "FD", "write the JSON launch report to FD"}, .json = "report_fd"sv, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto fd = native_fd(c.name, c.values[0]);
         if (!fd) return fail(fd.error());
         c.policy.report_fd = *fd;
         return {};
       }},
      {.native = {"--json", "", "(nsrun probe) print the result as JSON"},
       .set = [](OptionCall& c) -> Result<void> {
         if (c.native->inv.action != Invocation::Action::probe)
           return fail(usage_error(c.name, "unknown option (see nsrun --help)"));
         c.native->inv.json = true;
         return {};
       }},
      // Hardening (docs/hardening.md).
      {.native = {"--network", "MODE",
                  "share (default), none (own network namespace, only lo; not unix sockets) or proxy (only through "
                  "nsrun's egress proxy, to --allow-host destinations)"},
       .json = "network"sv, .arity = 1, .set = set_enum(&Policy::network, parse_network, "share, none or proxy")},
      {.native = {"--no-offline-env", "",
                  "with --network none: leave out the package managers' offline switches (npm_config_offline, "
                  "PIP_NO_INDEX, CARGO_NET_OFFLINE, YARN_ENABLE_OFFLINE_MODE, GOPROXY=off)"},
       .json = "offline_env"sv, .set = set_value(&Policy::offline_env, false)},
      // --network proxy; in JSON, network: {mode, allow, deny, resolve, log}.
      {.native = {"--allow-host", "PATTERN",
                  "with --network proxy: a reachable host (example.com, *.example.com, host:port, an IP address, "
                  "[v6]:port; repeatable)"},
       .arity = 1, .set = append_egress(&EgressRules::allow)},
      {.native = {"--deny-host", "PATTERN", "with --network proxy: a host never reached, even when allowed (repeatable)"},
       .arity = 1, .set = append_egress(&EgressRules::deny)},
      {.native = {"--resolve-host", "NAME=ADDRESS",
                  "with --network proxy: resolve NAME to ADDRESS instead of asking the host's resolver (repeatable; "
                  "the rules still judge ADDRESS)"},
       .arity = 1, .set = append_egress(&EgressRules::resolve)},
      {.native = {"--network-log", "FILE", "with --network proxy: write each egress decision to FILE as a JSON line"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         c.policy.egress.log = c.values[0];
         return {};
       }},
      {.native = {"--seccomp", "MODE", "default (the built-in filter), none, or log (log instead of refusing)"},
       .json = "seccomp"sv, .arity = 1,
       .set = set_enum(&Policy::seccomp, parse_seccomp_mode, "default, none or log")},
      {.native = {"--seccomp-log", "", "same as --seccomp log"},
       .set = set_value(&Policy::seccomp, SeccompMode::log)},
      {.native = {"--unix-sockets", "MODE",
                  "hide-known (default: hide the well-known host sockets) or none (no AF_UNIX socket but socketpair)"},
       .json = "unix_sockets"sv, .arity = 1,
       .set = set_enum(&Policy::unix_sockets, parse_unix_sockets, "hide-known or none")},
      {.native = {"--allow-socket", "PATH", "do not hide this well-known host socket (repeatable)"},
       .json = "allow_sockets"sv, .arity = 1, .set = append_string(&Policy::allow_sockets)},
      // Protected paths and hidden credentials (src/policy/protect.hpp).
      {.native = {"--protect", "PATH", "keep PATH (relative to each writable root) read-only and uncreatable (repeatable)"},
       .json = "protect"sv, .arity = 1, .set = append_string(&Policy::protect)},
      {.native = {"--unprotect", "PATH", "drop PATH from the protected set (repeatable)"},
       .json = "unprotect"sv, .arity = 1, .set = append_string(&Policy::unprotect)},
      {.native = {"--protect-defaults", "SET", "default (.git/hooks, .git/config, .envrc, .vscode, ...) or none"},
       .arity = 1, .set = default_set(&Policy::protect_defaults)},
      {.native = {"--hide-defaults", "SET", "default (~/.ssh, ~/.aws, ~/.npmrc and other credentials hidden) or none"},
       .arity = 1, .set = default_set(&Policy::hide_defaults)},
      {.native = {"--allow-read", "PATH", "do not hide this default credential path (repeatable)"},
       .json = "allow_read"sv, .arity = 1, .set = append_string(&Policy::allow_read)},
      {.native = {"--no-settings-copy", "",
                  "hide ~/.npmrc and ~/.pypirc whole instead of showing a copy without their credential lines"},
       .json = "settings_copy"sv, .set = set_value(&Policy::settings_copy, false)},
      {.native = {"--allow-nested-userns", "", "let the command make user namespaces of its own"},
       .json = "allow_nested_userns"sv, .set = set_value(&Policy::allow_nested_userns, true)},
      {.native = {"--share-ipc", "", "keep the host's IPC namespace"}, .set = share_namespace(&Namespaces::ipc)},
      {.native = {"--share-uts", "", "keep the host's UTS namespace (and hostname)"},
       .set = share_namespace(&Namespaces::uts)},
      {.native = {"--share-cgroup", "", "keep the host's cgroup namespace"},
       .set = share_namespace(&Namespaces::cgroup)},
      {.native = {"--env-allow", "GLOB", "keep only variables matching GLOB (repeatable)"}, .arity = 1,
       .set = add_env(EnvOp::Kind::allow)},
      {.native = {"--env-deny", "GLOB", "remove variables matching GLOB (repeatable)"}, .arity = 1,
       .set = add_env(EnvOp::Kind::deny)},
      {.native = {"--new-session", "", "always setsid (default: only when stdin is not a terminal)"},
       .bwrap = {"--new-session", "", "Run the command in a new session (setsid)"}, .json = "new_session"sv,
       .set = set_value(&Policy::new_session, std::optional<bool>(true))},
      {.native = {"--no-new-session", "", "never setsid (TIOCSTI stays refused by the filter)"},
       .json = "new_session"sv, .set = set_value(&Policy::new_session, std::optional<bool>(false))},
      // Copy-on-write layers (src/layers/, docs/hardening.md).
      {.native = {"--workspace-mode", "MODE", "direct (default) or cow: writes go to a run layer for nsrun commit"},
       .json = "workspace_mode"sv, .arity = 1,
       .set = set_enum(&Policy::workspace_mode, parse_workspace_mode, "direct or cow")},
      {.native = {"--cow-dir", "DIR", "where run layers go (default $XDG_RUNTIME_DIR/nsrun/runs)"},
       .json = "cow_dir"sv, .arity = 1, .set = set_string(&Policy::cow_dir)},
      {.native = {"--home", "MODE", "cow (default: writes go to a persistent home layer), ro or rw"},
       .json = "home"sv, .arity = 1, .set = [](OptionCall& c) -> Result<void> {
         auto r = set_enum(&Policy::home, parse_home_mode, "ro, cow or rw")(c);
         if (r) c.policy.home_given = true;
         return r;
       }},
      {.native = {"--home-layer", "NAME", "the home layer to use (default: one per workspace)"},
       .json = "home_layer"sv, .arity = 1, .set = set_string(&Policy::home_layer)},
      {.native = {"--run-id", "NAME", "with --workspace-mode cow: the run layer's name (refused when in use)"},
       .json = "run_id"sv, .arity = 1, .set = [](OptionCall& c) -> Result<void> {
         if (c.values[0].empty()) return fail(usage_error(c.name, "is empty: a run id is 1 to 64 characters"));
         return set_string(&Policy::run_id)(c);
       }},
      {.native = {"--pass-fd", "FD", "keep FD open for the command (repeatable)"}, .json = "pass_fds"sv, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto fd = native_fd(c.name, c.values[0]);
         if (!fd) return fail(fd.error());
         c.policy.pass_fds.push_back(*fd);
         return {};
       }},
      // Limits and verdicts (docs/limits.md): fields of the
      // Policy's `limits` object, not top-level ones.
      {.native = {"--limit-memory", "SIZE", "memory of the whole sandbox (512M, 2G)"}, .arity = 1,
       .set = limit_value(&Limits::memory, parse_size)},
      {.native = {"--limit-pids", "N", "processes and threads of the command at once"}, .arity = 1,
       .set = limit_value(&Limits::pids, parse_count)},
      {.native = {"--limit-cpu", "CORES", "CPU bandwidth (0.5, 2)"}, .arity = 1,
       .set = limit_value(&Limits::cpu_millis, parse_cores)},
      {.native = {"--timeout", "DURATION", "end the sandbox after DURATION (30s, 500ms, 2m); exit status 124"},
       .arity = 1, .set = limit_value(&Limits::timeout_ms, parse_duration_ms)},
      {.native = {"--idle-timeout", "DURATION", "nsrun session start: end the session after DURATION without a caller"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto v = parse_duration_ms("--idle-timeout", c.values[0]);
         if (!v) return fail(v.error());
         c.native->inv.idle_timeout_ms = *v;
         return {};
       }},
      {.native = {"--kill-after", "DURATION", "after a timeout, SIGKILL this long after SIGTERM (default 2s)"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto v = parse_duration_ms("--kill-after", c.values[0]);
         if (!v) return fail(v.error());
         c.policy.limits.kill_after_ms = *v;
         return {};
       }},
      {.native = {"--rlimit", "NAME=SOFT[:HARD]", "core, nofile, fsize, nproc, cpu, stack or as (repeatable; core=0 default)"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto r = parse_rlimit(c.name, c.values[0]);
         if (!r) return fail(r.error());
         c.policy.limits.rlimits.push_back(std::move(*r));
         return {};
       }},
      {.native = {"--tmpfs-size", "SIZE", "size= of every tmpfs nsrun mounts (the private /tmp among them)"},
       .arity = 1, .set = limit_value(&Limits::tmpfs_size, parse_size)},
      {.native = {"--limits", "MODE", "strict (default: refuse a limit nothing enforces), best-effort or require-cgroup"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         auto m = parse_limits_mode(c.values[0]);
         if (!m)
           return fail(usage_error(c.name, fmt::format("unknown value '{}' (expected strict, best-effort or "
                                                       "require-cgroup)",
                                                       c.values[0])));
         c.policy.limits.mode = *m;
         return {};
       }},
      {.native = {"--verdict", "", "after a failure, one stderr line: what the sandbox refused, or could not see"},
       .json = "verdict"sv, .set = set_value(&Policy::verdict, true)},
      {.native = {"--watch-writes", "", "list write attempts outside the writable roots in the report and the verdict "
                                        "(observed, never decided on; a round trip per write call)"},
       .json = "watch_writes"sv, .set = set_value(&Policy::watch_writes, true)},

      // ---- bubblewrap 0.11's command line (docs/bwrap.md), in its --help order ----
      {.bwrap = {"--args", "FD", "Read more arguments, separated by NUL bytes, from FD"}, .arity = 1,
       .set = [](OptionCall& c) { return c.bwrap->args_from_fd(c.values[0]); }},
      {.bwrap = {"--argv0", "VALUE", "Give the command VALUE as its argv[0]"}, .arity = 1,
       .set = set_string(&Policy::argv0)},
      {.bwrap = {"--level-prefix", "", "Start each diagnostic line with a syslog level such as <3>"},
       .set = [](OptionCall& c) -> Result<void> {
         c.bwrap->inv.level_prefix = true;
         return {};
       }},
      {.bwrap = {"--unshare-all", "", "Make every namespace below (user and cgroup only where possible)"},
       .set = [](OptionCall& c) -> Result<void> {
         c.bwrap->user_try = c.bwrap->cgroup_try = true;
         c.policy.ns.ipc = c.policy.ns.pid = c.policy.ns.net = c.policy.ns.uts = true;
         return {};
       }},
      {.bwrap = {"--share-net", "", "Keep the caller's network namespace despite an earlier --unshare-all"},
       .set = unshare(&Namespaces::net, false)},
      {.bwrap = {"--unshare-user", "", "Make a user namespace (implied when not run by root)"},
       .set = bwrap_flag(&BwrapParse::user)},
      {.bwrap = {"--unshare-user-try", "", "Make a user namespace if the kernel can"},
       .set = bwrap_flag(&BwrapParse::user_try)},
      {.bwrap = {"--unshare-ipc", "", "Make an IPC namespace"}, .set = unshare(&Namespaces::ipc)},
      {.bwrap = {"--unshare-pid", "", "Make a PID namespace"}, .set = unshare(&Namespaces::pid)},
      {.bwrap = {"--unshare-net", "", "Make a network namespace (only loopback inside)"},
       .set = unshare(&Namespaces::net)},
      {.bwrap = {"--unshare-uts", "", "Make a UTS namespace (hostname)"}, .set = unshare(&Namespaces::uts)},
      {.bwrap = {"--unshare-cgroup", "", "Make a cgroup namespace"}, .set = unshare(&Namespaces::cgroup)},
      {.bwrap = {"--unshare-cgroup-try", "", "Make a cgroup namespace if the kernel can"},
       .set = bwrap_flag(&BwrapParse::cgroup_try)},
      {.bwrap = {"--userns", "FD", "Use the user namespace FD instead of making one (not with --unshare-user)"},
       .arity = 1, .set = fd_into(&Policy::userns_fd, FdCheck::number)},
      {.bwrap = {"--userns2", "FD", "After set-up switch to the user namespace FD (only useful with --userns)"},
       .arity = 1, .set = fd_into(&Policy::userns2_fd, FdCheck::number)},
      {.bwrap = {"--disable-userns", "", "Keep the command from making user namespaces"},
       .set = set_value(&Policy::disable_userns, true)},
      {.bwrap = {"--assert-userns-disabled", "", "Refuse to run unless making user namespaces already fails"},
       .set = set_value(&Policy::assert_userns_disabled, true)},
      {.bwrap = {"--pidns", "FD", "Use the PID namespace FD (as the parent of the new one with --unshare-pid)"},
       .arity = 1, .set = fd_into(&Policy::pidns_fd, FdCheck::number)},
      {.bwrap = {"--uid", "UID", "The uid inside (needs a user namespace)"}, .arity = 1,
       .set = id_into(&Policy::uid)},
      {.bwrap = {"--gid", "GID", "The gid inside (needs a user namespace)"}, .arity = 1,
       .set = id_into(&Policy::gid)},
      {.bwrap = {"--hostname", "NAME", "The hostname inside (needs --unshare-uts)"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         c.policy.hostname = c.values[0];
         c.bwrap->hostname_set = true;
         return {};
       }},
      {.bwrap = {"--chdir", "DIR", "Working directory of the command"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         if (!c.policy.chdir.empty()) c.bwrap->warn("Only the last --chdir option will take effect");
         c.policy.chdir = absolute_from("/", c.values[0]);
         return {};
       }},
      {.bwrap = {"--clearenv", "", "Start from an empty environment (PWD is still set)"},
       .set = [](OptionCall& c) -> Result<void> {
         // Immediate, as in bwrap: an earlier --setenv is cleared with the rest.
         c.policy.clearenv = true;
         c.policy.env.clear();
         return {};
       }},
      {.bwrap = {"--lock-file", "DEST", "Hold a read lock on DEST (inside) while the sandbox runs"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         c.policy.lock_files.push_back(absolute_from("/", c.values[0]));
         return {};
       }},
      {.bwrap = {"--sync-fd", "FD", "Keep FD open as long as the sandbox runs"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         // nsrun outlives the sandbox and never closes it: held open as asked.
         auto f = c.bwrap->open_fd(c.values[0]);
         if (!f) return fail(f.error());
         c.bwrap->sync_fd = *f;
         return {};
       }},
      {.bwrap = {"--bind", "SRC DEST", "Bind the host path SRC on DEST, writable"}, .arity = 2,
       .set = bind(K::bind, false)},
      {.bwrap = {"--bind-try", "SRC DEST", "Like --bind; skipped when SRC does not exist"}, .arity = 2,
       .set = bind(K::bind, true)},
      {.bwrap = {"--dev-bind", "SRC DEST", "Like --bind, device nodes usable"}, .arity = 2,
       .set = bind(K::dev_bind, false)},
      {.bwrap = {"--dev-bind-try", "SRC DEST", "Like --dev-bind; skipped when SRC does not exist"}, .arity = 2,
       .set = bind(K::dev_bind, true)},
      {.bwrap = {"--ro-bind", "SRC DEST", "Bind the host path SRC on DEST, read-only"}, .arity = 2,
       .set = bind(K::ro_bind, false)},
      {.bwrap = {"--ro-bind-try", "SRC DEST", "Like --ro-bind; skipped when SRC does not exist"}, .arity = 2,
       .set = bind(K::ro_bind, true)},
      {.bwrap = {"--bind-fd", "FD DEST", "Bind the directory open as FD on DEST"}, .arity = 2,
       .set = bind_fd(K::bind)},
      {.bwrap = {"--ro-bind-fd", "FD DEST", "Bind the directory open as FD on DEST, read-only"}, .arity = 2,
       .set = bind_fd(K::ro_bind)},
      {.bwrap = {"--remount-ro", "DEST", "Make the mount at DEST read-only"}, .arity = 1,
       .set = dest_op(K::remount_ro)},
      {.bwrap = {"--overlay-src", "SRC", "A lower layer for the next overlay (first given is lowest)"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         c.bwrap->overlay_src.push_back(absolute_from(c.bwrap->ctx.cwd, c.values[0]));
         return {};
       }},
      {.bwrap = {"--overlay", "RWSRC WORKDIR DEST", "overlayfs on DEST, writes going to RWSRC (WORKDIR: empty, same fs)"},
       .arity = 3, .set = overlay(K::overlay)},
      {.bwrap = {"--tmp-overlay", "DEST", "overlayfs on DEST, writes going to a private tmpfs"}, .arity = 1,
       .set = overlay(K::tmp_overlay)},
      {.bwrap = {"--ro-overlay", "DEST", "Read-only overlayfs on DEST"}, .arity = 1, .set = overlay(K::ro_overlay)},
      {.bwrap = {"--exec-label", "LABEL", "SELinux exec label (refused: nsrun cannot apply labels)"}, .arity = 1,
       .set = [](OptionCall& c) { return c.bwrap->selinux_label(c.name); }},
      {.bwrap = {"--file-label", "LABEL", "SELinux file label (refused: nsrun cannot apply labels)"}, .arity = 1,
       .set = [](OptionCall& c) { return c.bwrap->selinux_label(c.name); }},
      {.bwrap = {"--proc", "DEST", "A fresh procfs on DEST"}, .arity = 1, .set = dest_op(K::proc)},
      {.bwrap = {"--dev", "DEST", "A minimal /dev on DEST"}, .arity = 1, .set = dest_op(K::dev)},
      {.bwrap = {"--tmpfs", "DEST", "An empty tmpfs on DEST"}, .arity = 1, .set = dest_op(K::tmpfs, true)},
      {.bwrap = {"--mqueue", "DEST", "A POSIX message queue filesystem on DEST"}, .arity = 1,
       .set = dest_op(K::mqueue)},
      {.bwrap = {"--dir", "DEST", "Create the directory DEST"}, .arity = 1, .set = dest_op(K::dir, true)},
      {.bwrap = {"--file", "FD DEST", "Create the file DEST holding what FD gives"}, .arity = 2,
       .set = data_op(K::file)},
      {.bwrap = {"--bind-data", "FD DEST", "Bind a file holding what FD gives on DEST"}, .arity = 2,
       .set = data_op(K::bind_data)},
      {.bwrap = {"--ro-bind-data", "FD DEST", "Bind a file holding what FD gives on DEST, read-only"}, .arity = 2,
       .set = data_op(K::ro_bind_data)},
      {.bwrap = {"--symlink", "SRC DEST", "Create the symlink DEST pointing at SRC"}, .arity = 2,
       .set = [](OptionCall& c) -> Result<void> {
         MountOp m = mount_op(K::symlink, c.values[0], absolute_from("/", c.values[1]));
         c.bwrap->push(std::move(m));
         return {};
       }},
      {.bwrap = {"--seccomp", "FD", "Load the compiled seccomp program read from FD (the last one given)"},
       .arity = 1, .set = seccomp_fd},
      {.bwrap = {"--add-seccomp-fd", "FD", "Load the compiled seccomp program read from FD (repeatable)"},
       .arity = 1, .set = seccomp_fd},
      {.bwrap = {"--block-fd", "FD", "Before running the command, wait for data (or EOF) on FD"}, .arity = 1,
       .set = fd_into(&Policy::block_fd, FdCheck::open)},
      {.bwrap = {"--userns-block-fd", "FD", "After the id maps are written, wait for data (or EOF) on FD"},
       .arity = 1, .set = fd_into(&Policy::userns_block_fd, FdCheck::open)},
      {.bwrap = {"--info-fd", "FD", "Write the child pid and namespace ids to FD as JSON"}, .arity = 1,
       .set = fd_into(&Policy::info_fd, FdCheck::open)},
      {.bwrap = {"--json-status-fd", "FD", "Write JSON lines to FD: the child pid, later the exit code"},
       .arity = 1, .set = fd_into(&Policy::json_status_fd, FdCheck::open)},
      {.bwrap = {"--die-with-parent", "", "Kill the sandbox when the caller of nsrun dies"},
       .set = [](OptionCall& c) -> Result<void> {
         c.bwrap->inv.die_with_caller = true;
         return {};
       }},
      {.bwrap = {"--cap-add", "CAP", "Keep CAP (or ALL) inside"}, .arity = 1, .set = capability(true)},
      {.bwrap = {"--cap-drop", "CAP", "Drop CAP (or ALL) inside"}, .arity = 1, .set = capability(false)},
      {.bwrap = {"--perms", "OCTAL", "Mode for the next --tmpfs, --dir, --file, --bind-data, --ro-bind-data"},
       .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         if (c.bwrap->perms) return fail(said_bwrap("--perms given twice for the same action"));
         auto mode = c.bwrap->octal(c.values[0], c.name);
         if (!mode) return fail(mode.error());
         c.bwrap->perms = *mode;
         return {};
       },
       .modifier = true},
      {.bwrap = {"--size", "BYTES", "Size of the next --tmpfs"}, .arity = 1,
       .set = [](OptionCall& c) -> Result<void> {
         if (c.bwrap->size) return fail(said_bwrap("--size given twice for the same action"));
         auto v = c.bwrap->tmpfs_size(c.values[0]);
         if (!v) return fail(v.error());
         c.bwrap->size = *v;
         return {};
       },
       .modifier = true},
      {.bwrap = {"--chmod", "OCTAL PATH", "Change the mode of PATH, which must exist"}, .arity = 2,
       .set = [](OptionCall& c) -> Result<void> {
         auto mode = c.bwrap->octal(c.values[0], c.name);
         if (!mode) return fail(mode.error());
         MountOp m = mount_op(K::chmod, "", absolute_from("/", c.values[1]));
         m.perms = *mode;
         c.bwrap->push(std::move(m));
         return {};
       }},
  };
  return table;
}
#pragma GCC diagnostic pop

const OptionSpec* find_option(Dialect dialect, std::string_view arg) {
  if (arg.empty()) return nullptr;
  for (const auto& o : option_table()) {
    if (dialect == Dialect::native && (o.native.name == arg || (!o.native_short.empty() && o.native_short == arg)))
      return &o;
    if (dialect == Dialect::bwrap && o.bwrap.name == arg) return &o;
  }
  return nullptr;
}

namespace {

// Edit distance with adjacent transpositions (optimal string alignment):
// the typos people make in option names are a dropped, doubled, swapped
// or wrong letter.
std::size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

}  // namespace

std::optional<std::string_view> nearest_option(Dialect dialect, std::string_view arg) {
  // Names beyond this are not a typo of any option; they are not compared
  // (the distance is quadratic in the length).
  if (arg.size() < 3 || arg.size() > 64) return std::nullopt;
  std::optional<std::string_view> best, prefixed;
  std::size_t best_distance = SIZE_MAX, prefixes = 0;
  for (const auto& o : option_table()) {
    const std::string_view name = dialect == Dialect::native ? o.native.name : o.bwrap.name;
    if (name.empty()) continue;
    if (name.starts_with(arg)) ++prefixes, prefixed = name;
    const std::size_t d = typo_distance(arg, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  const std::size_t allowed = arg.size() >= 8 ? 2 : 1;
  if (best && best_distance <= allowed) return best;
  // An abbreviation that only one option begins with.
  if (prefixes == 1 && arg.size() >= 4) return prefixed;
  return std::nullopt;
}

std::string option_help(Dialect dialect, std::string_view indent, std::size_t width,
                        std::span<const std::string_view> only) {
  std::string out;
  for (const auto& o : option_table()) {
    const Spelling& s = dialect == Dialect::native ? o.native : o.bwrap;
    if (s.name.empty()) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    std::string left = dialect == Dialect::native && !o.native_short.empty()
                           ? fmt::format("{}, {}", o.native_short, s.name)
                           : std::string(s.name);
    if (!s.metavar.empty()) left += fmt::format(" {}", s.metavar);
    out += fmt::format("{}{:<{}} {}\n", indent, left, width, s.help);
  }
  return out;
}

std::string option_names(Dialect dialect, std::string_view indent, std::size_t columns) {
  std::string out, line;
  for (const auto& o : option_table()) {
    const std::string_view name = dialect == Dialect::native ? o.native.name : o.bwrap.name;
    if (name.empty()) continue;
    if (!line.empty() && line.size() + 1 + name.size() > columns) {
      out += line + "\n";
      line.clear();
    }
    line += line.empty() ? fmt::format("{}{}", indent, name) : fmt::format(" {}", name);
  }
  if (!line.empty()) out += line + "\n";
  return out;
}

}  // namespace nsrun
