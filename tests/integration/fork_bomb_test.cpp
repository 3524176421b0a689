// A fork bomb ends with the sandbox: on each rung, --timeout ends
// everything the command started within the kill-after grace plus a bounded
// margin, and nothing of it outlives nsrun however nsrun ends (SIGTERM,
// SIGKILL). The bomb, `b(){ b|b & }; b`, forks faster than any loop that
// kills one process at a time.
//
// Every bomb runs inside an outer limit set up first, so that a bug fails
// the test and never takes the machine down: as root a pids cgroup v1 of
// the test's own (pids.max, plus a freezer cgroup to end a bomb that got
// away) that nsrun is moved into before exec; as any other user an
// RLIMIT_NPROC set before exec at the tasks that uid has now plus the
// bomb's allowance (the count is per uid: other processes of the uid
// only make the bomb smaller, and theirs are not limited).
#include "harness.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

using Clock = std::chrono::steady_clock;

constexpr unsigned long allowance = 2000;  // processes the bomb may have at once
// What a loaded two-core machine may add to the timeout and the kill-after
// (nsrun's supervisor gets its turn among the bomb's processes, then one
// kill(-1) and the reaping), and the longest wait for a 'gone'.
constexpr auto margin = 20s;

std::optional<std::string> try_read(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Tasks (threads) whose real uid is `uid`: what RLIMIT_NPROC counts.
unsigned long tasks_of_uid(uid_t uid) {
  unsigned long tasks = 0;
  DIR* proc = ::opendir("/proc");
  REQUIRE(proc != nullptr);
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const auto status = try_read(fmt::format("/proc/{}/status", e->d_name));
    if (!status) continue;
    const auto u = status->find("\nUid:\t");
    const auto t = status->find("\nThreads:\t");
    if (u == std::string::npos || t == std::string::npos) continue;
    if (std::strtoul(status->c_str() + u + 6, nullptr, 10) == uid) tasks += std::strtoul(status->c_str() + t + 10, nullptr, 10);
  }
  ::closedir(proc);
  return tasks;
}

bool is_cgroup_v1(const std::string& dir) {
  struct statfs st{};
  return ::statfs(dir.c_str(), &st) == 0 && st.f_type == CGROUP_SUPER_MAGIC;
}

// The outer limit, and the count of what is left of the bomb.
class OuterLimit {
 public:
  explicit OuterLimit(std::string marker) : marker_(std::move(marker)) {
    if (::geteuid() != 0) {
      nproc_ = tasks_of_uid(::getuid()) + allowance;
      return;
    }
    if (!is_cgroup_v1("/sys/fs/cgroup/pids"))
      unavailable("pids-cgroup", "no cgroup v1 pids hierarchy at /sys/fs/cgroup/pids to hold the bomb");
    pids_ = "/sys/fs/cgroup/pids/" + marker_;
    make_dir(pids_);
    write_file(pids_ + "/pids.max", std::to_string(allowance));
    if (is_cgroup_v1("/sys/fs/cgroup/freezer")) {
      freezer_ = "/sys/fs/cgroup/freezer/" + marker_;
      make_dir(freezer_);
    }
  }

  // A bomb that outlived the test's checks (which have failed it by then)
  // is ended here: frozen (or stopped) first so that it cannot fork while
  // it is killed.
  ~OuterLimit() {
    if (!pids_.empty()) {
      eventually([&] {
        if (!freezer_.empty()) (void)try_write(freezer_ + "/freezer.state", "FROZEN");
        for (pid_t pid : tasks()) ::kill(pid, SIGKILL);
        if (!freezer_.empty()) (void)try_write(freezer_ + "/freezer.state", "THAWED");
        return tasks().empty();
      }, margin);
      // The last tasks leave the cgroup a moment after they are reaped.
      for (const std::string& dir : {freezer_, pids_})
        if (!dir.empty()) eventually([&] { return ::rmdir(dir.c_str()) == 0 || errno == ENOENT; });
      return;
    }
    std::vector<pid_t> stopped;
    eventually([&] {
      const auto now = processes_with_marker(marker_);
      for (pid_t pid : now) ::kill(pid, SIGSTOP);
      const bool more = std::ranges::any_of(now, [&](pid_t p) { return std::ranges::find(stopped, p) == stopped.end(); });
      stopped = now;
      return !more;
    }, margin);
    for (pid_t pid : stopped) ::kill(pid, SIGKILL);
    for (pid_t pid : stopped) ::kill(pid, SIGCONT);
  }

  OuterLimit(const OuterLimit&) = delete;
  OuterLimit& operator=(const OuterLimit&) = delete;

