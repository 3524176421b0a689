#include "launch/watch.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include <fmt/core.h>

#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "seccomp/precompiled.hpp"
#include "sys/fd.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

namespace {

// <linux/seccomp.h> of Linux 6.6, newer than some build hosts' headers.
constexpr unsigned long seccomp_notif_set_flags = _IOW('!', 4, uint64_t);  // SECCOMP_IOCTL_NOTIF_SET_FLAGS
constexpr uint64_t seccomp_sync_wake_up = 1;                               // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP

uint64_t micros(const timeval& t) { return static_cast<uint64_t>(t.tv_sec) * 1'000'000 + static_cast<uint64_t>(t.tv_usec); }

constexpr std::size_t max_wake_fds = 3;

bool has_rlimit(const std::vector<RlimitSetting>& rl, std::string_view n) {
  return std::ranges::any_of(rl, [&](const RlimitSetting& r) { return r.name == n; });
}

}  // namespace

Verdict watch(const WatchSetup& s) {
  Verdict v;
  v.started = true;
  const uint64_t start_ns = Timeline::now_ns();
  const sigset_t waited = launch_signals();
  Fd sigfd(::signalfd(-1, &waited, SFD_CLOEXEC | SFD_NONBLOCK));

  SandboxWords words;
  DenialLog log(s.notify_key);
  bool listener_open = true;
  std::optional<WriteLog> writes;
  if (s.writes) writes.emplace(*s.writes);
  bool tmpdir_known = false;
  // One listener at most (the kernel allows one per task): the notifying
  // variant's, which refuses and (with --watch-writes) observes, or the
  // watch's own. Each notification goes where its registers say: only a
  // watched call the rules do not refuse is continued.
  auto active = [&]() -> const Fd& { return words.listener ? words.listener : words.watch_listener; };
  bool sync_asked = false;
  bool tap_told = false;
  auto serve = [&](int fd) {
    Notification n = Notification::receive(fd);
    if (!n) return errno == EINTR || errno == ENOENT;
    const seccomp_notif& call = n.get();
    // connect() and listen() under --network proxy on the Landlock rung.
    if (s.notify_handler && s.notify_handler(fd, call)) return true;
    const std::string_view name = precompiled_syscall_name(call.data.nr);
    std::array<uint64_t, 6> args{};
    for (std::size_t i = 0; i < args.size(); ++i) args[i] = call.data.args[i];
    // Who asked, read while the call waits; kept only if it still does
    // (the pid was not reused meanwhile).
    int64_t who = s.tap != nullptr ? s.tap->identify(static_cast<pid_t>(call.pid)) : 0;
    if (who != 0 && ::ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &call.id) != 0) who = 0;
    if (writes && !name.empty() && watch_continues(log.spec(), name, args)) {
      std::vector<WriteAttempt> seen;
      writes->answer(fd, call, who != 0 ? &seen : nullptr);
      for (const auto& w : seen) s.tap->write(who, w);
    } else {
      const Denial& d = log.answer(fd, call);
      if (who != 0) s.tap->denial(who, call, d);
    }
    return true;
  };
  bool woken = s.wake_fds.empty();
  bool timed_out = false;
  bool killed = false;
  bool kill_asked = false;
  uint64_t deadline_ns = s.timeout_ms ? start_ns + *s.timeout_ms * 1'000'000 : 0;
  std::optional<int> child_status;
  rusage ru{};

  while (!child_status) {
    // Reap first: SIGCHLD may have been consumed before we got here. Any
    // child: on the Landlock rung nsrun is a subreaper too.
    int status = 0;
    rusage r{};
    pid_t pid;
    while ((pid = ::wait4(-1, &status, WNOHANG, &r)) > 0)
      if (pid == s.child) {
        child_status = status;
        ru = r;
      }
    if (child_status) break;
    if (pid < 0 && errno == ECHILD) break;

    receive_words(s.words_fd, words);
    if (s.tap != nullptr && !tap_told && words.listener) {
      tap_told = true;
      s.tap->listening();
    }
    if (writes && active() && !sync_asked) {
      // --watch-writes makes a round trip of every write call: the
      // notification then wakes nsrun on the caller's CPU, and the answer
      // the caller on nsrun's, instead of through the scheduler's queues.
      // Linux 6.6; older kernels say EINVAL and keep the usual wake-ups.
      sync_asked = true;
      (void)::ioctl(active().get(), seccomp_notif_set_flags, seccomp_sync_wake_up);
    }
    if (writes && !tmpdir_known && !words.private_tmpdir.empty()) {
      tmpdir_known = true;
      writes->set_private_tmpdir(words.private_tmpdir);
    }
    pollfd fds[3 + max_wake_fds];
    nfds_t n = 0;
    fds[n++] = pollfd{sigfd.get(), POLLIN, 0};
    const int listener = active() && listener_open ? active().get() : -1;
    if (listener >= 0) fds[n++] = pollfd{listener, POLLIN, 0};
    if (s.words_fd >= 0 && !words.closed && !active()) fds[n++] = pollfd{s.words_fd, POLLIN, 0};
    const nfds_t first_wake = n;
    if (!woken)
      for (std::size_t i = 0; i < s.wake_fds.size() && i < max_wake_fds; ++i) fds[n++] = pollfd{s.wake_fds[i], POLLIN, 0};

    int wait_ms = -1;
    if (deadline_ns != 0) {
      const uint64_t now = Timeline::now_ns();
      wait_ms = now >= deadline_ns ? 0 : static_cast<int>((deadline_ns - now + 999'999) / 1'000'000);
    }
    const int ready = ::poll(fds, n, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (deadline_ns != 0 && Timeline::now_ns() >= deadline_ns) {
      if (!timed_out) {
        // The whole sandbox, not only the command: PID 1 (or the
        // supervisor) passes SIGTERM to every process it has.
        timed_out = true;
        ::kill(s.child, s.child_is_command ? SIGTERM : end_sandbox_signal());
        deadline_ns = Timeline::now_ns() + s.kill_after_ms * 1'000'000;
      } else if (s.child_is_supervisor && !kill_asked) {
        // The supervisor SIGKILLs the sandbox itself (landlock_rung.cpp):
        // killing it instead would hand a fork bomb to nsrun's one-by-one
        // end_leftovers().
        kill_asked = true;
        ::kill(s.child, end_sandbox_signal());
        deadline_ns = Timeline::now_ns() + supervisor_grace_ms * 1'000'000;
      } else if (!killed) {
        // PID 1's death ends its PID namespace; a supervisor that did not
        // end in its grace hands what is left to nsrun, which ends it
        // (landlock_rung.cpp).
        killed = true;
        ::kill(s.child, SIGKILL);
        deadline_ns = 0;
      }
    }
    if (ready <= 0) continue;
    for (nfds_t i = first_wake; i < n && !woken; ++i)
      if (fds[i].revents != 0) {
        woken = true;
        if (s.wake) s.wake();
      }
    for (nfds_t i = 0; i < first_wake; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == sigfd.get()) {
        signalfd_siginfo info{};
        while (::read(sigfd.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
          // The timer's own signal is for PID 1 from nsrun only: never passed on.
          if (info.ssi_signo != SIGCHLD && static_cast<int>(info.ssi_signo) != end_sandbox_signal() &&
              sent_by_a_process(info.ssi_code))
            ::kill(s.child, static_cast<int>(info.ssi_signo));
      } else if (fds[i].fd == listener) {
        if ((fds[i].revents & POLLIN) != 0) serve(listener);
        else if ((fds[i].revents & (POLLHUP | POLLERR)) != 0) listener_open = false;
      }
    }
  }
  v.usage.wall_us = (Timeline::now_ns() - start_ns) / 1000;
  receive_words(s.words_fd, words);
  // Calls still queued when the child ended: answered, and counted.
  if (active()) {
    pollfd p{active().get(), POLLIN, 0};
    while (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0 && serve(active().get())) {
    }
  }
  v.denials_observed = words.listener.valid();
  v.denials = log.denials();
  if (writes) {
    v.writes_watched = s.writes->watch_all;
    v.writes_observed = active().valid();
    v.writes_outside = writes->attempts();
    v.writes_outside_dropped = writes->dropped();
  }

  v.usage.user_us = micros(ru.ru_utime);
  v.usage.sys_us = micros(ru.ru_stime);
  v.usage.peak_memory_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  v.usage.peak_memory_source = "ru_maxrss";
  v.usage.processes = words.processes;

  Ended& e = v.ended;
  const int child_code = child_status ? exit_status(*child_status) : 125;
  // The command's own wait status: from PID 1 or the supervisor, or ours
  // when the child is the command.
  std::optional<int> raw = s.child_is_command ? child_status : words.raw_status;
  e.code = child_code;
  if (timed_out) {
    e.how = "timeout";
    e.limit = "timeout";
    e.code = 124;
    // SIGKILL was sent: by nsrun, or asked of the supervisor, which sends it.
    e.killed = killed || kill_asked;
    if (raw && WIFSIGNALED(*raw)) e.signal = WTERMSIG(*raw);
    else if (!raw && child_status && WIFSIGNALED(*child_status)) e.signal = WTERMSIG(*child_status);
  } else if (raw && WIFSIGNALED(*raw)) {
    e.signal = WTERMSIG(*raw);
    e.how = "signal";
    if (e.signal == SIGXCPU && has_rlimit(s.rlimits, "cpu")) e.how = "rlimit", e.limit = "cpu";
    if (e.signal == SIGXFSZ && has_rlimit(s.rlimits, "fsize")) e.how = "rlimit", e.limit = "fsize";
  } else {
    e.how = "exit";
  }
  return v;
}

void add_refusal(Verdict& v, Refusal r) {
  for (auto& have : v.refusals)
    if (have.kind == r.kind && have.what == r.what) {
      have.count += r.count;
      return;
    }
  v.refusals.push_back(std::move(r));
}

namespace {

// The verdict names this many kinds of refusal; the report has them all.
constexpr std::size_t verdict_kinds = 3;

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

}  // namespace

std::string verdict_line(const Verdict& v) {
  if (!v.started) return {};
  if (v.ended.code == 0 && v.ended.how != "timeout") return {};
  // One part per kind, in the order first seen: its first entry's words,
  // and how many more of that kind there were.
  std::vector<std::string> kinds;
  std::vector<std::string> parts;
  for (const auto& r : v.refusals) {
    const auto seen = std::find(kinds.begin(), kinds.end(), r.kind);
    if (seen != kinds.end()) continue;
    kinds.push_back(r.kind);
    const auto others = std::count_if(v.refusals.begin(), v.refusals.end(), [&](const Refusal& o) { return o.kind == r.kind; }) - 1;
    parts.push_back(others > 0 ? fmt::format("{} (and {} more)", r.words, others) : r.words);
  }
  if (parts.empty()) {
    if (v.unobserved.empty() || v.ended.code == 0) return {};
    std::vector<std::string> unseen;
    for (const auto& [kind, why] : v.unobserved) unseen.push_back(why);
    return fmt::format("nsrun: exit {}; no refusal seen; not seen in this run: {}", v.ended.code, join(unseen, "; "));
  }
  std::string out = "nsrun: " + join(std::vector<std::string>(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), verdict_kinds))), "; ");
  if (parts.size() > verdict_kinds) out += fmt::format("; {} more kind{} in the report", parts.size() - verdict_kinds, parts.size() - verdict_kinds == 1 ? "" : "s");
  // Not a refusal nsrun saw, but the likeliest cause of a failure beside one.
  for (const auto& [kind, why] : v.unobserved)
    if (kind == "limit" && why.starts_with("allocations")) out += "; not seen: " + why;
  return out;
}

std::string timeout_line(const Verdict& v) {
  for (const auto& r : v.refusals)
    if (r.kind == "timeout") return "nsrun: " + r.words;
  return {};
}

}  // namespace nsrun
