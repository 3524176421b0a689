#include "policy/validate.hpp"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "policy/paths.hpp"
#include "policy/protect.hpp"
#include "policy/hosts.hpp"

namespace nsrun {

namespace {

Error bad(std::string_view option, std::string_view path, std::string_view why) {
  Error e = usage_error(option, why);
  e.path = std::string(path);
  return e;
}

Result<void> absolute(std::string_view option, const std::string& path) {
  if (path.empty()) return fail(usage_error(option, "empty path"));
  if (path.front() != '/') return fail(bad(option, path, "not an absolute path"));
  return {};
}

Result<void> existing_dir(std::string_view option, const std::string& path) {
  if (auto r = absolute(option, path); !r) return r;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return fail(bad(option, path, std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) return fail(bad(option, path, "not a directory"));
  return {};
}

Result<void> existing(std::string_view option, const std::string& path) {
  if (auto r = absolute(option, path); !r) return r;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return fail(bad(option, path, std::strerror(errno)));
  return {};
}

// The workspace and the writable roots against the sandbox's own /dev, /proc
// and /sys. The preset orders a root of `/` before the
// private mounts, by name; a path that resolves to `/` by another name (a
// symlink, `/.`) would be bound after them and cover them, so it is refused.
// A root inside /proc or /sys, or /dev itself, would bring the host's back
// over the private ones (the host's processes, writable sysctls as root):
// `--proc host-bind` is the way to the host's /proc.
// `resolved`: the path's canonical name when the caller already knows it
// (plain_path() saw every component), else realpath() finds it.
Result<void> outside_private_mounts(std::string_view option, const std::string& path,
                                    const std::string* resolved = nullptr) {
  char real[PATH_MAX];
  if (resolved == nullptr && ::realpath(path.c_str(), real) == nullptr)
    return fail(bad(option, path, std::strerror(errno)));
  const std::string_view r = resolved != nullptr ? std::string_view(*resolved) : std::string_view(real);
  if (r == "/" && path != "/")
    return fail(bad(option, path, "resolves to / (name / itself to mean the whole host)"));
  for (std::string_view dir : {"/proc", "/sys"})
    if (at_or_below(r, dir))
      return fail(bad(option, path, fmt::format("inside {}, which the sandbox keeps its own", dir)));
  if (r == "/dev") return fail(bad(option, path, "is /dev, which the sandbox keeps its own"));
  return {};
}

// What plain_path() saw of an absolute path, not ending in "/", all of
// whose components it found: none a symlink, none "..", so the path's
// canonical name is its text without "." components and repeated slashes
// (what realpath() would give, without a readlink per component), and the
// last one's type (what stat() would give).
struct SeenPlain {
  bool whole = false;  // every component found, none a symlink
  bool dir = false;    // the last one is a directory
  std::string canonical;
};

// The caller's own paths (the workspace, the writable roots, --hide) are
// opened later through no symlink and no "..", so that
// nothing a command of an earlier run planted (a symlink in the workspace
// to /etc) can widen what a later run may write. Checked here, before
// anything is made, so the refusal names the option and the path to give
// instead, not the mount step that would have failed.
Result<void> plain_path(std::string_view option, const std::string& path, SeenPlain* seen = nullptr) {
  auto resolved = [&]() -> std::string {
    char real[PATH_MAX];
    return ::realpath(path.c_str(), real) != nullptr ? std::string(real) : std::string();
  };
  std::string prefix;
  std::string_view rest(path);
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    // "." names the directory it is in: nothing to resolve or to race.
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      const std::string real = resolved();
      return fail(bad(option, path,
                      real.empty() ? std::string("a '..' component (name the path plainly)")
                                   : fmt::format("a '..' component: give {}", real)));
    }
    prefix += '/';
    prefix += part;
    struct stat st{};
    if (::lstat(prefix.c_str(), &st) != 0) return {};  // a missing path is refused by the checks that need it
    if (!S_ISLNK(st.st_mode)) {
      if (seen != nullptr && rest.empty() && path.front() == '/' && path.back() != '/')
        *seen = SeenPlain{true, S_ISDIR(st.st_mode), prefix};
      continue;
    }
    char target[PATH_MAX];
    const ssize_t n = ::readlink(prefix.c_str(), target, sizeof target - 1);
    const std::string to = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string("?");
    const std::string real = resolved();
    const std::string where = prefix == path ? std::string("is a symlink") : fmt::format("{} is a symlink", prefix);
    return fail(bad(option, path,
                    fmt::format("{} to {} (nsrun follows none in a path it makes writable or protects){}", where, to,
                                real.empty() ? std::string() : fmt::format(": give {}", real))));
  }
  return {};
}

// The components of a path inside the sandbox: whether one is "..", and
// whether all are empty or "." (the path names the root).
struct Components {
  bool dot_dot = false;
  bool root = true;
};
Components components(std::string_view path) {
  Components c;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (part == "..") c.dot_dot = true;
    else if (!part.empty() && part != ".") c.root = false;
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return c;
}

bool binds(MountOp::Kind k) {
  return k == MountOp::Kind::bind || k == MountOp::Kind::ro_bind || k == MountOp::Kind::dev_bind;
}

// The option a mount is named by in errors: as the front end says the user
// typed it, else by its kind (bwrap's spelling, and JSON's kind names).
std::string option_of(const Policy& p, std::size_t i, std::span<const std::string> typed) {
  if (i < typed.size() && !typed[i].empty()) return typed[i];
  return fmt::format("--{}", name(p.mounts[i].kind));
}

bool layered(MountOp::Kind k) {
  return binds(k) || k == MountOp::Kind::overlay || k == MountOp::Kind::tmp_overlay || k == MountOp::Kind::ro_overlay;
}

// A path of a bind or an overlay that cannot be used: marked so that the
// bwrap dialect words it as bwrap does ("Can't find source path").
Result<void> mount_path(MountOp::Kind k, Result<void> r) {
  if (!r && layered(k) && !r.error().path.empty()) r.error().op = Operation::find_source;
  return r;
}

// A NUL ends a string at the system call: "/\0/var/tmp/x" reaches the
// kernel as "/", so a writable root that looked narrow would be the whole
// file system. Every string of the Policy that becomes a path, a name, an
// argument or an environment entry is checked here, once, whichever front
// end filled it. (File contents, MountOp::data, may hold any byte.)
Result<void> no_nul(std::string_view field, const std::string& value) {
  if (value.find('\0') == std::string::npos) return {};
  return fail(bad(field, value, "contains a NUL byte"));
}

Result<void> no_nul_anywhere(const Policy& p, std::span<const std::string> mount_options) {
  auto each = [](std::string_view field, const std::vector<std::string>& values) -> Result<void> {
    for (const auto& v : values)
      if (auto r = no_nul(field, v); !r) return r;
    return {};
  };
  for (const auto& [field, value] :
       {std::pair<std::string_view, const std::string*>{"--workspace", &p.workspace},
        {"--hostname", &p.hostname},
        {"--host-backend", &p.host_backend},
        {"--chdir", &p.chdir},
        {"--report", &p.report_path},
        {"--argv0", &p.argv0}})
    if (auto r = no_nul(field, *value); !r) return r;
  if (auto r = each("--writable", p.writable); !r) return r;
  if (auto r = each("--cap-add", p.cap_add); !r) return r;
  if (auto r = each("--lock-file", p.lock_files); !r) return r;
  if (auto r = each("command", p.argv); !r) return r;
  for (std::size_t i = 0; i < p.mounts.size(); ++i) {
    const MountOp& m = p.mounts[i];
    const std::string option = option_of(p, i, mount_options);
    for (const std::string* s : {&m.source, &m.dest, &m.workdir})
      if (auto r = mount_path(m.kind, no_nul(option, *s)); !r) return r;
    if (auto r = mount_path(m.kind, each(option, m.layers)); !r) return r;
  }
  for (const auto& e : p.env) {
    const std::string option = fmt::format("--{}env", name(e.kind));
    if (auto r = no_nul(option, e.name); !r) return r;
    if (auto r = no_nul(option, e.value); !r) return r;
  }
  return {};
}

// One mount of the policy (validate() below); `option` names it in errors.
Result<void> check_mount(const Policy& p, const MountOp& m, const std::string& option) {
  if (auto r = absolute(option, m.dest); !r) return r;
  // With the preset, the policy's own mounts follow the private /dev,
  // /proc and /tmp; a bind or overlay on / would cover them all again.
  // Without it (bwrap's dialect) the order is the
  // caller's, as in bwrap.
  const bool layered_kind = layered(m.kind);
  if (p.preset && p.mode != Mode::full_access) {
    // ".." is resolved in the new root, through its symlinks (/var/run/..
    // is /): no lexical check could say where it lands.
    const Components c = components(m.dest);
    if (c.dot_dot) return fail(bad(option, m.dest, "a '..' component (name the destination plainly)"));
    if (layered_kind && c.root)
      return fail(bad(option, m.dest, "would cover the sandbox's own /proc, /dev and /tmp (use --writable / for "
                                      "a writable host)"));
  }
  // Bind sources are not looked at here: the executor opens each through
  // no symlink while it binds, and a second look before it would only
  // halve the launches that get through a racing writer (the race tests
  // need some to), not keep anything more.
  if (!p.follow_symlinks && m.kind == MountOp::Kind::hide)
    if (auto r = plain_path(option, m.dest); !r) return r;
  if (binds(m.kind) && !m.optional && !m.source_fd)
    if (auto r = existing(option, m.source); !r) return r;
  if (binds(m.kind) && m.optional)
    if (auto r = absolute(option, m.source); !r) return r;
  if (m.kind == MountOp::Kind::overlay || m.kind == MountOp::Kind::tmp_overlay ||
      m.kind == MountOp::Kind::ro_overlay) {
    if (m.layers.empty()) return fail(bad(option, m.dest, "no lower layer"));
    for (const auto& layer : m.layers)
      if (auto r = existing(option, layer); !r) return r;
    if (m.kind == MountOp::Kind::overlay) {
      if (auto r = existing(option, m.source); !r) return r;
      if (auto r = existing(option, m.workdir); !r) return r;
    }
  }
  if (m.kind == MountOp::Kind::symlink && m.source.empty())
    return fail(bad(option, m.dest, "empty symlink target"));
  if (m.kind == MountOp::Kind::chmod && !m.perms)
    return fail(bad(option, m.dest, "no mode given"));
  return {};
}

}  // namespace

