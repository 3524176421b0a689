#include "policy/validate.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include <fmt/format.h>

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

bool binds(MountOp::Kind k) {
  return k == MountOp::Kind::bind || k == MountOp::Kind::ro_bind || k == MountOp::Kind::dev_bind;
}

std::string option_of(MountOp::Kind k) { return fmt::format("--{}", name(k)); }

// A NUL ends a string at the system call: "/\0/var/tmp/x" reaches the
// kernel as "/", so a writable root that looked narrow would be the whole
// file system. Every string of the Policy that becomes a path, a name, an
// argument or an environment entry is checked here, once, whichever front
// end filled it. (File contents, MountOp::data, may hold any byte.)
Result<void> no_nul(std::string_view field, const std::string& value) {
  if (value.find('\0') == std::string::npos) return {};
  return fail(bad(field, value, "contains a NUL byte"));
}

Result<void> no_nul_anywhere(const Policy& p) {
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
  for (const auto& m : p.mounts) {
    const std::string option = option_of(m.kind);
    for (const std::string* s : {&m.source, &m.dest, &m.workdir})
      if (auto r = no_nul(option, *s); !r) return r;
    if (auto r = each(option, m.layers); !r) return r;
  }
  for (const auto& e : p.env) {
    const std::string option = fmt::format("--{}env", name(e.kind));
    if (auto r = no_nul(option, e.name); !r) return r;
    if (auto r = no_nul(option, e.value); !r) return r;
  }
  return {};
}

}  // namespace

Result<void> validate(const Policy& p, bool need_command) {
  if (auto r = no_nul_anywhere(p); !r) return r;
  if (need_command && p.argv.empty()) return fail(usage_error("command", "no command given"));
  if (!p.argv.empty() && p.argv.front().empty()) return fail(usage_error("command", "empty command name"));

  if (p.mode == Mode::read_only && !p.writable.empty())
    return fail(usage_error("--writable", "cannot be used with --mode read-only"));

  if (p.mode != Mode::full_access && p.preset) {
    if (auto r = existing_dir("--workspace", p.workspace); !r) return r;
  }
  for (const auto& dir : p.writable)
    if (auto r = existing_dir("--writable", dir); !r) return r;

  for (const auto& m : p.mounts) {
    const std::string option = option_of(m.kind);
    if (auto r = absolute(option, m.dest); !r) return r;
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
    if (m.perms && *m.perms > 07777)
      return fail(bad("--perms", m.dest, fmt::format("mode {:o} out of range", *m.perms)));
  }

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

  return {};
}

}  // namespace nsrun