  RunOptions options(const TempDir& ws) const {
    RunOptions o = at(ws);
    o.timeout = 120s;
    if (!pids_.empty()) o.cgroups = {pids_};
    if (!freezer_.empty()) o.cgroups.push_back(freezer_);
    o.nproc = nproc_;
    return o;
  }

  // Processes of the run (nsrun and its supervisor too: their argv holds
  // the marker) still there. As root the cgroup's own count, which misses
  // nothing (pids.current counts a task until it is reaped).
  std::size_t left() const {
    if (!pids_.empty()) return pids_current();
    return processes_with_marker(marker_).size();
  }

  // Tasks of the run now, zombies included: the cgroup's, or the uid's
  // beyond what it had before.
  std::size_t count() const {
    if (!pids_.empty()) return pids_current();
    const unsigned long now = tasks_of_uid(::getuid());
    return now > *nproc_ - allowance ? now - (*nproc_ - allowance) : 0;
  }

 private:
  std::size_t pids_current() const {
    const auto text = try_read(pids_ + "/pids.current");
    REQUIRE(text);
    return std::strtoul(text->c_str(), nullptr, 10);
  }
  std::vector<pid_t> tasks() const {
    std::vector<pid_t> out;
    const auto text = try_read(pids_ + "/tasks");
    if (!text) return out;
    for (const char* p = text->c_str(); *p != '\0';) {
      char* end = nullptr;
      const long pid = std::strtol(p, &end, 10);
      if (end == p) break;
      out.push_back(static_cast<pid_t>(pid));
      p = end;
    }
    return out;
  }
  static bool try_write(const std::string& path, std::string_view text) {
    FILE* f = std::fopen(path.c_str(), "we");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    return std::fclose(f) == 0 && ok;
  }

  std::string marker_;
  std::string pids_;
  std::string freezer_;
  std::optional<unsigned long> nproc_;
};

// The command: the bomb, then the command itself waits for ever in the
// open of a FIFO nobody writes (a builtin, so it keeps the marker, $0, in
// its argv as every subshell of the bomb does). `ignore_term`: SIGTERM is
// ignored by all of it, so only the kill-after's SIGKILL ends it. Its
// "Cannot fork" lines go nowhere: written to the test's pipe, which nobody
// reads while the bomb runs, they would block the bomb once the pipe is
// full, and a bomb that waits is one a kill loop catches up with.
std::vector<std::string> bomb(const TempDir& ws, const std::string& marker, bool ignore_term) {
  REQUIRE(::mkfifo((ws / "hold").c_str(), 0600) == 0);
  const std::string script =
      std::string(ignore_term ? "trap '' TERM; " : "") + "exec 2>/dev/null; b(){ b|b & }; b; read x < hold";
  return {"--", "/bin/sh", "-c", script, marker};
}

// The end of nsrun's stderr, for a failure's message.
std::string tail(const std::string& s) { return s.size() <= 600 ? s : "..." + s.substr(s.size() - 600); }

std::vector<std::string> nsrun_argv(const std::vector<std::string>& options, const std::vector<std::string>& rest) {
  return concat(concat({nsrun_path()}, options), rest);
}

