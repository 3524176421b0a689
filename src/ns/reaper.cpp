#include "ns/reaper.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>
#include <cstdint>

#include "sys/raw.hpp"

namespace nsrun {

namespace {
constexpr int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

// Children reaped between two looks at the pending signals.
constexpr int reap_batch = 32;

// The kernel's PF_EXITING (include/linux/sched.h): set at the start of
// do_exit(), before the process's memory and files are released.
constexpr unsigned long pf_exiting = 0x4;
// Fields of /proc/PID/stat (proc(5)).
constexpr int stat_flags = 9;
constexpr int stat_threads = 20;
constexpr long longest_look_ms = 256;

uint64_t monotonic_ns() {
  struct timespec t{};
  sys::raw(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

// Whether `pid`, a child not yet reaped (so its pid is still its own), has
// begun to exit. Raw system calls and the stack only.
bool exiting(pid_t pid) {
  char path[32] = "/proc/";
  char digits[16];
  int n = 0;
  for (auto v = static_cast<unsigned long>(pid); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  std::size_t at = 6;
  while (n > 0) path[at++] = digits[--n];
  for (const char c : std::string_view("/stat")) path[at++] = c;
  path[at] = '\0';
  const long fd = sys::raw(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  const long got = sys::raw(SYS_read, fd, buf, sizeof buf);
  sys::raw(SYS_close, fd);
  if (got <= 0) return false;
  const std::string_view stat(buf, static_cast<std::size_t>(got));
  // Its last thread: a main thread that ended alone (pthread_exit) is
  // exiting too, while the others run on.
  const auto flags = number_in_stat(stat, stat_flags);
  const auto threads = number_in_stat(stat, stat_threads);
  return flags && threads && (*flags & pf_exiting) != 0 && *threads == 1;
}

void ignore_signal(int) {}

// What block_for_launch() blocks and the wait loop waits for.
sigset_t blocked_for_launch() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : forwarded) sigaddset(&s, sig);
  sigaddset(&s, SIGCHLD);
  sigaddset(&s, end_sandbox_signal());
  return s;
}

}  // namespace

// A signal from the terminal (SI_KERNEL) already reached every process of
// the foreground group; passing it on would deliver it twice.
bool sent_by_a_process(int si_code) { return si_code == SI_USER || si_code == SI_QUEUE || si_code == SI_TKILL; }

sigset_t launch_signals() { return blocked_for_launch(); }

sigset_t block_for_launch() {
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, nullptr);
  const sigset_t blocked = blocked_for_launch();
  sigset_t original;
  sigprocmask(SIG_BLOCK, &blocked, &original);
  return original;
}

void install_forwarding_handlers() {
  struct sigaction sa{};
  sa.sa_handler = ignore_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : forwarded) sigaction(sig, &sa, nullptr);
  sigaction(end_sandbox_signal(), &sa, nullptr);
}

void reset_signals(const sigset_t& original_mask) {
  struct sigaction sa{};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig : forwarded) sigaction(sig, &sa, nullptr);
  sigaction(SIGCHLD, &sa, nullptr);
  sigaction(end_sandbox_signal(), &sa, nullptr);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
}

std::optional<unsigned long> number_in_stat(std::string_view stat, int field) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so
  // the fields count from its last ')', which ends field 2.
  if (field < 4) return std::nullopt;
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  for (int at = 3;; ++at) {
    if (rest.empty() || rest[0] != ' ') return std::nullopt;
    rest.remove_prefix(1);
    const std::string_view value = rest.substr(0, rest.find_first_of(" \n"));
    if (value.empty()) return std::nullopt;
    if (at == field) {
      unsigned long n = 0;
      for (const char c : value) {
        if (c < '0' || c > '9' || n > (~0UL - 9) / 10) return std::nullopt;
        n = n * 10 + static_cast<unsigned long>(c - '0');
      }
      return n;
    }
    rest.remove_prefix(value.size());
  }
}

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}

// Raw system calls only: it leaves errno and libc's state alone, so it is
// safe wherever the caller is (PID 1 after the command's vfork-style start).
int wait_forwarding(pid_t child) { return wait_forwarding_until(child, 0); }

int wait_forwarding_until(pid_t child, int stop) { return wait_command(child, WaitOptions{stop, nullptr}, nullptr); }

int end_sandbox_signal() { return SIGRTMIN + 3; }

int wait_command(pid_t child, const WaitOptions& options, int* raw_status) {
  sigset_t waited = blocked_for_launch();
  if (options.stop > 0) sigaddset(&waited, options.stop);
  // Once a signal has been passed on: when to look at the command next,
  // and the gap before that look (0: not looking).
  uint64_t look_at_ns = 0;
  long look_gap_ms = 0;
  bool exiting_told = false;
  while (true) {
    // Reap first: SIGCHLD may have been consumed before we got here. A
    // batch at a time: under a fork bomb orphans come to us as fast as we
    // reap them, and a signal to pass on (the one that ends the bomb) must
    // not wait until they stop coming.
    int status = 0;
    long pid = 0;
    int reaped = 0;
    while (reaped < reap_batch && (pid = sys::raw(SYS_wait4, -1, &status, WNOHANG, nullptr)) > 0) {
      if (pid == child) {
        if (raw_status != nullptr) *raw_status = status;
        return exit_status(status);
      }
      ++reaped;
    }
    if (pid == -ECHILD) return 125;

    // A full batch: more may be waiting, so only look at the signals.
    const struct timespec now{};
    struct timespec until_look{};
    const struct timespec* timeout = nullptr;
    if (reaped == reap_batch) {
      timeout = &now;
    } else if (look_gap_ms > 0) {
      const uint64_t t = monotonic_ns();
      const uint64_t left = look_at_ns > t ? look_at_ns - t : 0;
      until_look = {static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
      timeout = &until_look;
    }
    siginfo_t info{};
    const long sig = sys::raw(SYS_rt_sigtimedwait, &waited, &info, timeout, _NSIG / 8);
    if (look_gap_ms > 0 && monotonic_ns() >= look_at_ns) {
      if (exiting(child)) {
        look_gap_ms = 0;
        exiting_told = true;
        options.command_exiting();
      } else {
        look_gap_ms = look_gap_ms * 2 > longest_look_ms ? longest_look_ms : look_gap_ms * 2;
        look_at_ns = monotonic_ns() + static_cast<uint64_t>(look_gap_ms) * 1'000'000;
      }
    }
    if (sig < 0 || sig == SIGCHLD) continue;
    if (sig == options.stop) return -1;
    // nsrun's timer: end every process of the sandbox, not only the
    // command (only nsrun, outside, may ask: si_pid 0 from an outer
    // namespace, or nsrun's own pid on the Landlock rung).
    if (sig == end_sandbox_signal()) {
      if (options.end_all != nullptr && sent_by_a_process(info.si_code)) options.end_all();
      continue;
    }
    if (sent_by_a_process(info.si_code)) {
      sys::raw(SYS_kill, child, sig);
      if (options.command_exiting != nullptr && !exiting_told && look_gap_ms == 0 && sig != SIGWINCH) {
        look_gap_ms = 1;
        look_at_ns = monotonic_ns() + 1'000'000;
      }
    }
  }
}

}  // namespace nsrun
