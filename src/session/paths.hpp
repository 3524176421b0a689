// Where a session lives on the host: its control socket in the caller's
// runtime directory ($XDG_RUNTIME_DIR/nsrun/sessions/NAME.sock; without
// XDG_RUNTIME_DIR, under the state directory), its log and its jobs' logs
// in the caller's state directory ($XDG_STATE_HOME/nsrun/sessions/NAME/,
// else ~/.local/state/nsrun/sessions/NAME/). Every directory is walked
// through no symlink and made 0700 (layers/dirs.hpp); the socket is bound
// and reached through /proc/self/fd/N/NAME.sock of that directory's fd, so
// no path component is looked up twice and sun_path stays short.
#pragma once

#include <string>
#include <string_view>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::session {

// 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'.
bool valid_name(std::string_view name);

struct Places {
  std::string sockets;  // the directory of the control sockets
  std::string state;    // the directory of the sessions' logs
};
// Pure: from the caller's variables (empty: unset). Empty members when
// nothing usable is set.
Places places_from(std::string_view xdg_runtime_dir, std::string_view xdg_state_home, std::string_view home);
Places places();

// The directory, opened (O_PATH) through no symlink; made 0700 when `create`.
Result<Fd> open_sockets_dir(bool create);
Result<Fd> open_state_dir(bool create);

// "/proc/self/fd/N/NAME.sock" for `dir`.
std::string socket_path(const Fd& dir, std::string_view name);

// Connects to session NAME's control socket. ENOENT / ECONNREFUSED: no
// such session (or a stale socket).
Result<Fd> connect_session(std::string_view name);

}  // namespace nsrun::session
