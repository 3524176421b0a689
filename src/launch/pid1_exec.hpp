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
//
// When. A static nsrun execs once the root is built (from an fd on its
// executable: it needs nothing else). A dynamic one needs its program
// loader and libraries, which would be looked up in the root of the moment:
// it execs before the root is built, while the host's root is still its
// own. PID 1 then forks the process that builds the root and becomes the
// command (the set-up process), chdirs to "/" and execs; the set-up process
// waits until the new image is running and not dumpable, and only then
// pivots, which moves PID 1's root and working directory (both the old
// root) into the new root with its own. Lock fds, which exist only once the
// root is built, go to PID 1 over their socket, and PID 1 takes the locks
// itself (a record lock belongs to a process). Where the root is entered by
// chroot instead (an initramfs "/"), no pivot would move PID 1: it stays a
// fork.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"
#include "sys/fd.hpp"

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
  bool root_by_chroot = false;    // the root is entered by chroot (root_enters_by_chroot())
};

enum class Pid1Exec {
  stays,        // PID 1 stays the fork of nsrun
  after_root,   // it execs once the root is built (a static nsrun)
  before_root,  // it execs first, and a child of it builds the root (a dynamic one)
};

// Whether and when PID 1 re-execs itself; pure.
Pid1Exec pid1_exec_moment(const Pid1ExecCase& c);

// Whether this executable names a program interpreter (PT_INTERP): one
// that would be looked up in the sandbox's root, not the host's.
bool self_has_interpreter();

// What the re-exec'd PID 1 needs; the fds are kept across the exec.
struct Pid1Handover {
  pid_t command = -1;
  int words_fd = -1;      // -1: none
  int last_pid_fd = -1;   // -1: none
  int release_fd = -1;    // the write end the held command waits on; before
                          // the root: the socket to the set-up process
  std::vector<int> held;  // lock fds, kept open for the sandbox's life
  int locks_to_take = 0;  // before the root: lock fds still to come on release_fd
};

// Execs `self` (an O_PATH fd on nsrun's executable) as the sandbox's
// reaper, with an empty environment and no fd but the handed-over ones.
// Returns only when the exec failed; the caller then reaps itself.
void exec_pid1_reaper(int self, const Pid1Handover& h);

// main() of the re-exec'd PID 1.
int pid1_reaper_main(int argc, char** argv);

// PID 1 before the root, after writing its byte on `sock`: receives
// `count` lock fds (fewer if the set-up process ends first) and takes a
// read lock on each, answering each message with its outcome. The fds stay
// open for the sandbox's life.
void take_handed_locks(int sock, int count);

// The set-up process: waits for PID 1's byte on `sock` (false: PID 1 is
// gone), and later hands it the lock fds; an error names the path whose
// lock PID 1 could not take.
bool wait_for_pid1(int sock);
Result<void> hand_locks_to_pid1(int sock, const std::vector<Fd>& locks, const std::vector<std::string>& paths);

// PID 1's answer to nsrun's timer: SIGTERM to every process of its PID
// namespace (kill(-1) spares the caller). Raw system calls only.
void end_pid_namespace();

// kill(-1, SIGKILL) from PID 1: every other process of the namespace,
// at once (WaitOptions::command_exiting). Raw system calls only.
void kill_pid_namespace();

}  // namespace nsrun
