// PID 1 inside the sandbox, and nsrun's own wait outside. Both forward the
// termination signals one level down and turn the child's end into an exit
// status.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string_view>

namespace nsrun {

// Blocks the signals passed down (termination requests and terminal
// resizes) and SIGCHLD, in the caller before clone so none is lost between
// clone and the wait loop, and returns the mask it replaced. Also gives
// SIGCHLD its default action back: a caller that ignores it (SIG_IGN, or
// SA_NOCLDWAIT) would have the kernel reap our children without sending
// the signal, and the wait loops here (nsrun's, and PID 1's, which
// inherits the disposition) would sleep forever.
sigset_t block_for_launch();

// Installs a no-op handler for each forwarded signal. PID 1 needs it: the
// kernel drops a signal sent to a namespace's init when its handler is
// SIG_DFL.
void install_forwarding_handlers();

// Restores default dispositions and the given mask (the command's side).
void reset_signals(const sigset_t& original_mask);

// Waits for `child` while forwarding signals to it; reaps any other child
// too (PID 1 inherits every orphan). Writes nothing but its own stack, not
// even errno, so PID 1 may run it beside nsrun in shared memory. Returns the exit status nsrun reports:
// the code, or 128+N for a death by signal N.
int wait_forwarding(pid_t child);

// The same, but also ends, returning -1, when the signal `stop` arrives
// (blocked by the caller, not one of the forwarded ones): the Landlock
// rung's supervisor waits so for its parent-death signal.
int wait_forwarding_until(pid_t child, int stop);

// The signal nsrun's timer sends to PID 1 (or the Landlock rung's
// supervisor): "end the whole sandbox with SIGTERM". Real-time, so it is
// queued, and outside the forwarded set: a SIGTERM sent to nsrun reaches
// the command only, as before. Blocked by block_for_launch().
int end_sandbox_signal();

struct WaitOptions {
  int stop = 0;                 // as wait_forwarding_until()
  void (*end_all)() = nullptr;  // on end_sandbox_signal(); raw system calls only
  // Once a signal that ends a process by default has been passed on, the
  // command is looked at (/proc/PID/stat, every 1 ms doubling to 256 ms)
  // until it is seen exiting (PF_EXITING on its last thread: it runs no
  // more code of its own and its status is decided); then this ends the
  // rest of the sandbox, once, as its end would. The kernel can take
  // minutes to finish an exit when the command's own processes contend for
  // the locks the exit needs (a fork bomb at its pids limit: every failed
  // fork copies and frees the same file mappings), and the bomb goes on
  // forking until it is killed. Raw system calls only.
  void (*command_exiting)() = nullptr;
};

// Field `field` (numbered as in proc(5), 4 or more) of a /proc/PID/stat
// line, as an unsigned number, or nullopt.
std::optional<unsigned long> number_in_stat(std::string_view stat, int field);

// wait_forwarding_until() with the timer's request served and the child's
// wait status stored in *raw_status (when not null).
int wait_command(pid_t child, const WaitOptions& options, int* raw_status);

// Whether a signal's si_code says a process sent it (kill, sigqueue,
// tgkill) rather than the terminal, which already reached the group.
bool sent_by_a_process(int si_code);

// The set block_for_launch() blocks: the forwarded signals, SIGCHLD and
// end_sandbox_signal().
sigset_t launch_signals();

// The status convention for a waitpid() status.
int exit_status(int wait_status);

}  // namespace nsrun
