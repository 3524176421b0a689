// nsrun-killer: SIGKILLs a process of a launch at a random instant of its
// set-up, many times, and checks how nsrun ends each time. The launch's
// set-up has no hook for this on purpose (no test-only code paths in the
// launcher): the killer watches from outside, in /proc, for the process it
// targets to appear, waits a random number of microseconds (busy, so the
// instant is exact) and sends SIGKILL.
//
//   nsrun-killer [--launches N] [--seed N] [--timeout S] [--bwrap] -- NSRUN-ARGV...
//
// Targets, alternating: `pid1`, nsrun's child (the sandbox's PID 1 on the
// namespace rung, the supervisor on the Landlock rung), and `command`, that
// child's child (the process that becomes the command, before and after its
// exec). The delays span 0 to 1.5 times the target's median life in
// launches without a kill (measured first), squared-uniform so that most
// kills land early, in set-up, and some after the exec.
//
// Each launch must end in one of (anything else is a failure):
//   125, one line "nsrun: set-up: ..."   killed before the command's exec;
//   137 (128+SIGKILL), nothing printed   killed after the exec: the command's
//                                        own status, as if it had been killed;
//   0, nothing printed                   the target had already exited.
// nsrun must not die of a signal (it is never sent one) nor outlive
// --timeout (default 20 s). At least 2 % of each target's kills (one, below
// 100 kills) must land in set-up, or the test did not look where it claims
// to.
//
// --bwrap: NSRUN-ARGV is the bwrap dialect, which passes a death in set-up
// on as bwrap does (its child's status, nothing printed): only the 137 and
// 0 endings are allowed, and set-up cannot be told from after the exec.
//
// Prints the counts per target and ends with "N passed, N failed" (one per
// target); exit 0 when nothing failed. Leftover processes, mounts and files
// are the caller's to check (tools/soak.sh does).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

uint64_t now_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// The first pid in /proc/PID/task/PID/children, 0 when there is none yet.
pid_t first_child(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return static_cast<pid_t>(std::atoi(buf));
}

bool gone(pid_t pid) {
  // Not reaped yet: a zombie still has its /proc entry, but no children.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[256];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return true;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');
  return paren == nullptr || paren[2] == 'Z' || paren[2] == 'X';
}

enum class Target { pid1, command };
const char* name(Target t) { return t == Target::pid1 ? "pid1" : "command"; }

struct Launch {
  int status = 0;           // nsrun's wait status
  bool hung = false;        // outlived the timeout
  std::string err;          // its stderr
  uint64_t target_life = 0; // us from the target's appearance to nsrun's end
  bool target_seen = false;
};

// Waits for nsrun's child (and, for `command`, that one's child) to appear.
pid_t find_target(pid_t nsrun, Target t) {
  pid_t p = 0;
  while ((p = first_child(nsrun)) == 0)
    if (gone(nsrun)) return 0;
  if (t == Target::pid1) return p;
  const pid_t pid1 = p;
  while ((p = first_child(pid1)) == 0)
    if (gone(pid1)) return 0;
  return p;
}

// One launch; kills the target `delay` us after it appears (negative: never).
Launch run_one(char** argv, Target t, long delay, int timeout_s) {
  Launch out;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    std::perror("nsrun-killer: pipe");
    std::exit(2);
  }
  const pid_t nsrun = fork();
  if (nsrun < 0) {
    std::perror("nsrun-killer: fork");
    std::exit(2);
  }
  if (nsrun == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(pipefd[1], 2);
    execv(argv[0], argv);
    _exit(126);
  }
  close(pipefd[1]);
  const pid_t target = find_target(nsrun, t);
  if (target > 0) {
    out.target_seen = true;
    const uint64_t seen = now_us();
    if (delay >= 0) {
      while (now_us() < seen + static_cast<uint64_t>(delay)) {
      }
      kill(target, SIGKILL);
    }
    // Ended by nsrun's exit below (the stderr pipe's end-of-file).
    out.target_life = seen;
  }
  // stderr to its end-of-file, then the status, both within the timeout.
  const uint64_t deadline = now_us() + static_cast<uint64_t>(timeout_s) * 1000000;
  char buf[4096];
  while (true) {
    const uint64_t t_now = now_us();
    if (t_now >= deadline) {
      out.hung = true;
      break;
    }
    pollfd pfd{pipefd[0], POLLIN, 0};
    const int r = poll(&pfd, 1, static_cast<int>((deadline - t_now) / 1000 + 1));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n <= 0) break;
    out.err.append(buf, static_cast<std::size_t>(n));
  }
  close(pipefd[0]);
  if (out.hung) {
    kill(nsrun, SIGKILL);
    waitpid(nsrun, &out.status, 0);
    return out;
  }
  // The descendants of nsrun that keep its stderr (none should) would
  // have held the pipe open; nsrun itself ends at once from here.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, nsrun, 0));
  pollfd pfd{pidfd, POLLIN, 0};
  const uint64_t t_now = now_us();
  if (pidfd >= 0 && poll(&pfd, 1, t_now >= deadline ? 0 : static_cast<int>((deadline - t_now) / 1000 + 1)) == 0) {
    out.hung = true;
    kill(nsrun, SIGKILL);
  }
  if (pidfd >= 0) close(pidfd);
  waitpid(nsrun, &out.status, 0);
  if (out.target_seen) out.target_life = now_us() - out.target_life;
  return out;
}

