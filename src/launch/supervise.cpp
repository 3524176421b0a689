// nsrun's side once a rung has cloned the sandbox's first process (PID 1,
// the Landlock rung's supervisor, or the command): it reads the channel to
// its end (an error, a death in set-up, or the exec), then watches the
// command to its end (launch/watch.hpp) and accounts the sandbox's cgroup.
#include "launch/supervise.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include "launch/cgroup_account.hpp"
#include "ns/channel.hpp"
#include "ns/reaper.hpp"
#include "ns/status.hpp"

namespace nsrun {

namespace {

// `status` is the sandbox's first process's (PID 1, or the Landlock rung's
// supervisor). Killed itself, it names itself; exited, it passed on the
// status of the command's process, which died before its exec.
Error died_in_setup(int status, std::string_view first_process) {
  std::string what;
  if (WIFSIGNALED(status)) {
    what = fmt::format("{} was killed by signal {} (SIG{}) before the command's exec", first_process,
                       WTERMSIG(status), sigabbrev_np(WTERMSIG(status)));
  } else {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code > 128 && sigabbrev_np(code - 128) != nullptr)
      what = fmt::format("the command's process was killed by signal {} (SIG{}) before its exec", code - 128,
                         sigabbrev_np(code - 128));
    else
      what = fmt::format("the command's process ended with status {} before its exec", code);
  }
  Error e{"set-up", 0, {}, std::move(what)};
  // Seen by nsrun while it supervises; which step the sandbox had reached
  // (build, confine, the command's start) it did not say before dying.
  e.phase = Phase::supervise;
  return e;
}

}  // namespace

void account_cgroup(const CgroupEvents& events, const char* peak_source, const LimitsPlan& plan, Verdict& v) {
  // The cgroup's own account, truer than rusage: the whole sandbox.
  if (events.peak_bytes) {
    v.usage.peak_memory_bytes = *events.peak_bytes;
    v.usage.peak_memory_source = peak_source;
  }
  if (plan.cgroup_pids) v.pids_refused = events.pids_max_hits;
  if (v.started && events.oom_kills > 0 && v.ended.how == "signal" && v.ended.signal == SIGKILL) {
    v.ended.how = "oom";
    v.ended.limit = "memory";
  }
}

LaunchOutcome supervise(pid_t child, int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                        std::string_view first_process, egress::Egress* proxy) {
  LaunchOutcome out;
  // Not zeroed: only the bytes received are touched.
  ChannelBytes bytes;
  receive_raw(channel, bytes);
  if (bytes.failed_errno != 0) {
    // Nothing more can be learnt from the sandbox: end it before reporting.
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  auto received = decode(bytes);
  out.timeline = a.timeline;
  if (received) out.timeline.merge(received->timeline);
  if (!received || received->error) {
    int status = 0;
    ::waitpid(child, &status, 0);
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    out.error = received ? *received->error : received.error();
    out.exit_code = out.error->exit_code();
    // An exec failure happens after the sandbox was built: the command's
    // own fate, not a reason to try another rung.
    out.command_started = out.error->kind == ErrorKind::not_found || out.error->kind == ErrorKind::not_exec;
    return out;
  }
  if (!received->exec_next) {
    // Every copy of the channel closed with neither an error nor the
    // command's last message: a process of the sandbox was killed in
    // set-up (SIGKILL, the OOM killer). The command never ran; say so
    // instead of passing the death on as if it were the command's.
    int status = 0;
    ::waitpid(child, &status, 0);
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    if (p.setup_death_as_status) {
      // Not a failure to move on from: no other rung may run the command.
      out.command_started = true;
      out.exit_code = exit_status(status);
      return out;
    }
    out.error = died_in_setup(status, first_process);
    out.exit_code = out.error->exit_code();
    return out;
  }
  out.timeline.mark("exec");
  out.command_started = true;
  WatchSetup watching;
  watching.child = child;
  watching.child_is_command = a.child_is_command;
  watching.child_is_supervisor = a.child_is_supervisor;
  watching.words_fd = a.words_parent_fd;
  watching.timeout_ms = p.limits.timeout_ms;
  watching.kill_after_ms = p.limits.kill_after_ms;
  watching.rlimits = p.limits.rlimits;
  watching.notify_key = p.seccomp_notify_key;
  watching.notify_handler = a.notify_handler;
  watching.writes = p.write_scope;
  if (a.session) watching.tap = a.session->tap;
  // --network proxy: its process starts at the first connection or query.
  if (proxy != nullptr) {
    watching.wake_fds = proxy->wake_fds();
    watching.wake = [proxy] {
      if (!proxy->wake()) fmt::print(stderr, "nsrun: --network proxy: the proxy could not start; the sandbox's connections are refused\n");
    };
  }
  out.verdict = watch(watching);
  out.verdict.limits = p.limits.decisions;
  out.exit_code = out.verdict.ended.code;
  if (p.json_status_fd >= 0) {
    (void)write_status(p.json_status_fd, exit_status_line(out.exit_code), Operation::json_status_fd);
    ::close(p.json_status_fd);
  }
  return out;
}

}  // namespace nsrun