// --network proxy: the rules are parsed here, so a bad pattern
// is a usage error before anything runs; they mean nothing without the mode.
Result<void> validate_egress(const Policy& p) {
  if (p.network != Network::proxy) {
    if (p.egress == EgressRules{}) return {};
    const char* option = !p.egress.allow.empty()  ? "--allow-host"
                         : !p.egress.deny.empty() ? "--deny-host"
                         : !p.egress.resolve.empty() ? "--resolve-host"
                                                     : "--network-log";
    return fail(usage_error(option, "needs --network proxy"));
  }
  if (p.egress.allow.empty()) return fail(usage_error("--network proxy", "no --allow-host: nothing could be reached"));
  if (auto r = hosts::parse_rules(p.egress.allow, p.egress.deny); !r) return fail(r.error());
  return {};
}

namespace {

// The workspace or a --writable directory: named plainly (unless symlinks
// are followed), an existing directory, outside /proc, /sys and /dev.
// When plain_path() saw every component, what stat() and realpath() would
// say of it is known already: one lstat per component in all.
Result<void> writable_root(std::string_view option, const std::string& path, bool follow_symlinks) {
  SeenPlain seen;
  if (!follow_symlinks)
    if (auto r = plain_path(option, path, &seen); !r) return r;
  if (!seen.whole) {
    if (auto r = existing_dir(option, path); !r) return r;
    return outside_private_mounts(option, path);
  }
  if (!seen.dir) return fail(bad(option, path, "not a directory"));
  return outside_private_mounts(option, path, &seen.canonical);
}

}  // namespace

