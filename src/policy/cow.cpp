#include "policy/cow.hpp"

#include <limits.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>

#include <fmt/core.h>

namespace nsrun {

std::string_view name(WorkspaceMode m) { return m == WorkspaceMode::cow ? "cow" : "direct"; }

std::string_view name(HomeMode m) {
  switch (m) {
    case HomeMode::ro: return "ro";
    case HomeMode::cow: return "cow";
    case HomeMode::rw: return "rw";
  }
  return "?";
}

std::optional<WorkspaceMode> parse_workspace_mode(std::string_view s) {
  if (s == "direct") return WorkspaceMode::direct;
  if (s == "cow") return WorkspaceMode::cow;
  return std::nullopt;
}

std::optional<HomeMode> parse_home_mode(std::string_view s) {
  if (s == "ro") return HomeMode::ro;
  if (s == "cow") return HomeMode::cow;
  if (s == "rw") return HomeMode::rw;
  return std::nullopt;
}

namespace {
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}
}  // namespace

bool valid_layer_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n.front() == '.') return false;
  for (char c : n)
    if (!name_char(c)) return false;
  return true;
}

bool valid_run_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || n.front() == '.' || n.front() == '_' || n.front() == '-') return false;
  for (char c : n)
    if (!name_char(c)) return false;
  return true;
}

std::string default_layer_name(std::string_view workspace) {
  // FNV-1a: stable across builds and hosts, which std::hash is not.
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : workspace) h = (h ^ c) * 1099511628211ULL;
  std::string_view last = workspace.substr(workspace.find_last_of('/') + 1);
  std::string base;
  for (char c : last.substr(0, 40)) base += name_char(c) ? c : '_';
  while (!base.empty() && base.front() == '.') base.front() = '_';
  if (base.empty()) base = "root";
  return fmt::format("{}-{:08x}", base, static_cast<uint32_t>(h ^ (h >> 32)));
}

std::string default_run_base(std::string_view runtime, std::string_view state, std::string_view home) {
  if (runtime.starts_with('/')) return fmt::format("{}/nsrun/runs", runtime);
  if (state.starts_with('/')) return fmt::format("{}/nsrun/runs", state);
  if (home.starts_with('/') && home != "/") return fmt::format("{}/.local/state/nsrun/runs", home);
  return {};
}

std::string default_home_base(std::string_view state, std::string_view home) {
  if (state.starts_with('/')) return fmt::format("{}/nsrun/home", state);
  if (home.starts_with('/') && home != "/") return fmt::format("{}/.local/state/nsrun/home", home);
  return {};
}

}  // namespace nsrun

#include "policy/paths.hpp"
#include "policy/policy.hpp"

namespace nsrun {

Result<void> validate_layers(const Policy& p) {
  if (p.workspace_mode == WorkspaceMode::cow && p.mode != Mode::workspace_write)
    return fail(usage_error("--workspace-mode", "cow needs --mode workspace-write (the other modes write no workspace)"));
  if (p.workspace_mode == WorkspaceMode::cow && !p.preset)
    return fail(usage_error("--workspace-mode", "cow needs the mode presets (not the bwrap dialect)"));
  if (!p.cow_dir.empty() && !p.cow_dir.starts_with('/'))
    return fail(usage_error("--cow-dir", fmt::format("'{}' is not an absolute path", p.cow_dir)));
  if (!p.home_layer.empty() && !valid_layer_name(p.home_layer))
    return fail(usage_error("--home-layer",
                            fmt::format("'{}' is not a layer name (1 to 64 of A-Z a-z 0-9 . _ -, not starting with .)",
                                        p.home_layer)));
  if (!p.run_id.empty() && p.workspace_mode != WorkspaceMode::cow)
    return fail(usage_error("--run-id", "names a run layer: needs --workspace-mode cow"));
  if (!p.run_id.empty() && !valid_run_name(p.run_id))
    return fail(usage_error("--run-id", fmt::format("'{}' is not a run id (1 to 64 of A-Z a-z 0-9 . _ -, starting "
                                                    "with a letter or a digit)",
                                                    printable(p.run_id))));
  if (p.workspace_mode == WorkspaceMode::cow && run_base_of(p).empty())
    return fail(usage_error("--workspace-mode", "no directory for the run layer: set XDG_RUNTIME_DIR or HOME, or give --cow-dir DIR"));
  return {};
}

}  // namespace nsrun

namespace nsrun {

void resolve_layers(Policy& p, std::string_view runtime, std::string_view state, std::string_view home) {
  CowLayers& l = p.layers;
  if (l.home.empty() && home.starts_with('/') && home != "/") l.home = home;
  if (l.run_base.empty()) l.run_base = default_run_base(runtime, state, l.home);
  if (l.home_base.empty()) l.home_base = default_home_base(state, l.home);
}

}  // namespace nsrun

