// The integration-test harness: runs nsrun (and the nsrun-probe helper inside
// it) as real processes and hands back what they printed and how they ended,
// so tests assert effects: host files, /proc contents, exit codes.
//
// Synchronisation is by output lines and process exit, never by sleeping.
// The only polling is `eventually()`, for conditions the kernel settles a
// moment after an exit (reaping), always with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nsrun_test {

using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

// ---------------------------------------------------------------- binaries

// nsrun and nsrun-probe sit beside the test executable (a copied install),
// or in the build tree layout build/nsrun and build/tools/nsrun-probe
// relative to build/tests/. NSRUN_TEST_NSRUN / NSRUN_TEST_PROBE override.
// FAILs the test when a binary cannot be found.
const std::string& nsrun_path();
// The probe as the sandbox can reach it. A host path under /tmp would be
// hidden inside by the sandbox's private /tmp, so such a probe is first
// copied to a directory that the sandbox sees.
const std::string& probe_path();
// The fully static nsrun (nsrun-static, beside nsrun), when it was built.
std::optional<std::string> nsrun_static_path();

// ---------------------------------------------------------------- processes

struct RunOptions {
  std::string cwd;                  // empty: inherit
  std::vector<std::string> env;     // "K=V", added to (or replacing) the inherited environment
  bool clear_env = false;           // start from an empty environment
  std::optional<std::string> stdin_text;  // nullopt: stdin is /dev/null
  Millis timeout = 30s;             // the whole run; on expiry the group is killed and the test FAILs
  // An outer limit for resource attacks, set up in the child before exec:
  // the cgroup directories it moves itself into (writing "0" to each
  // cgroup.procs), and an RLIMIT_NPROC. A failure exits 127 before exec.
  std::vector<std::string> cgroups;
  std::optional<unsigned long> nproc;
};

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up in PATH when not a path) in a new process
// group, reading stdout and stderr concurrently, and waits for it to end.
RunResult run(const std::vector<std::string>& argv, const RunOptions& opts = {});

class TempDir;

// Options for running in `dir` (usually the workspace), all else default.
RunOptions at(const TempDir& dir);

// run({nsrun_path(), args...}, opts).
RunResult nsrun(const std::vector<std::string>& args, const RunOptions& opts = {});

// A started process, for tests that must act while it runs (wait for a
// `ready` line, signal it, then wait). The destructor kills the whole process
// group and reaps the leader if the test did not wait for it.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv, const RunOptions& opts = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }  // also the process group id

  // Reads until stdout holds a complete line starting with `prefix` and
  // returns that line (without the newline). FAILs on EOF, exit or timeout.
  std::string wait_for_line(std::string_view prefix, std::optional<Millis> timeout = {});
  // The same without failing: nullopt when stdout ends or `timeout` passes
  // first (the process keeps running).
  std::optional<std::string> poll_line(std::string_view prefix, Millis timeout);

  // kill(pid, sig): the leader only, not the group.
  void signal(int sig) const;

  // Waits for the leader to exit, collecting its output. FAILs on timeout.
  RunResult wait(std::optional<Millis> timeout = {});

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // Reads whatever is ready within `until`; returns false when nothing more
  // can come (both pipes at EOF).
  bool pump(std::chrono::steady_clock::time_point until);
  [[noreturn]] void fail_timeout(std::string_view what);
  void kill_group();

  std::vector<std::string> argv_;
  Millis timeout_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int in_fd_ = -1;
  std::string stdin_text_;
  size_t stdin_written_ = 0;
  std::string out_;
  std::string err_;
  size_t line_scan_ = 0;
  std::optional<int> exit_code_;
};

// ---------------------------------------------------------------- files

// A fresh directory (mode 0755) removed recursively at the end. Created under
// $NSRUN_TEST_TMPDIR, else $TMPDIR, else /var/tmp, and only as a last resort
// under /tmp: the sandbox has a private /tmp, so a host directory under /tmp
// is not visible inside and a "write outside the workspace" would fail with
// ENOENT instead of showing the read-only host (EROFS).
class TempDir {
 public:
  explicit TempDir(std::string_view tag = "t");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }  // canonical, absolute
  std::string operator/(std::string_view name) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);  // FAILs when unreadable
void write_file(const std::string& path, std::string_view text, mode_t mode = 0644);
bool file_exists(const std::string& path);       // lstat: does not follow
void make_dir(const std::string& path, mode_t mode = 0755);
// The names in a directory, sorted, without "." and ".."; none when it cannot be opened.
std::vector<std::string> names_in(const std::string& dir);

// ---------------------------------------------------------------- kernel state

// Checks that a user namespace (with mount and PID namespaces) can be made.
// If not: FAIL when $NSRUN_TEST_REQUIRE contains "userns", else a loud SKIP.
void require_userns();
// The same for Landlock (any ABI).
void require_landlock();

// The two rungs, for tests that run an attack on each: the options that pin
// the rung, after checking (require_userns / require_landlock) that it can
// run here.
enum class Rung { namespaces, landlock };
std::vector<std::string> rung_options(Rung rung);

// Like require_userns for any optional feature: FAILs when
// $NSRUN_TEST_REQUIRE contains `feature`, else SKIPs with `reason`.
[[noreturn]] void unavailable(std::string_view feature, std::string_view reason);

// Host pids whose /proc/<pid>/cmdline contains `marker` (this process excluded).
std::vector<pid_t> processes_with_marker(std::string_view marker);
// Host pids in process group `pgid`.
std::vector<pid_t> processes_in_group(pid_t pgid);

// Polls `condition` until it holds or `timeout` passes; returns its last value.
bool eventually(const std::function<bool()>& condition, Millis timeout = 5s);

// A string unique to this test run, for markers and file names.
std::string unique_token(std::string_view tag = "tok");

// readlink(2) of a host path; empty on failure.
std::string read_link(const std::string& path);

// Removes one trailing newline.
std::string chomp(std::string s);

// The number of lines in `s` (a final line without a newline counts).
size_t count_lines(std::string_view s);

// Quotes `s` for a POSIX shell: 'it'\''s'.
std::string shell_quote(std::string_view s);

// "a b c" style joining, for messages.
std::string join(const std::vector<std::string>& parts, std::string_view sep = " ");

}  // namespace nsrun_test
