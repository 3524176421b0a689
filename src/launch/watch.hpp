// nsrun's side of a running sandbox: it waits for its child (PID
// 1, the Landlock rung's supervisor, or the command itself), forwards
// signals, keeps the timeout, serves the seccomp listener, and ends with a
// verdict: how the command ended and what it used.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/protect_restore.hpp"
#include "policy/limits.hpp"
#include "seccomp/notify.hpp"
#include "seccomp/writes.hpp"

namespace nsrun {

// How the command ended, as facts.
struct Ended {
  std::string how = "setup-failed";  // exit, signal, timeout, oom, rlimit, setup-failed
  int code = 125;                    // nsrun's exit status
  int signal = 0;                    // the signal that ended the command, 0: none
  std::string limit;                 // the limit behind timeout / oom / rlimit
  bool killed = false;               // timeout: SIGKILL was needed after the SIGTERM
};

struct Usage {
  uint64_t wall_us = 0;              // from the command's exec to its end
  uint64_t user_us = 0;              // every process of the sandbox that was reaped
  uint64_t sys_us = 0;
  uint64_t peak_memory_bytes = 0;
  std::string peak_memory_source;    // "ru_maxrss" (the largest single process) or "memory.peak"
  std::optional<uint64_t> processes; // processes and threads started (PID namespace), unknown elsewhere
};

// One kind of refusal the sandbox made during the run, as nsrun saw it
// (or, for a limit, as its counter says). Kinds: protected-path,
// read-only-root, hidden-credential, egress, network-none, unix-socket,
// seccomp, limit, timeout, oom. The report lists them under "refusals";
// the verdict line gives the first few in `words`.
struct Refusal {
  std::string kind;
  std::string what;    // the call, path, host:port or limit refused
  std::string allow;   // the option that would allow it; "" when no option does
  uint64_t count = 1;  // how many times (same kind and what)
  std::string words;   // plain words for the verdict line
};

struct Verdict {
  bool started = false;              // the command was executed; ended/usage are real
  Ended ended;
  Usage usage;
  bool denials_observed = false;     // false: refusals happened unseen (no listener)
  std::vector<Denial> denials;
  std::vector<LimitDecision> limits;
  // --watch-writes: observations, never decisions (seccomp/writes.hpp).
  bool writes_watched = false;       // asked for
  bool writes_observed = false;      // false: no listener could be had
  std::vector<WriteAttempt> writes_outside;
  uint64_t writes_outside_dropped = 0;  // attempts at distinct paths beyond the list's cap
  // Every refusal, in the order the verdict names them (add_refusal()).
  std::vector<Refusal> refusals;
  // The Landlock rung: what the run changed in the protected set and how
  // it was put back (launch/protect_restore.hpp).
  std::vector<Restored> protected_restored;
  // Kinds of refusal the kernel answers the command directly, which this
  // run could not see, said rather than guessed: kind, and why unseen
  // (with the option that would show or allow them).
  std::vector<std::pair<std::string, std::string>> unobserved;
  std::optional<uint64_t> pids_refused;  // forks the cgroup's pids.max refused (pids.events max)
};

// The one way to list a refusal: an entry of the same kind and `what`
// adds its count to the one already there.
void add_refusal(Verdict& v, Refusal r);

// A session's attribution of what the listener answered to one exec
// (session/ledger.hpp). `identify` runs while the call waits, so the pid
// still names its caller (checked live after it); the others once the
// call is answered. 0: the caller is nobody's to report.
class NotifyTap {
 public:
  virtual ~NotifyTap() = default;
  virtual int64_t identify(pid_t pid) = 0;
  virtual void denial(int64_t who, const seccomp_notif& call, const Denial& d) = 0;
  virtual void write(int64_t who, const WriteAttempt& w) = 0;
  // The listener arrived: refusals are observed from here on.
  virtual void listening() = 0;
};

struct WatchSetup {
  pid_t child = -1;
  bool child_is_command = false;     // no PID 1 / supervisor in between
  // The Landlock rung's supervisor: at the kill-after it is asked again
  // (end_sandbox_signal()) and SIGKILLs every process of the sandbox
  // itself, which it can do at once from its signal scope. It is SIGKILLed
  // only if it has not ended supervisor_grace_ms later: its processes would
  // then fall to nsrun, which can end them only one by one.
  bool child_is_supervisor = false;
  int words_fd = -1;                 // nsrun's end of the sandbox's last-words socket, -1: none
  std::optional<uint64_t> timeout_ms;
  uint64_t kill_after_ms = 2000;
  std::vector<RlimitSetting> rlimits;  // to name an rlimit behind SIGXCPU / SIGXFSZ
  std::optional<FilterKey> notify_key; // the notifying filter (its rules: each answer's errno)
  NotifyHandler notify_handler;        // calls nsrun answers itself (--network proxy, Landlock rung)
  std::optional<WriteScope> writes;    // --watch-writes: where this rung lets the command write
  // Polled until one is readable, then `wake` is called once (the egress
  // proxy's thread starts on demand).
  std::vector<int> wake_fds;
  std::function<void()> wake;
  NotifyTap* tap = nullptr;            // a session's: each answered call, with its caller's identity
};

// Waits for `child` to end (it was started with the launch's signals
// blocked, see block_for_launch()). At the timeout: end_sandbox_signal()
// to a PID 1 or supervisor (SIGTERM to a command that is PID 1 itself),
// then SIGKILL `kill_after_ms` later (to PID 1 or the command; the
// supervisor is asked again, and SIGKILLed only supervisor_grace_ms after
// that); the exit status is then 124.
inline constexpr uint64_t supervisor_grace_ms = 5000;
Verdict watch(const WatchSetup& setup);

// The --verdict line, empty when there is nothing to say (the command
// succeeded, or nothing was refused or limited and nothing unseen matters).
// Names the first few refusals; a timeout is always named.
std::string verdict_line(const Verdict& v);
// The line printed without --verdict: only the timeout, empty otherwise.
std::string timeout_line(const Verdict& v);

}  // namespace nsrun
