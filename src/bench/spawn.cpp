#include "bench/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string_view>
#include <vector>

#include "sys/fd.hpp"
#include "sys/argv.hpp"

extern char** environ;

namespace nsrun::bench {

namespace {

uint64_t to_ns(const struct timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
}

class ProcessLauncher final : public Launcher {
 public:
  ProcessLauncher(Fd devnull, Fd report_read, Fd report_write)
      : devnull_(std::move(devnull)), report_read_(std::move(report_read)), report_write_(std::move(report_write)) {}

  std::optional<std::string> check(const Row& row) override {
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) return "pipe: cannot capture its stderr";
    Fd err_read(err[0]), err_write(err[1]);
    const pid_t pid = start(row, err_write.get());
    err_write.reset();
    if (pid < 0) return fmt_errno("spawn", errno);
    std::string text;
    std::array<char, 4096> buf;
    ssize_t n;
    while ((n = ::read(err_read.get(), buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) text.append(buf.data(), static_cast<std::size_t>(n));
    auto [got, l] = wait_any();
    if (got == pid && WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0) return std::nullopt;
    const std::size_t nl = text.find('\n');
    std::string first = text.substr(0, nl);
    if (first.empty()) {
      if (WIFSIGNALED(l.status)) return "killed by signal " + std::to_string(WTERMSIG(l.status));
      return "exit status " + std::to_string(WIFEXITED(l.status) ? WEXITSTATUS(l.status) : -1);
    }
    return first;
  }

  pid_t spawn(const Row& row) override { return start(row, devnull_.get()); }

  // Called with no launch in flight: every child left is a descendant of
  // the launch just waited for. Waits until there is none, or at most a
  // second (a launch that leaves a daemon is not waited for forever; what
  // such a process uses later is charged to a later launch, or to none).
  uint64_t reap_left_behind() override {
    struct itimerval limit{};
    limit.it_value.tv_sec = 1;
    ::setitimer(ITIMER_REAL, &limit, nullptr);
    while (true) {
      struct rusage ru{};
      int status = 0;
      const pid_t pid = ::wait4(-1, &status, 0, &ru);
      if (pid < 0) break;  // ECHILD: nothing left; EINTR: the second is up
      left_behind_ns_ += to_ns(ru.ru_utime) + to_ns(ru.ru_stime);
    }
    limit = {};
    ::setitimer(ITIMER_REAL, &limit, nullptr);
    const uint64_t ns = left_behind_ns_;
    left_behind_ns_ = 0;
    return ns;
  }

  std::pair<pid_t, Launch> wait_any() override {
    Launch l;
    struct rusage ru{};
    pid_t pid;
    while (true) {
      do pid = ::wait4(-1, &l.status, 0, &ru);
      while (pid < 0 && errno == EINTR);
      if (pid < 0) return {-1, l};
      // Not one of ours: a descendant a launch left behind, handed to the
      // bench as the subreaper. Its time belongs to that launch.
      if (std::erase(spawned_, pid) != 0) break;
      left_behind_ns_ += to_ns(ru.ru_utime) + to_ns(ru.ru_stime);
    }
    l.cpu_ns = to_ns(ru.ru_utime) + to_ns(ru.ru_stime);
    l.maxrss_kib = ru.ru_maxrss;
    // Every nsrun launch wrote its report before it exited; reports of
    // launches in flight together may interleave, but each is one write
    // below PIPE_BUF, so lines stay whole. The last line is this launch's
    // in the serial pass, where it is used.
    std::array<char, 16384> buf;
    ssize_t n;
    while ((n = ::read(report_read_.get(), buf.data(), buf.size())) > 0) pending_.append(buf.data(), static_cast<std::size_t>(n));
    std::string_view text = pending_;
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (const std::size_t nl = text.rfind('\n'); nl != std::string_view::npos) text.remove_prefix(nl + 1);
    l.report = std::string(text);
    pending_.clear();
    return {pid, l};
  }

 private:
  static std::string fmt_errno(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

  pid_t start(const Row& row, int err_fd) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, devnull_.get(), 0);
    posix_spawn_file_actions_adddup2(&fa, devnull_.get(), 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    if (row.nsrun) posix_spawn_file_actions_adddup2(&fa, report_write_.get(), 3);
    auto argv = c_strings(row.argv);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      errno = rc;
      return -1;
    }
    spawned_.push_back(pid);
    return pid;
  }

  Fd devnull_;
  Fd report_read_;
  Fd report_write_;
  std::string pending_;
  std::vector<pid_t> spawned_;     // launches not yet waited for
  uint64_t left_behind_ns_ = 0;    // CPU of descendants reaped as the subreaper
};

// SIGALRM ends reap_left_behind()'s wait (EINTR: no SA_RESTART); nothing
// else in the bench uses it.
void on_alarm(int) {}

}  // namespace

Result<std::unique_ptr<Launcher>> process_launcher() {
  Fd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devnull) return fail(sys_error("open", "/dev/null"));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(sys_error("pipe", "report"));
  Fd r(fds[0]), w(fds[1]);
  if (::fcntl(r.get(), F_SETFL, O_NONBLOCK) != 0) return fail(sys_error("fcntl", "report"));
  // Descendants a launch leaves behind come to the bench to be reaped (and
  // counted), not to init.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return fail(sys_error("prctl", "child subreaper"));
  struct sigaction sa{};
  sa.sa_handler = on_alarm;
  ::sigaction(SIGALRM, &sa, nullptr);
  return std::unique_ptr<Launcher>(new ProcessLauncher(std::move(devnull), std::move(r), std::move(w)));
}

}  // namespace nsrun::bench
