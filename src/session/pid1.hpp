// A session's PID 1, inside the sandbox. It is the one that starts every
// command of the session: no host process ever joins the sandbox (no
// setns into it), so nothing of the host is there for a command to reach
// (the runc exec class: /proc/PID/exe, mem, fd, cwd of a joining process,
// a leaked host fd or working directory). It was built and confined
// exactly as a one-shot launch's PID 1 (the launch's own code, up to the
// command's start), holds no fd of the host but its socket to nsrun and
// what a request passes, and forks each command through the launch's own
// start (launch/command.hpp start_command()), each from a spec of its own
// (session/exec_spec.hpp).
//
// Messages (session/wire.hpp), nsrun -> PID 1:
//   {"op":"start","job":N,"argv":[...],"env":[...],"cwd":"DIR"} + 3 fds
//       (stdin, stdout, stderr) or 1 (stdout and stderr; stdin /dev/null)
//   {"op":"kill","job":N,"signal":S}   signals the job's process group
// PID 1 -> nsrun (no fds, ever):
//   {"ready":true}                     once, first
//   {"job":N,"pid":P}                  the command was executed
//   {"job":N,"error":"TEXT","code":C}  it was not (125, 126, 127)
//   {"job":N,"exit":C}                 it ended (C as a launch's: 128+N for a signal)
// End of file from nsrun ends PID 1, and with it the PID namespace.
#pragma once

#include <signal.h>

#include <vector>

#include "launch/attempt.hpp"
#include "launch/command.hpp"
#include "launch/spec.hpp"
#include "sys/fd.hpp"

namespace nsrun::session {

// SessionHooks::serve (launch/attempt.hpp): PID 1 of the session's spec
// `p`, with its attempt `a` (a.session->fd is its socket). Never returns.
void serve_in_sandbox(const LaunchSpec& p, Attempt& a, int channel, const sigset_t& original_mask,
                      const CommandSetup& setup, const std::vector<Fd>& keep);

}  // namespace nsrun::session
