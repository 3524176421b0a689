// What the Landlock rung must keep beyond file contents. Each attack is one
// nsrun-probe attempt inside; each test checks the host afterwards (stat,
// xattrs, inode flags, the IPC object, the process table, the TMPDIR), and a
// control run of the same probe outside any sandbox shows the attack really
// changes the host when nothing stops it, so a pass is not a broken
// measurement.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// `--backend landlock`, after checking that the rung can run here.
std::vector<std::string> landlock_options() {
  require_landlock();
  static const std::string refusal = [] {
    TempDir ws("ll");
    RunResult r = nsrun({"--backend", "landlock", "--", probe_path(), "getpid"}, at(ws));
    return r.exit_code == 0 ? std::string() : chomp(r.err.empty() ? r.out : r.err);
  }();
  if (!refusal.empty()) unavailable("landlock-rung", fmt::format("nsrun rejects --backend landlock ({})", refusal));
  return {"--backend", "landlock"};
}

RunResult probe_in(const std::vector<std::string>& options, const std::vector<std::string>& probe_args,
                   const TempDir& ws) {
  std::vector<std::string> args = options;
  args.push_back("--");
  args.push_back(probe_path());
  args.insert(args.end(), probe_args.begin(), probe_args.end());
  return nsrun(args, at(ws));
}

// The same probe with no sandbox at all: the control.
RunResult probe_on_host(const std::vector<std::string>& probe_args) {
  std::vector<std::string> argv{probe_path()};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return run(argv);
}

// Everything a metadata change could alter, read on the host. ctime moves
// with any inode change at all, so it catches what the other fields miss.
struct Meta {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  timespec mtime{};
  timespec ctime{};
  std::string xattr;  // user.nsrun, "(none)" when absent
  long flags = -1;    // FS_IOC_GETFLAGS, -1 when the file system has none

  bool operator==(const Meta& o) const {
    return mode == o.mode && uid == o.uid && gid == o.gid && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec &&
           xattr == o.xattr && flags == o.flags;
  }
};

std::string describe(const Meta& m) {
  return fmt::format("mode {:o} uid {} gid {} mtime {}.{} ctime {}.{} xattr {} flags {:#x}", m.mode, m.uid, m.gid,
                     m.mtime.tv_sec, m.mtime.tv_nsec, m.ctime.tv_sec, m.ctime.tv_nsec, m.xattr, m.flags);
}

Meta meta_of(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  Meta m{st.st_mode & 07777, st.st_uid, st.st_gid, st.st_mtim, st.st_ctim, "(none)", -1};
  char value[64];
  const ssize_t n = ::getxattr(path.c_str(), "user.nsrun", value, sizeof value);
  if (n >= 0) m.xattr.assign(value, static_cast<std::size_t>(n));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
  const int fd2 = fd >= 0 ? fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int flags = 0;
  if (fd2 >= 0 && ::ioctl(fd2, FS_IOC_GETFLAGS, &flags) == 0) m.flags = flags;
  if (fd2 >= 0) ::close(fd2);
  return m;
}

// A host file set up so that every `meta` operation of the probe would
// change something visible: setuid and setgid bits (chmod 04755 and chown
// both change them), an old mtime, an xattr to remove (where the file
// system takes user xattrs).
std::string victim(const TempDir& dir, const std::string& name) {
  const std::string path = dir / name;
  write_file(path, "host\n", 0644);
  REQUIRE(::chmod(path.c_str(), 06750) == 0);
  const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old, 0) == 0);
  (void)::setxattr(path.c_str(), "user.nsrun", "host", 4, 0);
  return path;
}

constexpr const char* kMetaOps[] = {"chmod",  "fchmod",      "chown",  "utimensat",
                                    "setxattr", "removexattr", "chattr", "chattr-high"};

// The control: outside any sandbox the probe's operation changes the file
// (or the file system cannot do it at all, which the test says).
bool changes_on_host(const TempDir& dir, const std::string& op) {
  const std::string path = victim(dir, "control-" + op);
  const Meta before = meta_of(path);
  RunResult r = probe_on_host({"meta", op, path});
  if (r.exit_code != 0) {
    WARN("control: " << op << " does not work on this file system even unconfined: " << r.out);
    return false;
  }
  const Meta after = meta_of(path);
  INFO(op << ": " << describe(before) << " -> " << describe(after));
  CHECK_FALSE(before == after);
  return true;
}

}  // namespace

TEST_CASE("landlock rung: metadata of a file outside the writable roots cannot change",
          "[landlock][escape][metadata]") {
  const auto rung = landlock_options();
  TempDir ws("ws");
  TempDir outside("out");
  TempDir control("ctl");
  for (const char* mode : {"workspace-write", "read-only"}) {
    for (const std::string op : kMetaOps) {
      if (std::string(mode) == "workspace-write" && !changes_on_host(control, op)) continue;
      const std::string path = victim(outside, fmt::format("{}-{}", mode, op));
      const Meta before = meta_of(path);
      std::vector<std::string> options = rung;
      options.insert(options.end(), {"--mode", mode});
      RunResult r = probe_in(options, {"meta", op, path}, ws);
      INFO(mode << " " << op << " stdout: " << r.out << " stderr: " << r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.out == "error EPERM\n");
      const Meta after = meta_of(path);
      INFO(describe(before) << " -> " << describe(after));
      CHECK(before == after);
    }
  }
}

