#include "ns/status.hpp"

#include "sys/io.hpp"
#include "sys/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>

#include <fmt/core.h>

namespace nsrun {

NamespaceIds namespace_ids(std::string_view who, uint64_t clone_flags) {
  // By link name, as /proc/PID/ns lists them; the user namespace is not
  // among them.
  static constexpr auto kinds = [] {
    std::array<NamespaceKind, namespace_kinds.size()> sorted = namespace_kinds;
    std::ranges::sort(sorted, {}, &NamespaceKind::name);
    return sorted;
  }();
  NamespaceIds out;
  for (const auto& [flag, ns, flag_name, denied, in_policy] : kinds) {
    if (flag == CLONE_NEWUSER || (clone_flags & flag) == 0) continue;
    struct stat st{};
    if (::stat(fmt::format("/proc/{}/ns/{}", who, ns).c_str(), &st) != 0) continue;
    out.emplace_back(fmt::format("{}-namespace", ns), static_cast<uint64_t>(st.st_ino));
  }
  return out;
}

pid_t own_pid_outside() {
  char buf[32];
  const ssize_t n = ::readlink("/proc/self", buf, sizeof buf - 1);
  if (n <= 0) return ::getpid();
  return static_cast<pid_t>(std::strtol(std::string(buf, static_cast<std::size_t>(n)).c_str(), nullptr, 10));
}

std::string start_status(pid_t child, const NamespaceIds& ids, bool pretty) {
  std::string out = pretty ? fmt::format("{{\n    \"child-pid\": {}", child) : fmt::format("{{ \"child-pid\": {}", child);
  for (const auto& [name, ino] : ids)
    out += pretty ? fmt::format(",\n    \"{}\": {}", name, ino) : fmt::format(", \"{}\": {}", name, ino);
  out += pretty ? "\n}\n" : " }\n";
  return out;
}

std::string exit_status_line(int exit_code) { return fmt::format("{{ \"exit-code\": {} }}\n", exit_code); }

Result<void> write_status(int fd, std::string_view text, Operation op) {
  auto r = write_all(fd, text, step_name(op), std::to_string(fd));
  if (!r) {
    r.error().op = op;
    r.error().phase = phase_of(op);
  }
  return r;
}

Result<void> wait_on_fd(int fd, Operation op) {
  char byte;
  ssize_t n;
  do n = ::read(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail(sys_error(op, std::to_string(fd)));
  return {};
}

Result<std::vector<Fd>> take_locks(const std::vector<std::string>& paths) {
  std::vector<Fd> held;
  for (const auto& path : paths) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return fail(sys_error(Operation::lock_open, path));
    struct flock lock{};
    lock.l_type = F_RDLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd.get(), F_SETLK, &lock) != 0) return fail(sys_error(Operation::lock_lock, path));
    held.push_back(std::move(fd));
  }
  return held;
}

}  // namespace nsrun
