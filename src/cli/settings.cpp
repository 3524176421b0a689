#include "cli/settings.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/core.h>

#include "policy/json.hpp"
#include "sys/fd.hpp"
#include "sys/io.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

using Shape = SettingKey::Shape;
using N = Narrowing;

long long limit(const std::optional<uint64_t>& v) {
  return v ? static_cast<long long>(std::min<uint64_t>(*v, LLONG_MAX)) : LLONG_MAX;
}

// /tmp writable or bound from the host: more than the private one.
long long tmp_reach(const Policy& p) {
  long long n = std::count(p.writable.begin(), p.writable.end(), "/tmp");
  for (const auto& m : p.mounts)
    if (m.dest == "/tmp" && m.kind == MountOp::Kind::bind) ++n;
  return n;
}

}  // namespace

std::span<const SettingKey> settings_keys() {
  // Each key is one native option by another spelling. A workspace file
  // may use a key only as far as its `narrowing` lets it: the scales
  // below order each value by what it lets the command do (lowest:
  // least).
  static const SettingKey keys[] = {
      {.path = "mode", .option = "--mode", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long {
         return p.mode == Mode::read_only ? 0 : p.mode == Mode::workspace_write ? 1 : 2;
       },
       .help = "read-only, workspace-write or full-access"},
      {.path = "workspace_mode", .option = "--workspace-mode", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long { return p.workspace_mode == WorkspaceMode::cow ? 0 : 1; },
       .help = "direct or cow (writes go to a run layer, reviewed with nsrun changes)"},
      {.path = "home", .option = "--home", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long {
         return p.home == HomeMode::ro ? 0 : p.home == HomeMode::cow ? 1 : 2;
       },
       .help = "cow, ro or rw"},
      {.path = "seccomp", .option = "--seccomp", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long {
         return p.seccomp == SeccompMode::standard ? 0 : p.seccomp == SeccompMode::log ? 1 : 2;
       },
       .help = "default, log or none"},

      {.path = "filesystem.writable", .option = "--writable", .shape = Shape::list, .paths = true,
       .help = "more writable roots"},
      {.path = "filesystem.read_only", .option = "--ro", .shape = Shape::list, .paths = true,
       .narrowing = N::always, .help = "paths kept read-only, even inside a writable root"},
      {.path = "filesystem.hide", .option = "--hide", .shape = Shape::list, .paths = true, .narrowing = N::always,
       .help = "paths covered by an empty read-only directory"},
      {.path = "filesystem.allow_read", .option = "--allow-read", .shape = Shape::list, .paths = true,
       .help = "default credential paths left readable"},
      {.path = "filesystem.protect", .option = "--protect", .shape = Shape::list, .paths = true,
       .narrowing = N::always, .help = "more protected paths in every writable root"},
      {.path = "filesystem.unprotect", .option = "--unprotect", .shape = Shape::list,
       .help = "protected paths dropped from the default set"},
      {.path = "filesystem.tmp", .option = "--tmp", .paths = true, .narrowing = N::measured, .measure = tmp_reach,
       .help = "private, host or a directory"},
      {.path = "filesystem.hide_defaults", .option = "--hide-defaults", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long { return p.hide_defaults ? 0 : 1; },
       .help = "default or none"},
      {.path = "filesystem.protect_defaults", .option = "--protect-defaults", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long { return p.protect_defaults ? 0 : 1; },
       .help = "default or none"},
      {.path = "filesystem.settings_copy", .option = "--no-settings-copy", .shape = Shape::flag, .when = false,
       .narrowing = N::always, .help = "false: hide ~/.npmrc and ~/.pypirc whole"},

      {.path = "network.mode", .option = "--network", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long {
         return p.network == Network::none ? 0 : p.network == Network::proxy ? 1 : 2;
       },
       .help = "share, none or proxy"},
      {.path = "network.allow", .option = "--allow-host", .shape = Shape::list,
       .help = "hosts the proxy lets the command reach"},
      {.path = "network.deny", .option = "--deny-host", .shape = Shape::list, .narrowing = N::always,
       .help = "hosts never reached, even when allowed"},
      {.path = "network.resolve", .option = "--resolve-host", .shape = Shape::list,
       .help = "NAME=ADDRESS pairs the proxy resolves itself"},
      {.path = "network.offline_env", .option = "--no-offline-env", .shape = Shape::flag, .when = false,
       .help = "false: no package-manager offline switches with network none"},
      {.path = "network.unix_sockets", .option = "--unix-sockets", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long { return p.unix_sockets == UnixSockets::none ? 0 : 1; },
       .help = "hide-known or none"},
      {.path = "network.allow_sockets", .option = "--allow-socket", .shape = Shape::list, .paths = true,
       .help = "well-known host sockets left visible"},

      {.path = "limits.memory", .option = "--limit-memory", .narrowing = N::measured,
       .measure = [](const Policy& p) { return limit(p.limits.memory); }, .help = "512M, 2G"},
      {.path = "limits.pids", .option = "--limit-pids", .narrowing = N::measured,
       .measure = [](const Policy& p) { return limit(p.limits.pids); }, .help = "processes and threads at once"},
      {.path = "limits.cpu", .option = "--limit-cpu", .narrowing = N::measured,
       .measure = [](const Policy& p) { return limit(p.limits.cpu_millis); }, .help = "cores: \"0.5\", 2"},
      {.path = "limits.timeout", .option = "--timeout", .narrowing = N::measured,
       .measure = [](const Policy& p) { return limit(p.limits.timeout_ms); }, .help = "30s, 10m"},
      {.path = "limits.tmpfs_size", .option = "--tmpfs-size", .narrowing = N::measured,
       .measure = [](const Policy& p) { return limit(p.limits.tmpfs_size); }, .help = "size of each tmpfs"},
      {.path = "limits.mode", .option = "--limits", .narrowing = N::measured,
       .measure = [](const Policy& p) -> long long {
         return p.limits.mode == LimitsMode::require_cgroup ? 0 : p.limits.mode == LimitsMode::strict ? 1 : 2;
       },
       .help = "strict, best-effort or require-cgroup"},

      {.path = "env.clear", .option = "--clearenv", .shape = Shape::flag, .narrowing = N::always,
       .help = "true: start from an empty environment"},
      {.path = "env.allow", .option = "--env-allow", .shape = Shape::list, .narrowing = N::always,
       .help = "keep only variables matching these globs"},
      {.path = "env.deny", .option = "--env-deny", .shape = Shape::list, .narrowing = N::always,
       .help = "remove variables matching these globs"},
      {.path = "env.unset", .option = "--unsetenv", .shape = Shape::list, .narrowing = N::always,
       .help = "remove these variables"},
      {.path = "env.set", .option = "--setenv", .shape = Shape::map, .help = "NAME: VALUE pairs to set"},
  };
  return keys;
}

