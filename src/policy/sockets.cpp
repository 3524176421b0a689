#include "policy/sockets.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace nsrun {

namespace {

bool absolute(const std::string& p) { return !p.empty() && p.front() == '/'; }

std::string without_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

std::vector<KnownSocket> well_known_sockets(const SocketEnv& env) {
  std::vector<KnownSocket> out = {
      // Container engines: whoever reaches these runs containers as the
      // engine's user (root for the system ones), the host's / mounted.
      {"/run/docker.sock", false, "Docker engine"},
      {"/var/run/docker.sock", false, "Docker engine"},
      {"/run/podman/podman.sock", false, "Podman (system)"},
      {"/run/containerd/containerd.sock", false, "containerd"},
      // The system bus: systemd, polkit, NetworkManager, udisks...
      {"/run/dbus/system_bus_socket", false, "D-Bus system bus"},
      {"/var/run/dbus/system_bus_socket", false, "D-Bus system bus"},
      // X11: any client may read keystrokes and the screen of the others.
      {"/tmp/.X11-unix", true, "X11 display sockets"},
  };
  if (absolute(env.xdg_runtime_dir)) {
    const std::string run = without_slash(env.xdg_runtime_dir);
    out.push_back({run + "/bus", false, "D-Bus session bus"});
    out.push_back({run + "/podman/podman.sock", false, "Podman (rootless)"});
    out.push_back({run + "/docker.sock", false, "Docker engine (rootless)"});
    out.push_back({run + "/gnupg", true, "gpg-agent"});
    // Wayland compositors listen on wayland-0, wayland-1, ...; the common
    // first few (a directory listing would make the list depend on more
    // than the environment).
    for (int i = 0; i < 4; ++i) out.push_back({run + "/wayland-" + std::to_string(i), false, "Wayland compositor"});
  }
  if (absolute(env.ssh_auth_sock)) out.push_back({env.ssh_auth_sock, false, "ssh-agent ($SSH_AUTH_SOCK)"});
  if (absolute(env.home)) {
    const std::string gnupg = without_slash(env.home) + "/.gnupg/";
    for (const char* name : {"S.gpg-agent", "S.gpg-agent.ssh", "S.gpg-agent.extra", "S.gpg-agent.browser"})
      out.push_back({gnupg + name, false, "gpg-agent"});
  }
  return out;
}

std::optional<FoundPath> lookup_host_path(const std::string& path) {
  // One stat() for the usual answer, "not there"; realpath() (a readlink
  // per component) only for what exists. This runs on every launch.
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return std::nullopt;
  return FoundPath{real, S_ISDIR(st.st_mode)};
}

std::vector<std::string> sockets_to_hide(const std::vector<KnownSocket>& candidates,
                                         const std::vector<std::string>& already,
                                         const std::vector<std::string>& allowed, const PathLookup& lookup) {
  // Allowed paths, canonical where they exist, as given otherwise.
  std::vector<std::string> allow;
  for (const auto& a : allowed) {
    allow.push_back(without_slash(a));
    if (auto found = lookup(a)) allow.push_back(found->real);
  }
  auto allowed_path = [&](const std::string& p) {
    return std::find(allow.begin(), allow.end(), without_slash(p)) != allow.end();
  };
  std::vector<std::string> out;
  auto add = [&](std::string p) {
    if (allowed_path(p) || std::find(out.begin(), out.end(), p) != out.end()) return;
    out.push_back(std::move(p));
  };
  for (const auto& p : already) add(p);
  for (const auto& c : candidates) {
    if (allowed_path(c.path)) continue;
    auto found = lookup(c.path);
    if (!found || found->dir != c.dir) continue;
    add(c.dir ? without_slash(found->real) + "/" : found->real);
  }
  return out;
}

}  // namespace nsrun
