// PID 1 re-executed inside the sandbox's user namespace.
//
// The kernel ties a process's memory (mm->user_ns) to the user namespace
// it last exec'd in; a fork keeps its parent's. nsrun's PID 1 is a fork of
// nsrun, so its mm belongs to the caller's namespace and, PID 1 being not
// dumpable, ptrace_may_access() asks for CAP_SYS_PTRACE there: a caller
// without it (an unprivileged one) cannot open /proc/PID/ns/* of the
// sandbox it made, as bwrap's callers do with the pid --info-fd gives them
// (flatpak enters its sandboxes so). After an exec inside the sandbox's
// namespace the mm belongs to that namespace, where the caller, its owner,
// holds every capability and the command none, unless it keeps
// CAP_SYS_PTRACE: then PID 1 stays as it was.
//
// The exec'd image is nsrun again, run as a pure reaper. The command is
// held before its own exec until that image is not dumpable: a freshly
// exec'd process is dumpable, and a command that attached in that moment
// would stay attached.
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

namespace nsrun {

// argv[1] of the re-exec'd PID 1.
inline constexpr std::string_view pid1_reaper_flag = "--internal-sandbox-pid1";

struct Pid1ExecCase {
  bool reaper = false;            // there is a PID 1 of nsrun's (not --as-pid-1)
  bool new_pid_namespace = false;  // and it is PID 1 of a namespace of its own
  bool new_user_namespace = false;  // the sandbox made its own (not --userns)
  bool inner_user_namespace = false;  // --userns2: PID 1 moves to another one
  bool pid_published = false;     // --info-fd or --json-status-fd names PID 1
  bool command_may_ptrace = false;  // CAP_SYS_PTRACE in the bounding set kept
  bool self_has_interpreter = false;  // a dynamic nsrun: no loader inside the root
};

// Whether PID 1 re-execs itself; pure.
bool pid1_execs_in_sandbox(const Pid1ExecCase& c);

// Whether this executable names a program interpreter (PT_INTERP): one
// that would be looked up in the sandbox's root, not the host's.
bool self_has_interpreter();

// What the re-exec'd PID 1 needs; the fds are kept across the exec.
struct Pid1Handover {
  pid_t command = -1;
  int words_fd = -1;      // -1: none
  int last_pid_fd = -1;   // -1: none
  int release_fd = -1;    // the write end the held command waits on
  std::vector<int> held;  // lock fds, kept open for the sandbox's life
};

// Execs `self` (an O_PATH fd on nsrun's executable) as the sandbox's
// reaper, with an empty environment and no fd but the handed-over ones.
// Returns only when the exec failed; the caller then reaps itself.
void exec_pid1_reaper(int self, const Pid1Handover& h);

// main() of the re-exec'd PID 1.
int pid1_reaper_main(int argc, char** argv);

// PID 1's answer to nsrun's timer: SIGTERM to every process of its PID
// namespace (kill(-1) spares the caller). Raw system calls only.
void end_pid_namespace();

}  // namespace nsrun
