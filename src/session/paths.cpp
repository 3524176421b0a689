#include "session/paths.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "layers/dirs.hpp"

namespace nsrun::session {

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.' || name.front() == '-') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  return true;
}

Places places_from(std::string_view xdg_runtime_dir, std::string_view xdg_state_home, std::string_view home) {
  Places p;
  if (xdg_state_home.starts_with('/')) p.state = fmt::format("{}/nsrun/sessions", xdg_state_home);
  else if (home.starts_with('/')) p.state = fmt::format("{}/.local/state/nsrun/sessions", home);
  if (xdg_runtime_dir.starts_with('/')) p.sockets = fmt::format("{}/nsrun/sessions", xdg_runtime_dir);
  else if (!p.state.empty()) p.sockets = p.state + "/sockets";
  return p;
}

namespace {
std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

Result<Fd> open_place(const std::string& path, std::string_view what, bool create) {
  if (path.empty()) {
    Error e = usage_error("session", "");
    e.detail = fmt::format("no {} directory: set XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME", what);
    return fail(e);
  }
  return layers::open_private_dir(path, 0700, create);
}
}  // namespace

Places places() { return places_from(env("XDG_RUNTIME_DIR"), env("XDG_STATE_HOME"), env("HOME")); }

Result<Fd> open_sockets_dir(bool create) { return open_place(places().sockets, "runtime", create); }
Result<Fd> open_state_dir(bool create) { return open_place(places().state, "state", create); }

std::string socket_path(const Fd& dir, std::string_view name) {
  return fmt::format("/proc/self/fd/{}/{}.sock", dir.get(), name);
}

Result<Fd> connect_session(std::string_view name) {
  auto dir = open_sockets_dir(false);
  if (!dir) return fail(dir.error());
  const std::string path = socket_path(*dir, name);
  Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return fail(sys_error("socket"));
  struct sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return fail(sys_error("connect", path, ENAMETOOLONG));
  std::memcpy(addr.sun_path, path.data(), path.size());
  int r;
  while ((r = ::connect(sock.get(), reinterpret_cast<struct sockaddr*>(&addr), sizeof addr)) < 0 && errno == EINTR) {
  }
  if (r != 0) return fail(sys_error("connect", name));
  return sock;
}

}  // namespace nsrun::session
