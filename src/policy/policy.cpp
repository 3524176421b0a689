#include "policy/policy.hpp"

#include <array>
#include <utility>

namespace nsrun {

namespace {
// One table per enum: the single place where a value meets its name.
template <class E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<Mode, 3> mode_names{{
    {Mode::read_only, "read-only"},
    {Mode::workspace_write, "workspace-write"},
    {Mode::full_access, "full-access"},
}};
constexpr Names<ProcMode, 4> proc_names{{
    {ProcMode::automatic, "auto"},
    {ProcMode::fresh, "fresh"},
    {ProcMode::host_bind, "host-bind"},
    {ProcMode::none, "none"},
}};
constexpr Names<Backend, 3> backend_names{{
    {Backend::automatic, "auto"},
    {Backend::namespaces, "namespaces"},
    {Backend::landlock, "landlock"},
}};
constexpr Names<Network, 3> network_names{{
    {Network::share, "share"},
    {Network::none, "none"},
    {Network::proxy, "proxy"},
}};
constexpr Names<SeccompMode, 3> seccomp_names{{
    {SeccompMode::standard, "default"},
    {SeccompMode::none, "none"},
    {SeccompMode::log, "log"},
}};
constexpr Names<UnixSockets, 2> unix_sockets_names{{
    {UnixSockets::hide_known, "hide-known"},
    {UnixSockets::none, "none"},
}};
constexpr Names<MountOp::Kind, 18> mount_kind_names{{
    {MountOp::Kind::bind, "bind"},
    {MountOp::Kind::ro_bind, "ro-bind"},
    {MountOp::Kind::dev_bind, "dev-bind"},
    {MountOp::Kind::tmpfs, "tmpfs"},
    {MountOp::Kind::hide, "hide"},
    {MountOp::Kind::proc, "proc"},
    {MountOp::Kind::dev, "dev"},
    {MountOp::Kind::mqueue, "mqueue"},
    {MountOp::Kind::dir, "dir"},
    {MountOp::Kind::symlink, "symlink"},
    {MountOp::Kind::file, "file"},
    {MountOp::Kind::bind_data, "bind-data"},
    {MountOp::Kind::ro_bind_data, "ro-bind-data"},
    {MountOp::Kind::remount_ro, "remount-ro"},
    {MountOp::Kind::chmod, "chmod"},
    {MountOp::Kind::overlay, "overlay"},
    {MountOp::Kind::tmp_overlay, "tmp-overlay"},
    {MountOp::Kind::ro_overlay, "ro-overlay"},
}};
constexpr Names<EnvOp::Kind, 4> env_kind_names{{
    {EnvOp::Kind::set, "set"},
    {EnvOp::Kind::unset, "unset"},
    {EnvOp::Kind::allow, "allow"},
    {EnvOp::Kind::deny, "deny"},
}};

template <class E, std::size_t N>
std::string_view lookup(const Names<E, N>& table, E value) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return "?";
}

template <class E, std::size_t N>
std::optional<E> lookup(const Names<E, N>& table, std::string_view text) {
  for (const auto& [v, n] : table)
    if (n == text) return v;
  return std::nullopt;
}
}  // namespace

std::string_view name(Mode v) { return lookup(mode_names, v); }
std::string_view name(ProcMode v) { return lookup(proc_names, v); }
std::string_view name(Backend v) { return lookup(backend_names, v); }
std::string_view name(Network v) { return lookup(network_names, v); }
std::string_view name(SeccompMode v) { return lookup(seccomp_names, v); }
std::string_view name(UnixSockets v) { return lookup(unix_sockets_names, v); }
std::string_view name(MountOp::Kind v) { return lookup(mount_kind_names, v); }
std::string_view name(EnvOp::Kind v) { return lookup(env_kind_names, v); }

std::optional<Mode> parse_mode(std::string_view s) { return lookup(mode_names, s); }
std::optional<ProcMode> parse_proc_mode(std::string_view s) { return lookup(proc_names, s); }
std::optional<Backend> parse_backend(std::string_view s) { return lookup(backend_names, s); }
std::optional<Network> parse_network(std::string_view s) { return lookup(network_names, s); }
std::optional<SeccompMode> parse_seccomp_mode(std::string_view s) { return lookup(seccomp_names, s); }
std::optional<UnixSockets> parse_unix_sockets(std::string_view s) { return lookup(unix_sockets_names, s); }
std::optional<MountOp::Kind> parse_mount_kind(std::string_view s) { return lookup(mount_kind_names, s); }
std::optional<EnvOp::Kind> parse_env_kind(std::string_view s) { return lookup(env_kind_names, s); }

}  // namespace nsrun
