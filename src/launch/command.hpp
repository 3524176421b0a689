// The command's start, shared by the rungs: the process that becomes the
// command (session, directory, fds, capabilities, no_new_privs, the
// Landlock ruleset when one is given, seccomp last, exec), and how it is
// started from its parent (PID 1, the Landlock supervisor, or nsrun).
// Everything here runs after a clone: failures go whole to the channel.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/attempt.hpp"
#include "launch/spec.hpp"
#include "mount/plan.hpp"
#include "seccomp/filter.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// How the process that becomes the command starts.
struct CommandSetup {
  int landlock_ruleset = -1;  // restricts the command to it (the Landlock rung)
  int close_in_child = -1;    // an fd of the parent the command must not keep
  // The parent already entered the working directory, emptied the
  // capability sets, set no_new_privs and loaded `LaunchSpec::seccomp`; the
  // command inherits all of it instead of doing it again.
  bool confined_by_parent = false;
  // The rung's own filter instead of `LaunchSpec::seccomp` (the Landlock
  // rung's, from its spec).
  const BpfProgram* filter = nullptr;
};

// Child side: the process that becomes the command; failures go to
// `channel`. `a` is the child's own (or, started by spawn_command(), its
// parent's, whose memory it shares until the exec).
[[noreturn]] void start_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                                const CommandSetup& setup);
// Parent side: starts start_command() in a new process sharing this one's
// memory until it execs (CLONE_VM|CLONE_VFORK). With a Landlock ruleset the
// child first arms die-with-parent and empties its bounding set.
pid_t spawn_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                    const CommandSetup& setup);
// The command when PID 1 re-execs itself (launch/pid1_exec.hpp): a plain
// fork that waits for one byte on the pipe whose other end `release` gets.
pid_t spawn_held_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                         const CommandSetup& setup, Fd& release);
// Child side: PDEATHSIG, and a check that the parent did not die before it.
void arm_die_with_parent(int channel);

// Child side helpers, shared with PID 1 (launch/namespaces_rung.cpp).
[[noreturn]] void die(int channel, const Error& e);
Result<void> enter_directory(const LaunchPlan& plan);
// The command's filter (`plain`), or its notifying variant with the
// listener sent to nsrun.
Result<void> load_command_filter(const LaunchSpec& p, const Attempt& a, const BpfProgram& plain, bool landlock);
// execvp semantics with our own PATH and `env`. Returns only on failure.
Error try_exec(const LaunchSpec& p, const std::vector<std::string>& env);

}  // namespace nsrun