namespace {

using json::Value;

std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    prev.swap(cur);
  }
  return prev[b.size()];
}

// One refusal: "<file>: <key>: <why>".
Error refused(const SettingsFile& f, std::string_view key, std::string_view why) {
  return usage_error(key.empty() ? f.path : fmt::format("{}: {}", f.path, key), why);
}

const SettingKey* find_key(std::string_view path) {
  for (const auto& k : settings_keys())
    if (k.path == path) return &k;
  return nullptr;
}

bool is_section(std::string_view path) {
  for (const auto& k : settings_keys())
    if (k.path.starts_with(path) && k.path.size() > path.size() && k.path[path.size()] == '.') return true;
  return false;
}

std::string unknown_key(std::string_view path) {
  const SettingKey* best = nullptr;
  std::size_t best_d = SIZE_MAX;
  const std::string_view last = path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1);
  for (const auto& k : settings_keys()) {
    std::size_t d = distance(path, k.path);
    // The same name in another section (allow_read at the top level).
    if (k.path.ends_with(last) && k.path[k.path.size() - last.size() - 1] == '.') d = std::min<std::size_t>(d, 1);
    if (d < best_d) best_d = d, best = &k;
  }
  if (best != nullptr && best_d <= 2)
    return fmt::format("unknown key; did you mean {}? (the keys: docs/settings.md)", best->path);
  return "unknown key (the keys: docs/settings.md)";
}