Result<void> validate(const Policy& p, bool need_command, std::span<const std::string> mount_options) {
  if (auto r = no_nul_anywhere(p, mount_options); !r) return r;
  if (need_command && p.argv.empty()) return fail(usage_error("command", "no command given"));
  if (!p.argv.empty() && p.argv.front().empty()) return fail(usage_error("command", "empty command name"));

  if (auto r = validate_layers(p); !r) return r;
  if (p.mode == Mode::read_only && !p.writable.empty())
    return fail(usage_error("--writable", "cannot be used with --mode read-only"));

  if (p.mode != Mode::full_access && p.preset) {
    if (auto r = writable_root("--workspace", p.workspace, p.follow_symlinks); !r) return r;
  }
  for (const auto& dir : p.writable)
    if (auto r = writable_root("--writable", dir, p.follow_symlinks); !r) return r;

  for (std::size_t i = 0; i < p.mounts.size(); ++i) {
    const MountOp& m = p.mounts[i];
    if (auto r = mount_path(m.kind, check_mount(p, m, option_of(p, i, mount_options))); !r) return r;
    if (m.perms && *m.perms > 07777)
      return fail(bad("--perms", m.dest, fmt::format("mode {:o} out of range", *m.perms)));
  }

  for (const auto& s : p.hidden_sockets)
    if (auto r = absolute("hidden_sockets", s); !r) return r;
  for (const auto& s : p.allow_sockets)
    if (auto r = absolute("--allow-socket", s); !r) return r;
  if (auto r = validate_protection(p); !r) return r;

  if (!p.chdir.empty())
    if (auto r = absolute("--chdir", p.chdir); !r) return r;

  for (const auto& e : p.env) {
    const std::string env_option = e.kind == EnvOp::Kind::allow  ? "--env-allow"
                                   : e.kind == EnvOp::Kind::deny ? "--env-deny"
                                                                 : fmt::format("--{}env", name(e.kind));
    if (e.name.empty()) return fail(usage_error(env_option, "empty variable name"));
    if ((e.kind == EnvOp::Kind::set || e.kind == EnvOp::Kind::unset) &&
        e.name.find('=') != std::string::npos)
      return fail(usage_error(fmt::format("--{}env", name(e.kind)), fmt::format("'{}' is not a variable name", e.name)));
  }

  for (int fd : p.pass_fds) {
    if (fd <= 2) return fail(usage_error("--pass-fd", fmt::format("{}: only descriptors above 2 can be passed", fd)));
    if (::fcntl(fd, F_GETFD) < 0) return fail(usage_error("--pass-fd", fmt::format("{}: not an open descriptor", fd)));
  }
  if (p.report_fd && ::fcntl(*p.report_fd, F_GETFD) < 0)
    return fail(usage_error("--report-fd", fmt::format("{}: not an open descriptor", *p.report_fd)));

  if (auto r = validate_egress(p); !r) return r;

  // With --allow-nested-userns the default filter lets the mount calls
  // through for the nested namespace's sake; a CAP_SYS_ADMIN kept in the
  // sandbox's own namespace would turn them on the sandbox's own mounts
  // (unmounting a protected path's read-only cover).
  if (p.allow_nested_userns && p.seccomp != SeccompMode::none)
    for (const auto& cap : p.cap_add)
      if (strcasecmp(cap.c_str(), "CAP_SYS_ADMIN") == 0 || strcasecmp(cap.c_str(), "SYS_ADMIN") == 0 ||
          strcasecmp(cap.c_str(), "ALL") == 0)
        return fail(usage_error("--cap-add", fmt::format("{} with --allow-nested-userns and the default filter would let the command "
                                                         "remount the sandbox's own tree (add --seccomp none to mean it)", cap)));

  // --watch-writes observes a confined command for the report or the
  // verdict: without a sandbox there is nothing to watch, without either
  // nobody would see what it saw (and the command would pay for nothing).
  if (p.watch_writes && p.mode == Mode::full_access)
    return fail(usage_error("--watch-writes", "full-access runs the command unconfined: there is no filter to watch with"));
  if (p.watch_writes && p.report_path.empty() && !p.report_fd && !p.verdict)
    return fail(usage_error("--watch-writes", "nothing would show the observations (add --report FILE or --verdict)"));

  return {};
}

}  // namespace nsrun