namespace nsrun {

void settle_layers(Policy& p) {
  p.layers.run_base = run_base_of(p);
  p.layers.home_name = home_name_of(p);
}

std::string run_base_of(const Policy& p) { return p.cow_dir.empty() ? p.layers.run_base : p.cow_dir; }

std::string home_name_of(const Policy& p) {
  return p.home_layer.empty() ? default_layer_name(p.workspace) : p.home_layer;
}

void preview_layers(Policy& p) {
  settle_layers(p);
  CowLayers& l = p.layers;
  if (p.workspace_mode == WorkspaceMode::cow && !l.run_base.empty() && l.workspace.upper.empty())
    l.workspace = {p.workspace, l.run_base + "/<run id>/upper", l.run_base + "/<run id>/work-<launch>"};
  if (p.home == HomeMode::cow && !l.home.empty() && !l.home_base.empty() && l.home_layer.upper.empty()) {
    const std::string dir = l.home_base + "/" + l.home_name;
    l.home_layer = {l.home, dir + "/upper", dir + "/work-<slot>"};
    l.redirect = dir + "/redirect";
  }
}

std::string describe_layers(const Policy& p) {
  std::string out;
  if (p.mode == Mode::workspace_write)
    out += p.workspace_mode == WorkspaceMode::cow
               ? fmt::format("workspace mode: cow (an overlay; writes go to a new run layer under {}, reviewed with "
                             "nsrun changes / commit / discard ID; the Landlock rung refuses it)\n",
                             p.layers.run_base)
               : "workspace mode: direct\n";
  if (p.layers.home.empty()) {
    out += "home: none ($HOME is not a directory)\n";
  } else if (p.home == HomeMode::cow) {
    out += fmt::format("home: cow ({} is an overlay; writes go to the layer {} under {}, hidden inside; nsrun home "
                       "diff / reset; where the overlay is refused (kernel, file system, the Landlock rung) the "
                       "home stays read-only and the well-known caches go to {}: the report says cache-redirect, and stderr too when --home cow is "
                       "given)\n",
                       p.layers.home, p.layers.home_name, p.layers.home_base,
                       p.layers.redirect.empty() ? p.layers.home_base + "/" + p.layers.home_name + "/redirect"
                                                 : p.layers.redirect);
  } else {
    out += fmt::format("home: {} ({})\n", name(p.home),
                       p.home == HomeMode::rw ? "bound writable: the command can change it" : "read-only");
  }
  return out;
}

std::string existing_home_base(const Policy& policy) {
  if (policy.layers.home_base.empty()) return {};
  // One stat() for the usual answer (no home layer was ever made: the base
  // is missing) before realpath()'s readlink of every component (five for
  // ~/.local/state/nsrun/home): both follow symlinks and need the same
  // search rights, so where stat() finds nothing realpath() resolves
  // nothing either.
  struct stat st{};
  if (::stat(policy.layers.home_base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  char real[PATH_MAX];
  if (::realpath(policy.layers.home_base.c_str(), real) == nullptr) return {};
  // Looked at again by its canonical name: what is hidden is what realpath() named.
  if (::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  // --allow-read of it (or above it) shows it, as it shows a credential.
  for (const auto& a : policy.allow_read) {
    char allowed[PATH_MAX];
    if (at_or_below(real, a) || (::realpath(a.c_str(), allowed) != nullptr && at_or_below(real, allowed))) return {};
  }
  return real;
}

void hide_home_base(Policy& p) {
  if (p.preset && p.mode != Mode::full_access && p.hide_defaults && p.home == HomeMode::ro)
    if (std::string base = existing_home_base(p); !base.empty()) p.hidden_paths.push_back(base + "/");
}

}  // namespace nsrun

namespace nsrun {

std::vector<std::pair<std::string, std::string>> cache_redirects(const std::string& dir, std::string_view maven_opts) {
  auto at = [&](std::string_view sub) { return fmt::format("{}/{}", dir, sub); };
  std::string maven = fmt::format("-Dmaven.repo.local={}", at("m2"));
  if (!maven_opts.empty()) maven = fmt::format("{} {}", maven_opts, maven);
  return {
      {"XDG_CACHE_HOME", at("cache")},
      {"npm_config_cache", at("npm")},
      {"PIP_CACHE_DIR", at("pip")},
      {"CARGO_HOME", at("cargo")},
      {"GOCACHE", at("go-build")},
      {"GOMODCACHE", at("go-mod")},
      {"CCACHE_DIR", at("ccache")},
      {"GRADLE_USER_HOME", at("gradle")},
      {"MAVEN_OPTS", std::move(maven)},
  };
}

}  // namespace nsrun