// ~ and ${HOME}, ${WORKSPACE}: so one file fits every workspace.
Result<std::string> expand(const SettingsFile& f, std::string_view key, const std::string& value, bool paths,
                           const SettingsVars& vars) {
  std::string in = value, out;
  if (paths && in.starts_with('~')) {
    if (in.size() > 1 && in[1] != '/')
      return fail(refused(f, key, fmt::format("'{}': only ~ and ~/ are expanded, not ~user", value)));
    if (vars.home.empty()) return fail(refused(f, key, "~ needs a home directory, and none is known (set HOME)"));
    in = vars.home + in.substr(1);
  }
  for (std::size_t at = 0; at < in.size();) {
    const std::size_t open = in.find("${", at);
    if (open == std::string::npos) {
      out += in.substr(at);
      break;
    }
    out += in.substr(at, open - at);
    const std::size_t close = in.find('}', open);
    if (close == std::string::npos) return fail(refused(f, key, fmt::format("'{}': an unclosed ${{", value)));
    const std::string name = in.substr(open + 2, close - open - 2);
    const std::string* v = name == "WORKSPACE" ? &vars.workspace : name == "HOME" ? &vars.home : nullptr;
    if (v == nullptr)
      return fail(refused(f, key, fmt::format("'{}': unknown variable ${{{}}} (known: ${{WORKSPACE}}, ${{HOME}})",
                                              value, name)));
    if (v->empty()) return fail(refused(f, key, fmt::format("'{}': ${{{}}} is not known here", value, name)));
    out += *v;
    at = close + 1;
  }
  return out;
}

Result<std::string> scalar(const SettingsFile& f, std::string_view key, const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_int()) return std::to_string(v.as_int());
  return fail(refused(f, key, fmt::format("expected a string, got {}", v.type_name())));
}

// One application of a key's option: the key path it came from, the values.
struct Use {
  const SettingKey* key;
  std::string path;  // with an index or a name: network.allow[1], env.set.PATH
  std::vector<std::string> values;
};

Result<void> collect(const SettingsFile& f, const SettingsVars& vars, const Value& obj, const std::string& prefix,
                     std::vector<Use>& uses) {
  std::vector<std::string_view> seen;
  for (const auto& [name, value] : obj.as_object()) {
    const std::string path = prefix.empty() ? name : fmt::format("{}.{}", prefix, name);
    if (std::find(seen.begin(), seen.end(), name) != seen.end())
      return fail(refused(f, path, "given twice"));
    seen.push_back(name);
    if (prefix.empty() && name == "$schema") continue;  // for editors
    const SettingKey* k = find_key(path);
    if (k == nullptr) {
      if (is_section(path)) {
        if (!value.is_object()) return fail(refused(f, path, fmt::format("expected an object, got {}", value.type_name())));
        if (auto r = collect(f, vars, value, path, uses); !r) return r;
        continue;
      }
      return fail(refused(f, path, unknown_key(path)));
    }
    switch (k->shape) {
      case Shape::one: {
        auto s = scalar(f, path, value);
        if (!s) return fail(s.error());
        auto e = expand(f, path, *s, k->paths, vars);
        if (!e) return fail(e.error());
        uses.push_back({k, path, {std::move(*e)}});
        break;
      }
      case Shape::list: {
        if (!value.is_array())
          return fail(refused(f, path, fmt::format("expected an array of strings, got {}", value.type_name())));
        std::size_t i = 0;
        for (const Value& item : value.as_array()) {
          const std::string at = fmt::format("{}[{}]", path, i++);
          auto s = scalar(f, at, item);
          if (!s) return fail(s.error());
          auto e = expand(f, at, *s, k->paths, vars);
          if (!e) return fail(e.error());
          uses.push_back({k, at, {std::move(*e)}});
        }
        break;
      }
      case Shape::map: {
        if (!value.is_object())
          return fail(refused(f, path, fmt::format("expected an object of strings, got {}", value.type_name())));
        for (const auto& [var, item] : value.as_object()) {
          const std::string at = fmt::format("{}.{}", path, var);
          auto s = scalar(f, at, item);
          if (!s) return fail(s.error());
          auto e = expand(f, at, *s, false, vars);
          if (!e) return fail(e.error());
          uses.push_back({k, at, {var, std::move(*e)}});
        }
        break;
      }
      case Shape::flag:
        if (!value.is_bool()) return fail(refused(f, path, fmt::format("expected true or false, got {}", value.type_name())));
        if (value.as_bool() == k->when) uses.push_back({k, path, {}});
        break;
    }
  }
  return {};
}

std::string shown(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ' ';
    const bool plain = !v.empty() && v.find_first_of(" \t'\"\\$") == std::string::npos;
    out += plain ? v : json::quote(v);
  }
  return out;
}

}  // namespace