// The price of the rule above, documented in docs/hardening.md: the filter
// cannot tell the workspace from /usr, so the same calls are refused inside
// the writable roots (and the private TMPDIR) too. On the namespace rung
// they work in the workspace.
TEST_CASE("landlock rung: metadata changes inside the workspace are refused too (the price)",
          "[landlock][escape][metadata]") {
  const auto rung = landlock_options();
  TempDir ws("ws");
  for (const std::string op : kMetaOps) {
    const std::string path = victim(ws, "in-" + op);
    const Meta before = meta_of(path);
    RunResult r = probe_in(rung, {"meta", op, path}, ws);
    INFO(op << " stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out == "error EPERM\n");
    CHECK(meta_of(path) == before);
  }
  // `chmod +x` in the workspace, as a build script would.
  write_file(ws / "script", "#!/bin/sh\n", 0644);
  RunResult r = nsrun({"--backend", "landlock", "--", "chmod", "+x", ws / "script"}, at(ws));
  CHECK(r.exit_code != 0);
  struct stat st{};
  REQUIRE(::stat((ws / "script").c_str(), &st) == 0);
  CHECK((st.st_mode & 0111) == 0);
}

TEST_CASE("namespace rung: metadata outside the workspace cannot change; inside it can",
          "[escape][metadata]") {
  require_userns();
  TempDir ws("ws");
  TempDir outside("out");
  for (const std::string op : {"chmod", "chown", "utimensat", "setxattr"}) {
    const std::string path = victim(outside, "ns-" + op);
    const Meta before = meta_of(path);
    RunResult r = probe_in({}, {"meta", op, path}, ws);
    INFO(op << " stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(meta_of(path) == before);
  }
  const std::string inside = victim(ws, "ns-in");
  CHECK(probe_in({}, {"meta", "chmod", inside}, ws).out == "ok\n");
}

// ---------------------------------------------------------------- IPC

namespace {

struct Shm {
  int id = -1;
  explicit Shm() : id(::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0666)) {}
  ~Shm() {
    if (id >= 0) ::shmctl(id, IPC_RMID, nullptr);
  }
  std::string head() const {
    void* p = ::shmat(id, nullptr, SHM_RDONLY);
    REQUIRE(p != reinterpret_cast<void*>(-1));
    std::string s(static_cast<const char*>(p), 5);
    ::shmdt(p);
    return s;
  }
  void fill(const char* text) const {
    void* p = ::shmat(id, nullptr, 0);
    REQUIRE(p != reinterpret_cast<void*>(-1));
    std::memcpy(p, text, std::strlen(text));
    ::shmdt(p);
  }
};

struct Msg {
  int id = ::msgget(IPC_PRIVATE, IPC_CREAT | 0666);
  ~Msg() {
    if (id >= 0) ::msgctl(id, IPC_RMID, nullptr);
  }
  msgqnum_t count() const {
    msqid_ds ds{};
    REQUIRE(::msgctl(id, IPC_STAT, &ds) == 0);
    return ds.msg_qnum;
  }
};

struct Sem {
  int id = ::semget(IPC_PRIVATE, 1, IPC_CREAT | 0666);
  ~Sem() {
    if (id >= 0) ::semctl(id, 0, IPC_RMID);
  }
  int value() const { return ::semctl(id, 0, GETVAL); }
};

bool mq_exists(const std::string& name) {
  const mqd_t q = ::mq_open(("/" + name).c_str(), O_RDONLY);
  if (q == static_cast<mqd_t>(-1)) return false;
  ::mq_close(q);
  return true;
}

}  // namespace

TEST_CASE("landlock rung: host SysV IPC and POSIX message queues are out of reach", "[landlock][escape][ipc]") {
  const auto rung = landlock_options();
  TempDir ws("ws");
  for (const char* mode : {"workspace-write", "read-only"}) {
    std::vector<std::string> options = rung;
    options.insert(options.end(), {"--mode", mode});
    INFO("mode " << mode);

    Shm shm;
    REQUIRE(shm.id >= 0);
    shm.fill("host!");
    // Control: outside a sandbox the probe writes into the segment.
    {
      Shm twin;
      REQUIRE(twin.id >= 0);
      CHECK(probe_on_host({"ipc", "shm", std::to_string(twin.id)}).out == "ok\n");
      CHECK(twin.head() == "probe");
    }
    RunResult r = probe_in(options, {"ipc", "shm", std::to_string(shm.id)}, ws);
    INFO("shm stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.out == "error EPERM\n");
    CHECK(shm.head() == "host!");

    Msg msg;
    REQUIRE(msg.id >= 0);
    {
      Msg twin;
      REQUIRE(twin.id >= 0);
      CHECK(probe_on_host({"ipc", "msg", std::to_string(twin.id)}).out == "ok\n");
      CHECK(twin.count() == 1);
    }
    r = probe_in(options, {"ipc", "msg", std::to_string(msg.id)}, ws);
    INFO("msg stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.out == "error EPERM\n");
    CHECK(msg.count() == 0);

    Sem sem;
    REQUIRE(sem.id >= 0);
    r = probe_in(options, {"ipc", "sem", std::to_string(sem.id)}, ws);
    INFO("sem stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.out == "error EPERM\n");
    CHECK(sem.value() == 0);

    const std::string name = unique_token("nsrun-mq");
    r = probe_in(options, {"ipc", "mq", name}, ws);
    INFO("mq stdout: " << r.out << " stderr: " << r.err);
    CHECK(r.out == "error EPERM\n");
    CHECK_FALSE(mq_exists(name));
    if (file_exists("/dev/mqueue")) CHECK_FALSE(file_exists("/dev/mqueue/" + name));
  }
  // The control for the queue: unconfined, the probe does create one.
  const std::string name = unique_token("nsrun-mq");
  RunResult control = probe_on_host({"ipc", "mq", name});
  if (control.out == "ok\n") {
    CHECK(mq_exists(name));
    ::mq_unlink(("/" + name).c_str());
  } else {
    WARN("control: POSIX message queues do not work here unconfined: " << control.out);
  }
}

// ---------------------------------------------------------------- kill -9

namespace {

// Waits, bounded, until no process with `token` on its command line is
// alive: a pidfd per process (readable once it has exited), so the wait
// ends the moment the last one goes.
bool all_gone(const std::string& token, Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const std::vector<pid_t> left = processes_with_marker(token);
    if (left.empty()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      UNSCOPED_INFO("still alive: " << left.size() << " process(es), first pid " << left.front());
      return false;
    }
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, left.front(), 0));
    if (fd < 0) continue;  // gone between the scan and the open
    pollfd p{fd, POLLIN, 0};
    const auto ms = std::chrono::duration_cast<Millis>(deadline - now).count();
    ::poll(&p, 1, static_cast<int>(ms));
    ::close(fd);
  }
}

void kill_nsrun_mid_run(const std::vector<std::string>& rung, bool host_tmpdir) {
  TempDir ws("ws");
  const std::string token = unique_token("nsrun-daemon");
  std::vector<std::string> argv{nsrun_path()};
  argv.insert(argv.end(), rung.begin(), rung.end());
  argv.insert(argv.end(), {"--", probe_path(), "daemonise", token});
  Process nsrun_process(argv, at(ws));
  const std::string up = nsrun_process.wait_for_line("up ");
  const std::string tmpdir = up.substr(3);
  // The command, the orphaned daemon in its own session and its worker.
  REQUIRE(processes_with_marker(token).size() >= 3);
  if (host_tmpdir) REQUIRE(file_exists(tmpdir));

  nsrun_process.signal(SIGKILL);
  RunResult r = nsrun_process.wait();
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(all_gone(token, 10s));
  if (host_tmpdir) {
    INFO("TMPDIR " << tmpdir);
    CHECK(eventually([&] { return !file_exists(tmpdir); }, 10s));
  }
}

}  // namespace

TEST_CASE("landlock rung: nothing of the command outlives nsrun killed with SIGKILL", "[landlock][process][kill]") {
  kill_nsrun_mid_run(landlock_options(), true);
}

// The second line: the supervisor itself killed. The command dies with its
// parent (die-with-parent), the daemon falls to nsrun, which is a subreaper
// too, and nsrun removes the TMPDIR whose name the supervisor sent it.
TEST_CASE("landlock rung: nothing outlives a supervisor killed with SIGKILL", "[landlock][process][kill]") {
  const auto rung = landlock_options();
  TempDir ws("ws");
  const std::string token = unique_token("nsrun-daemon");
  std::vector<std::string> argv{nsrun_path()};
  argv.insert(argv.end(), rung.begin(), rung.end());
  argv.insert(argv.end(), {"--", probe_path(), "daemonise", token});
  Process nsrun_process(argv, at(ws));
  const std::string tmpdir = nsrun_process.wait_for_line("up ").substr(3);
  REQUIRE(file_exists(tmpdir));
  // The supervisor: nsrun's child with nsrun's command line.
  pid_t supervisor = -1;
  for (pid_t pid : processes_with_marker(token)) {
    const std::string stat = read_file(fmt::format("/proc/{}/stat", pid));
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    if (std::atoi(stat.c_str() + paren + 4) == nsrun_process.pid() &&
        read_link(fmt::format("/proc/{}/exe", pid)) == read_link(fmt::format("/proc/{}/exe", nsrun_process.pid())))
      supervisor = pid;
  }
  REQUIRE(supervisor > 0);
  REQUIRE(::kill(supervisor, SIGKILL) == 0);
  RunResult r = nsrun_process.wait();
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(all_gone(token, 10s));
  INFO("TMPDIR " << tmpdir);
  CHECK(eventually([&] { return !file_exists(tmpdir); }, 10s));
}

TEST_CASE("namespace rung: nothing of the command outlives nsrun killed with SIGKILL", "[process][kill]") {
  require_userns();
  kill_nsrun_mid_run({}, false);
}
