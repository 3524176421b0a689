#include "ns/reaper.hpp"

#include <sys/wait.h>

#include <cerrno>

#include "sys/raw.hpp"

namespace nsrun {

namespace {
constexpr int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

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
  while (true) {
    // Reap first: SIGCHLD may have been consumed before we got here.
    int status = 0;
    long pid;
    while ((pid = sys::raw(SYS_wait4, -1, &status, WNOHANG, nullptr)) > 0)
      if (pid == child) {
        if (raw_status != nullptr) *raw_status = status;
        return exit_status(status);
      }
    if (pid == -ECHILD) return 125;

    siginfo_t info{};
    const long sig = sys::raw(SYS_rt_sigtimedwait, &waited, &info, nullptr, _NSIG / 8);
    if (sig < 0 || sig == SIGCHLD) continue;
    if (sig == options.stop) return -1;
    // nsrun's timer: end every process of the sandbox, not only the
    // command (only nsrun, outside, may ask: si_pid 0 from an outer
    // namespace, or nsrun's own pid on the Landlock rung).
    if (sig == end_sandbox_signal()) {
      if (options.end_all != nullptr && sent_by_a_process(info.si_code)) options.end_all();
      continue;
    }
    if (sent_by_a_process(info.si_code)) sys::raw(SYS_kill, child, sig);
  }
}

}  // namespace nsrun
