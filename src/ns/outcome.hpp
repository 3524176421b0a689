// The sandbox's last words to nsrun, on a socket of their own
// beside the channel: the channel ends at the command's exec, these come
// later. PID 1 (or the Landlock rung's supervisor) sends the command's raw
// wait status and how many processes the sandbox started, so the report
// can tell a death by signal N from an exit with code 128+N; whoever loads
// the notifying seccomp filter sends its listener fd (SCM_RIGHTS) before
// the command runs, so only nsrun, outside, holds it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// Sandbox side. Best effort: nsrun may be gone. Raw system calls only, so
// PID 1 may call them wherever it is.
void send_final_status(int fd, int raw_status, int64_t processes);
void send_listener(int fd, int listener);
// --watch-writes: its own listener (only where the default filter has no
// notifying variant), and the Landlock rung's private TMPDIR.
void send_watch_listener(int fd, int listener);
void send_private_tmpdir(int fd, std::string_view tmpdir);

// nsrun side: what has arrived so far (non-blocking), merged into `into`.
struct SandboxWords {
  std::optional<int> raw_status;   // the command's wait status
  std::optional<uint64_t> processes;
  Fd listener;                     // the seccomp notification fd
  Fd watch_listener;               // --watch-writes' own notification fd (never with `listener`)
  std::string private_tmpdir;      // the Landlock rung's TMPDIR, for --watch-writes
  bool closed = false;             // every sender is gone
};
void receive_words(int fd, SandboxWords& into);

// PID 1 side: how many tasks the sandbox's PID namespace has allocated,
// PID 1 included, from an fd on /proc/sys/kernel/ns_last_pid (which reads
// the reader's own PID namespace); -1 when unknown.
int64_t last_pid(int fd);

}  // namespace nsrun