// Waits until the bomb has really started: 300 processes at once, zombies
// included (under load its reapers lag, and most of a bomb at its ceiling
// is zombies, which no longer show their argv).
void wait_for_bomb(Process& p, const OuterLimit& limit) {
  std::size_t most = 0;
  const bool going = eventually([&] {
    most = std::max(most, limit.count());
    return most >= 300;
  }, margin);
  if (!going) {
    p.signal(SIGKILL);
    RunResult r = p.wait();
    FAIL("the bomb never had 300 processes at once (at most " << most << "); nsrun: " << r.exit_code << ", "
                                                                << tail(r.err));
  }
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One bomb's workspace, marker and outer limit.
struct Bomb {
  explicit Bomb(std::string_view tag) : ws(tag), marker(unique_token("bomb")), limit(marker) {}
  TempDir ws;
  std::string marker;
  OuterLimit limit;
};

// nsrun with the bomb, `sig` sent to nsrun once the bomb has grown; nsrun's
// result and how long after the signal it ended.
std::pair<RunResult, Clock::duration> signal_nsrun(const std::vector<std::string>& options, Bomb& b, bool ignore_term,
                                                   int sig) {
  Process p(nsrun_argv(options, bomb(b.ws, b.marker, ignore_term)), b.limit.options(b.ws));
  wait_for_bomb(p, b.limit);
  const auto start = Clock::now();
  p.signal(sig);
  RunResult r = p.wait();
  return {r, Clock::now() - start};
}

void timeout_ends_the_bomb(Rung rung) {
  const auto options = rung_options(rung);
  Bomb b("bomb-timeout");
  constexpr auto timeout = 10s;
  constexpr auto kill_after = 1s;
  const auto start = Clock::now();
  Process p(nsrun_argv(options, concat({"--timeout", "10s", "--kill-after", "1s"}, bomb(b.ws, b.marker, true))),
            b.limit.options(b.ws));
  wait_for_bomb(p, b.limit);
  RunResult r = p.wait();
  const auto took = Clock::now() - start;
  INFO("nsrun took " << seconds(took) << " s; stderr: " << tail(r.err));
  CHECK(r.exit_code == 124);
  // The bound: the timeout, the kill-after grace, and the margin.
  CHECK(took <= timeout + kill_after + margin);
  // nsrun returns only once the sandbox has ended: nothing to wait for.
  CHECK(b.limit.left() == 0);
}

void sigterm_ends_the_bomb(Rung rung) {
  const auto options = rung_options(rung);
  Bomb b("bomb-term");
  const auto [r, took] = signal_nsrun(options, b, false, SIGTERM);
  INFO("nsrun took " << seconds(took) << " s after SIGTERM; stderr: " << tail(r.err));
  // The command (its shell) died of the SIGTERM nsrun passed on.
  CHECK(r.exit_code == 128 + SIGTERM);
  CHECK(took <= margin);
  CHECK(b.limit.left() == 0);
}

void sigkill_of_nsrun_ends_the_bomb(Rung rung) {
  const auto options = rung_options(rung);
  Bomb b("bomb-kill");
  const auto [r, took] = signal_nsrun(options, b, true, SIGKILL);
  CHECK(r.exit_code == 128 + SIGKILL);
  // No one to wait for: the sandbox ends by itself (the supervisor's
  // parent-death signal, PID 1's death).
  const bool gone = eventually([&] { return b.limit.left() == 0; }, margin);
  INFO("left " << seconds(took) << " s after the SIGKILL and later: " << b.limit.left());
  CHECK(gone);
}

// The kernel's Landlock ABI, 0 without Landlock.
int landlock_abi() {
  const long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /* LANDLOCK_CREATE_RULESET_VERSION */);
  return v < 0 ? 0 : static_cast<int>(v);
}

}  // namespace

TEST_CASE("nsrun probe says how the Landlock rung ends the sandbox", "[bomb][landlock]") {
  require_landlock();
  TempDir ws("bomb-probe");
  RunResult text = nsrun({"probe"}, at(ws));
  RunResult json = nsrun({"probe", "--json"}, at(ws));
  INFO(text.out << json.out);
  if (landlock_abi() >= 6) {
    CHECK(text.out.find("landlock: ends the sandbox at once: kill(-1) from the supervisor's Landlock signal scope") !=
          std::string::npos);
    CHECK(json.out.find("\"ends_sandbox\": \"signal-scope\"") != std::string::npos);
  } else {
    CHECK(text.out.find("landlock: ends the sandbox one process at a time") != std::string::npos);
    CHECK(json.out.find("\"ends_sandbox\": \"one-by-one\"") != std::string::npos);
    // What cannot be kept is refused, and best-effort says so.
    RunResult strict = nsrun({"--backend", "landlock", "--timeout", "5s", "--", "/bin/true"}, at(ws));
    CHECK(strict.exit_code == 125);
    CHECK(strict.err.find("fork bomb") != std::string::npos);
  }
  CHECK(json.out.find("\"ends_sandbox\": \"pid-namespace\"") != std::string::npos);
}

TEST_CASE("the command cannot kill the Landlock rung's supervisor that would end it", "[bomb][landlock]") {
  const auto options = rung_options(Rung::landlock);
  TempDir ws("bomb-supervisor");
  // Its parent is the supervisor: SIGKILL and SIGSTOP are both refused.
  RunResult r = nsrun(concat(options, {"--", "/bin/sh", "-c", "kill -KILL $PPID || kill -STOP $PPID || echo refused"}),
                      at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "refused\n");
  CHECK(r.err.find("Operation not permitted") != std::string::npos);
}

NSRUN_BOTH_RUNGS("[bomb]", "a fork bomb ends at --timeout within the kill-after and a margin and nothing is left", "",
                 timeout_ends_the_bomb)
NSRUN_BOTH_RUNGS("[bomb]", "a fork bomb ends with the command when nsrun is sent SIGTERM and nothing is left", "",
                 sigterm_ends_the_bomb)
NSRUN_BOTH_RUNGS("[bomb]", "a fork bomb ends when nsrun is SIGKILLed and nothing is left", "", sigkill_of_nsrun_ends_the_bomb)