Result<void> apply_settings(const SettingsFile& file, const SettingsVars& vars, NativeParse& state, Policy& p,
                            std::vector<SettingSource>& sources) {
  auto doc = json::parse(file.text);
  if (!doc) return fail(refused(file, "", doc.error().detail));
  if (!doc->is_object()) return fail(refused(file, "", fmt::format("expected an object, got {}", doc->type_name())));
  std::vector<Use> uses;
  if (auto r = collect(file, vars, *doc, "", uses); !r) return r;

  // Applied to a copy: nothing of a refused file is kept.
  Policy work = p;
  std::vector<std::string> names = state.inv.mount_options;
  std::vector<SettingSource> added;
  for (const Use& u : uses) {
    const OptionSpec* opt = find_option(Dialect::native, u.key->option);
    if (opt == nullptr) return fail(refused(file, u.path, fmt::format("{} is not an option of this nsrun", u.key->option)));
    Policy after = work;
    OptionCall call{after, u.values, u.path, &state, nullptr};
    if (auto r = opt->set(call); !r) {
      Error e = r.error();
      if (e.step != u.path) e.detail = e.message(), e.path.clear(), e.err = 0;
      e.step = fmt::format("{}: {}", file.path, u.path);
      return fail(std::move(e));
    }
    if (file.narrow_only) {
      if (u.key->narrowing == Narrowing::never)
        return fail(refused(file, u.path,
                            fmt::format("a workspace's settings may only narrow, and this widens what the command may "
                                        "do (put it in your own settings file, or give {})",
                                        u.key->option)));
      if (u.key->narrowing == Narrowing::measured && u.key->measure(after) > u.key->measure(work))
        return fail(refused(file, u.path,
                            fmt::format("'{}' widens what the user's settings and nsrun's defaults allow; a "
                                        "workspace's settings may only narrow (give {} yourself to mean it)",
                                        shown(u.values), u.key->option)));
    }
    work = std::move(after);
    names.resize(work.mounts.size(), fmt::format("{}: {}", file.path, u.path));
    added.push_back({file.path, u.path, std::string(u.key->option), u.values});
  }
  p = std::move(work);
  state.inv.mount_options = std::move(names);
  sources.insert(sources.end(), added.begin(), added.end());
  return {};
}

Result<std::optional<std::string>> read_settings_text(const std::string& path, bool workspace_file) {
  auto why = [&](std::string_view text) { return fail(usage_error(path, text)); };
  // O_NONBLOCK: a FIFO planted at the name must not hang the launch.
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (workspace_file ? O_NOFOLLOW : 0);
  Fd fd(workspace_file ? sys::openat2(AT_FDCWD, path.c_str(), flags, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
                       : ::open(path.c_str(), flags));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return std::optional<std::string>();
    if (workspace_file && err == ELOOP) {
      // The workspace itself named through a symlink: --workspace's own
      // check refuses that, naming the path to give; there is no file of
      // the workspace's to read until then.
      const std::string dir = path.substr(0, path.find_last_of('/'));
      Fd d(sys::openat2(AT_FDCWD, dir.empty() ? "/" : dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                        RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
      if (!d && errno == ELOOP) return std::optional<std::string>();
      return why("a symlink is on its way, and nsrun reads a workspace's settings through none (the command may "
                 "have put it there)");
    }
    return why(std::strerror(err));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return why(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return why("not a regular file");
  if (workspace_file && st.st_nlink != 1)
    return why(fmt::format("has {} hard links; nsrun reads a workspace's settings only from a file of its own",
                           st.st_nlink));
  if (static_cast<std::size_t>(st.st_size) > settings_max_bytes)
    return why(fmt::format("larger than {} bytes", settings_max_bytes));
  auto text = read_all(fd.get(), "read", path, settings_max_bytes);
  if (!text) return why(text.error().err == EFBIG ? fmt::format("larger than {} bytes", settings_max_bytes)
                                                  : std::string(std::strerror(text.error().err)));
  return std::optional<std::string>(std::move(*text));
}

std::string explain_sources(std::span<const SettingSource> sources) {
  std::string out;
  for (const auto& s : sources) {
    if (s.key.empty())
      out += fmt::format("{}: {}{}{}\n", s.origin, s.option, s.values.empty() ? "" : " ", shown(s.values));
    else
      out += fmt::format("{}: {}{}{} (as {}{}{})\n", s.origin, s.key, s.values.empty() ? "" : " = ", shown(s.values),
                         s.option, s.values.empty() ? "" : " ", shown(s.values));
  }
  out += "everything else: nsrun's defaults (later lines win; lists add up; nsrun policy prints the result)\n";
  return out;
}

}  // namespace nsrun