std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\n' ? '|' : c;
  return out;
}

struct Counts {
  int setup = 0, after_exec = 0, missed = 0, bad = 0;
  std::map<std::string, int> messages;  // of the set-up failures
};

bool bwrap_dialect = false;

// Empty when the launch ended as one of the three allowed outcomes.
std::string judge(const Launch& l, Counts& c) {
  if (l.hung) return "hung (no exit within the timeout)";
  if (WIFSIGNALED(l.status)) return "nsrun died of signal " + std::to_string(WTERMSIG(l.status)) + ": " + one_line(l.err);
  const int code = WEXITSTATUS(l.status);
  const bool one = !l.err.empty() && l.err.back() == '\n' && l.err.find('\n') == l.err.size() - 1;
  if (!bwrap_dialect && code == 125 && one && l.err.starts_with("nsrun: set-up: ")) {
    ++c.setup;
    ++c.messages[l.err.substr(0, l.err.size() - 1)];
    return {};
  }
  if (code == 128 + SIGKILL && l.err.empty()) {
    ++c.after_exec;
    return {};
  }
  if (code == 0 && l.err.empty()) {
    ++c.missed;
    return {};
  }
  return "exit " + std::to_string(code) + ", stderr: " + (l.err.empty() ? "(nothing)" : one_line(l.err));
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: nsrun-killer [--launches N] [--seed N] [--timeout S] [--bwrap] -- NSRUN-ARGV...\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  long launches = 1000;
  unsigned long seed = std::random_device{}();
  int timeout_s = 20;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--bwrap") {
      bwrap_dialect = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    if (a == "--launches") launches = std::atol(argv[++i]);
    else if (a == "--seed") seed = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--timeout") timeout_s = std::atoi(argv[++i]);
    else usage();
  }
  if (i >= argc || launches <= 0 || timeout_s <= 0) usage();
  char** nsrun_argv = argv + i;

  std::mt19937_64 rng(seed);
  int failed = 0, passed = 0;
  for (Target t : {Target::pid1, Target::command}) {
    // The target's life without a kill: the median of a few launches.
    // (A short-lived command may come and go between two looks.)
    std::vector<uint64_t> lives;
    bool calibrated = true;
    for (int k = 0; k < 9 && calibrated; ++k) {
      Launch l = run_one(nsrun_argv, t, -1, timeout_s);
      Counts ignored;
      if (std::string why = judge(l, ignored); !why.empty() || WEXITSTATUS(l.status) != 0) {
        std::printf("killer: %s: a launch without a kill failed: %s\n", name(t), why.c_str());
        calibrated = false;
      }
      if (l.target_seen) lives.push_back(l.target_life);
    }
    if (!calibrated || lives.size() < 3) {
      if (calibrated) std::printf("killer: %s: seen in only %zu of 9 launches\n", name(t), lives.size());
      ++failed;
      continue;
    }
    std::sort(lives.begin(), lives.end());
    const uint64_t span = lives[lives.size() / 2] * 3 / 2 + 1;

    Counts c;
    const long n = launches / 2 + (t == Target::pid1 ? launches % 2 : 0);
    for (long k = 0; k < n; ++k) {
      // Squared: set-up is the early part of the target's life.
      const double u = std::uniform_real_distribution<double>(0, 1)(rng);
      const long delay = static_cast<long>(u * u * static_cast<double>(span));
      Launch l = run_one(nsrun_argv, t, delay, timeout_s);
      if (std::string why = judge(l, c); !why.empty()) {
        if (++c.bad <= 5) std::printf("killer: %s killed after %ld us: %s\n", name(t), delay, why.c_str());
      }
    }
    // Below 100 kills a 2 % share is noise (a loaded machine stretches the
    // target's life and the set-up's share with it): one is enough there.
    // The command's set-up is a small part of its life: 4 to 8 % of its
    // kills land there on the project's VM.
    const bool blind = !bwrap_dialect && (c.setup == 0 || (n >= 100 && c.setup * 50 < n));
    std::printf("killer: %s: %ld kills over 0-%llu us: %d in set-up (125), %d after exec (137), %d missed (0), %d bad%s\n",
                name(t), n, static_cast<unsigned long long>(span), c.setup, c.after_exec, c.missed, c.bad,
                blind ? "; fewer than 2 % in set-up: blind" : bwrap_dialect ? "; bwrap dialect: set-up kills end 137 too" : "");
    for (const auto& [m, count] : c.messages) std::printf("killer:   %4d %s\n", count, m.c_str());
    if (c.bad == 0 && !blind) ++passed;
    else ++failed;
  }
  std::printf("killer: seed %lu\n%d passed, %d failed\n", seed, passed, failed);
  return failed == 0 ? 0 : 1;
}
