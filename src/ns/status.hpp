// Status for a caller that coordinates with the sandbox through fds (bwrap's
// --info-fd, --json-status-fd, --block-fd, --userns-block-fd, --lock-file).
// The JSON texts are pure functions; the writers are thin named steps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// (name, inode) of each namespace made, named as bwrap names them
// ("mnt-namespace"), in that name's order.
using NamespaceIds = std::vector<std::pair<std::string, uint64_t>>;

// The inode numbers of the namespaces in `clone_flags` that the process
// /proc/<who> is in ("self" for the caller).
NamespaceIds namespace_ids(std::string_view who, uint64_t clone_flags);

// This process's pid as the mounted /proc sees it: in a fresh PID namespace,
// before /proc is replaced, that is its pid in the caller's namespace.
pid_t own_pid_outside();

// One JSON object with "child-pid" and the namespace ids; `pretty` lays it
// out over several lines (the --info-fd form), else one line (JSON lines).
std::string start_status(pid_t child, const NamespaceIds& ids, bool pretty);
std::string exit_status_line(int exit_code);

// Writes all of `text` to `fd`; `op` names the option (--info-fd or
// --json-status-fd).
Result<void> write_status(int fd, std::string_view text, Operation op);

// Child side: waits until `fd` has a byte to read or reaches end-of-file.
Result<void> wait_on_fd(int fd, Operation op);

// Child side, after the new root is in place: opens each path inside and
// takes a shared (read) lock on it; the fds keep the locks for as long as
// this process lives.
Result<std::vector<Fd>> take_locks(const std::vector<std::string>& paths);

}  // namespace nsrun
