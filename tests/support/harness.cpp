#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

extern char** environ;

namespace nsrun_test {

namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return fmt::format("{} ({})", name ? name : std::to_string(err), strerror(err));
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int ms_until(Clock::time_point until) {
  auto left = std::chrono::duration_cast<Millis>(until - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

std::string exe_dir() {
  std::string exe = read_link("/proc/self/exe");
  auto slash = exe.rfind('/');
  return slash == std::string::npos ? std::string(".") : exe.substr(0, slash);
}

std::optional<std::string> locate(const char* env_name, std::initializer_list<const char*> relative) {
  if (const char* forced = getenv(env_name); forced && *forced) return std::string(forced);
  std::string dir = exe_dir();
  for (const char* rel : relative) {
    std::string candidate = dir + "/" + rel;
    if (access(candidate.c_str(), X_OK) == 0) {
      std::unique_ptr<char, decltype(&free)> real(realpath(candidate.c_str(), nullptr), &free);
      return real ? std::string(real.get()) : candidate;
    }
  }
  return std::nullopt;
}

std::string require_binary(const char* name, const char* env_name,
                           std::initializer_list<const char*> relative) {
  if (auto found = locate(env_name, relative)) return *found;
  std::vector<std::string> tried;
  for (const char* rel : relative) tried.push_back(exe_dir() + "/" + rel);
  FAIL(fmt::format("{} not found (tried {}; set {} to override)", name, join(tried, ", "),
                   env_name));
  return {};
}

bool under_tmp(std::string_view path) { return path == "/tmp" || path.starts_with("/tmp/"); }

bool usable_dir(const char* path) {
  struct stat st;
  return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
         access(path, W_OK | X_OK) == 0;
}

std::string temp_base() {
  if (const char* forced = getenv("NSRUN_TEST_TMPDIR"); usable_dir(forced)) return forced;
  if (const char* tmpdir = getenv("TMPDIR"); usable_dir(tmpdir) && !under_tmp(tmpdir)) return tmpdir;
  if (usable_dir("/var/tmp")) return "/var/tmp";
  return "/tmp";
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Reads what is available; closes and clears `fd` at EOF.
void drain(int& fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close_fd(fd);  // EOF or a real error: nothing more will come
    return;
  }
}

std::string describe(const std::vector<std::string>& argv, const std::string& out,
                     const std::string& err) {
  return fmt::format("command: {}\n--- stdout ---\n{}\n--- stderr ---\n{}", join(argv), out, err);
}

}  // namespace

// ---------------------------------------------------------------- binaries

const std::string& nsrun_path() {
  static const std::string path = require_binary("nsrun", "NSRUN_TEST_NSRUN", {"nsrun", "../nsrun"});
  return path;
}

const std::string& probe_path() {
  static const std::string path = [] {
    std::string found = require_binary("nsrun-probe", "NSRUN_TEST_PROBE",
                                       {"nsrun-probe", "../tools/nsrun-probe"});
    if (!under_tmp(found)) return found;
    // Hidden inside by the private /tmp: copy it somewhere the sandbox sees.
    static TempDir home("probe");
    if (under_tmp(home.path())) return found;
    std::string copy = home / "nsrun-probe";
    write_file(copy, read_file(found), 0755);
    chmod(copy.c_str(), 0755);
    return copy;
  }();
  return path;
}

std::optional<std::string> nsrun_static_path() {
  return locate("NSRUN_TEST_NSRUN_STATIC", {"nsrun-static", "../nsrun-static"});
}

// ---------------------------------------------------------------- processes

Process::Process(const std::vector<std::string>& argv, const RunOptions& opts)
    : argv_(argv), timeout_(opts.timeout) {
  REQUIRE_FALSE(argv.empty());
  static const bool once = [] {
    // A child killed mid-write of its stdin must not take the test with it.
    ::signal(SIGPIPE, SIG_IGN);
    // With 0, 1 or 2 closed, a pipe could land there and be clobbered by the
    // child's dup2s: keep them occupied.
    for (int fd = 0; fd <= 2; ++fd) {
      if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
    }
    return true;
  }();
  (void)once;

  // Everything the child needs is built before fork: after fork it only
  // makes system calls.
  std::vector<char*> cargv;
  for (const auto& a : argv_) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  std::vector<std::string> env;
  if (!opts.clear_env) {
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
  }
  for (const auto& kv : opts.env) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(key); });
    env.push_back(kv);
  }
  std::vector<char*> cenv;
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out[2], err[2], in[2] = {-1, -1};
  REQUIRE(pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(pipe2(err, O_CLOEXEC) == 0);
  if (opts.stdin_text) {
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    stdin_text_ = *opts.stdin_text;
  } else {
    in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(in[0] >= 0);
  }
  const char* cwd = opts.cwd.empty() ? nullptr : opts.cwd.c_str();
  std::vector<std::string> cgroup_procs;
  for (const auto& dir : opts.cgroups) cgroup_procs.push_back(dir + "/cgroup.procs");
  const std::optional<unsigned long> nproc = opts.nproc;

  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    for (const auto& procs : cgroup_procs) {
      const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0", 1) != 1) {
        dprintf(STDERR_FILENO, "harness: %s: %s\n", procs.c_str(), strerror(errno));
        _exit(127);
      }
      close(fd);
    }
    if (nproc) {
      const rlimit limit{*nproc, *nproc};
      if (setrlimit(RLIMIT_NPROC, &limit) != 0) {
        dprintf(STDERR_FILENO, "harness: RLIMIT_NPROC: %s\n", strerror(errno));
        _exit(127);
      }
    }
    if (cwd && chdir(cwd) != 0) {
      dprintf(STDERR_FILENO, "harness: chdir %s: %s\n", cwd, strerror(errno));
      _exit(127);
    }
    execvpe(cargv[0], cargv.data(), cenv.data());
    dprintf(STDERR_FILENO, "harness: exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
  }
  // Both sides set the group, so it exists whichever runs first.
  setpgid(pid_, pid_);
  close(out[1]);
  close(err[1]);
  close(in[0]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  in_fd_ = in[1];
  set_nonblocking(out_fd_);
  set_nonblocking(err_fd_);
  if (in_fd_ >= 0) set_nonblocking(in_fd_);
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

Process::~Process() {
  // Only while the leader is unreaped is its pid certainly still our group.
  if (!exit_code_) {
    kill_group();
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close_fd(pidfd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(in_fd_);
}

void Process::kill_group() {
  if (pid_ > 0 && !exit_code_) kill(-pid_, SIGKILL);
}

void Process::signal(int sig) const {
  REQUIRE_FALSE(exit_code_.has_value());
  REQUIRE(kill(pid_, sig) == 0);
}

bool Process::pump(Clock::time_point until) {
  pollfd fds[4];
  int n = 0;
  int out_i = -1, err_i = -1, in_i = -1, pid_i = -1;
  if (out_fd_ >= 0) fds[out_i = n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[err_i = n++] = {err_fd_, POLLIN, 0};
  if (in_fd_ >= 0) fds[in_i = n++] = {in_fd_, POLLOUT, 0};
  if (pidfd_ >= 0 && !exit_code_) fds[pid_i = n++] = {pidfd_, POLLIN, 0};

  int wait_ms = ms_until(until);
  // Without a pidfd the leader's exit is noticed by polling waitpid.
  if (pidfd_ < 0 && !exit_code_) wait_ms = std::min(wait_ms, 20);
  if (n > 0) {
    int rc = poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) FAIL("poll: " << errno_text(errno));
    if (rc > 0) {
      if (out_i >= 0 && fds[out_i].revents) drain(out_fd_, out_);
      if (err_i >= 0 && fds[err_i].revents) drain(err_fd_, err_);
      if (in_i >= 0 && fds[in_i].revents) {
        ssize_t w = write(in_fd_, stdin_text_.data() + stdin_written_,
                          stdin_text_.size() - stdin_written_);
        if (w > 0) stdin_written_ += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_written_ == stdin_text_.size()) {
          close_fd(in_fd_);
        }
      }
    }
  } else if (!exit_code_ && wait_ms > 0) {
    std::this_thread::sleep_for(Millis(wait_ms));  // nothing to watch but waitpid
  }
  if (!exit_code_) {
    int status;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = decode_status(status);
      close_fd(pidfd_);
      // Nobody reads stdin any more.
      close_fd(in_fd_);
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

void Process::fail_timeout(std::string_view what) {
  kill_group();
  if (!exit_code_) {
    int status;
    if (waitpid(pid_, &status, 0) == pid_) exit_code_ = decode_status(status);
  }
  FAIL(fmt::format("timed out after {} ms waiting for {}; the process group was killed\n{}",
                   timeout_.count(), what, describe(argv_, out_, err_)));
  std::abort();  // not reached: FAIL throws
}

std::optional<std::string> Process::poll_line(std::string_view prefix, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    // Lines before a match are consumed, so the next call finds the next one.
    size_t pos = line_scan_;
    for (size_t eol; (eol = out_.find('\n', pos)) != std::string::npos; pos = eol + 1) {
      std::string_view line(out_.data() + pos, eol - pos);
      if (line.starts_with(prefix)) {
        line_scan_ = eol + 1;
        return std::string(line);
      }
    }
    line_scan_ = pos;
    if (out_fd_ < 0 || Clock::now() >= deadline) return std::nullopt;
    pump(deadline);
  }
}

std::string Process::wait_for_line(std::string_view prefix, std::optional<Millis> timeout) {
  if (auto line = poll_line(prefix, timeout.value_or(timeout_))) return *line;
  if (out_fd_ < 0) {
    FAIL(fmt::format("stdout ended before a line starting with '{}' (exit code {})\n{}", prefix,
                     exit_code_ ? std::to_string(*exit_code_) : "unknown",
                     describe(argv_, out_, err_)));
  }
  fail_timeout(fmt::format("a line starting with '{}'", prefix));
}

RunResult Process::wait(std::optional<Millis> timeout) {
  auto deadline = Clock::now() + timeout.value_or(timeout_);
  while (!exit_code_) {
    if (Clock::now() >= deadline) fail_timeout("the process to exit");
    pump(deadline);
  }
  // The leader is gone; its pipes close as soon as the last process holding
  // them exits (sandbox processes die with it). Read to EOF, but do not let
  // a straggler hold the test hostage: a leftover process is for the tests
  // to detect, not for the harness to hang on.
  auto drain_until = std::min(deadline, Clock::now() + 5s);
  while ((out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < drain_until) pump(drain_until);
  if (out_fd_ >= 0) drain(out_fd_, out_);
  if (err_fd_ >= 0) drain(err_fd_, err_);
  return RunResult{*exit_code_, out_, err_};
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts) {
  Process p(argv, opts);
  return p.wait();
}

RunOptions at(const TempDir& dir) {
  RunOptions opts;
  opts.cwd = dir.path();
  return opts;
}

RunResult nsrun(const std::vector<std::string>& args, const RunOptions& opts) {
  std::vector<std::string> argv{nsrun_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, opts);
}

// ---------------------------------------------------------------- files

TempDir::TempDir(std::string_view tag) {
  std::string templ = fmt::format("{}/nsrun-{}-XXXXXX", temp_base(), tag);
  REQUIRE(mkdtemp(templ.data()) != nullptr);
  REQUIRE(chmod(templ.c_str(), 0755) == 0);
  std::unique_ptr<char, decltype(&free)> real(realpath(templ.c_str(), nullptr), &free);
  path_ = real ? std::string(real.get()) : templ;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  nftw(
      path_.c_str(),
      [](const char* p, const struct stat*, int, FTW*) {
        remove(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

std::string TempDir::operator/(std::string_view name) const {
  return fmt::format("{}/{}", path_, name);
}

namespace {

// The whole file, or nullopt (with open's errno) when it cannot be opened.
std::optional<std::string> try_read(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::optional<std::string> data = try_read(path);
  if (!data) FAIL(fmt::format("read_file {}: {}", path, errno_text(errno)));
  return std::move(*data);
}

void write_file(const std::string& path, std::string_view text, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) FAIL(fmt::format("write_file {}: {}", path, errno_text(errno)));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      FAIL(fmt::format("write_file {}: {}", path, errno_text(err)));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  // O_CREAT's mode is filtered by the umask; tests ask for exact modes.
  chmod(path.c_str(), mode);
}

bool file_exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

void make_dir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0) FAIL(fmt::format("mkdir {}: {}", path, errno_text(errno)));
  chmod(path.c_str(), mode);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------- kernel state

void unavailable(std::string_view feature, std::string_view reason) {
  const char* required = getenv("NSRUN_TEST_REQUIRE");
  if (required && std::string_view(required).find(feature) != std::string_view::npos) {
    FAIL(fmt::format("{} required (NSRUN_TEST_REQUIRE={}) but unavailable: {}", feature, required,
                     reason));
  }
  SKIP(fmt::format("{} unavailable: {}", feature, reason));
  std::abort();  // not reached: SKIP throws
}

void require_landlock() {
  static const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  if (abi < 1) unavailable("landlock", "landlock_create_ruleset reports no ABI");
}

std::vector<std::string> rung_options(Rung rung) {
  if (rung == Rung::namespaces) {
    require_userns();
    return {"--backend", "namespaces"};
  }
  require_landlock();
  // A kernel whose Landlock ABI cannot express the default policy makes
  // nsrun refuse the rung: skip loudly (or fail when it is required).
  static const std::string refusal = [] {
    TempDir ws("ll");
    RunResult r = nsrun({"--backend", "landlock", "--", "/bin/true"}, at(ws));
    return r.exit_code == 0 ? std::string() : chomp(r.err.empty() ? r.out : r.err);
  }();
  if (!refusal.empty())
    unavailable("landlock", fmt::format("nsrun refuses --backend landlock here ({})", refusal));
  return {"--backend", "landlock"};
}

void require_userns() {
  // 0: usable; otherwise the errno of the refusal. Asked once per run.
  static const int refusal = [] {
    pid_t child = fork();
    if (child < 0) return errno;
    if (child == 0) {
      _exit(unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) == 0 ? 0 : errno);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : EINVAL;
  }();
  if (refusal != 0) {
    unavailable("userns", fmt::format("unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): {}",
                                      errno_text(refusal)));
  }
}

namespace {

template <typename F>
void for_each_pid(F&& f) {
  struct Closer {
    void operator()(DIR* d) const { closedir(d); }
  };
  std::unique_ptr<DIR, Closer> dir(opendir("/proc"));
  if (!dir) return;
  while (dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (pid > 0 && end && *end == '\0') f(static_cast<pid_t>(pid));
  }
}

}  // namespace

std::vector<pid_t> processes_with_marker(std::string_view marker) {
  std::vector<pid_t> found;
  pid_t self = getpid();
  for_each_pid([&](pid_t pid) {
    if (pid == self) return;
    auto cmdline = try_read(fmt::format("/proc/{}/cmdline", pid));
    if (cmdline && cmdline->find(marker) != std::string::npos) found.push_back(pid);
  });
  return found;
}

std::vector<pid_t> processes_in_group(pid_t pgid) {
  std::vector<pid_t> found;
  for_each_pid([&](pid_t pid) {
    auto stat = try_read(fmt::format("/proc/{}/stat", pid));
    if (!stat) return;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
    auto paren = stat->rfind(')');
    if (paren == std::string::npos) return;
    char state;
    int ppid, pgrp;
    if (sscanf(stat->c_str() + paren + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
        pgrp == pgid && state != 'Z') {
      found.push_back(pid);
    }
  });
  return found;
}

bool eventually(const std::function<bool()>& condition, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);  // polling a kernel condition, bounded by the deadline
  }
  return true;
}

std::string unique_token(std::string_view tag) {
  static unsigned counter = 0;
  auto now = Clock::now().time_since_epoch().count();
  return fmt::format("nsrun-{}-{}-{}-{:x}", tag, getpid(), ++counter,
                     static_cast<unsigned long long>(now) & 0xffffff);
}

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<size_t>(n));
}

std::string chomp(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

size_t count_lines(std::string_view s) {
  size_t n = static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace nsrun_test
