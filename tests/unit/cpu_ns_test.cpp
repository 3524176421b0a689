// The namespace rung's CPU per launch. Each shortcut
// taken to save system calls has a test here that fails when the
// assumption it rests on no longer holds.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <string>

#include "bench/bench.hpp"
#include "bench/spawn.hpp"
#include "policy/protect.hpp"
#include "scratch.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"

using namespace nsrun;

using nsrun_unit::Scratch;

TEST_CASE("ProtectWalker: a first component missing at the root is looked up once per pass", "[unit][cpu-ns]") {
  Scratch s("cpu-ns");
  ProtectWalker walker;
  auto hooks = walker.walk(s.fd.get(), ".git/hooks", nullptr);
  REQUIRE(hooks);
  CHECK(hooks->decision.state == ProtectState::not_kept);
  CHECK(hooks->missing_at_root);
  // The host makes .git/config now: the pass answers as of its one look
  // (the same answer a walk an instant earlier gives) ...
  s.mkdir(".git");
  s.touch(".git/config");
  auto config = walker.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(config);
  CHECK(config->decision.state == ProtectState::not_kept);
  CHECK(config->decision.state == missing_below("").state);
  // ... and a new pass (a new walker, a new launch) sees it.
  ProtectWalker next;
  auto again = next.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(again);
  CHECK(again->decision.state == ProtectState::read_only);
  CHECK(again->at);
  // The plain walk never remembers.
  auto plain = walk_protected(s.fd.get(), ".git/config", nullptr);
  REQUIRE(plain);
  CHECK(plain->decision.state == ProtectState::read_only);
}

TEST_CASE("ProtectWalker: only a name missing at the root is remembered", "[unit][cpu-ns]") {
  Scratch s("cpu-ns");
  s.mkdir(".git");
  s.touch(".git/config");
  s.mkdir("tools");
  ProtectWalker walker;
  // Missing below an existing .git: not remembered for its siblings.
  auto hooks = walker.walk(s.fd.get(), ".git/hooks", nullptr);
  REQUIRE(hooks);
  CHECK(hooks->decision.state == ProtectState::not_kept);
  CHECK_FALSE(hooks->missing_at_root);
  auto config = walker.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(config);
  CHECK(config->decision.state == ProtectState::read_only);
  // A missing name in a directory below the root is sealed there; the walk
  // hands over that directory (its own fd, not the root's).
  auto run = walker.walk(s.fd.get(), "tools/run.sh", nullptr);
  REQUIRE(run);
  CHECK(run->decision.state == ProtectState::sealed);
  CHECK(run->decision.sealed_dir == "tools");
  REQUIRE(run->at);
  struct stat a{}, b{};
  REQUIRE(::fstat(run->at.get(), &a) == 0);
  REQUIRE(::stat((s.path + "/tools").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  // A missing name at the root does not stand for another one.
  auto envrc = walker.walk(s.fd.get(), ".envrc", nullptr);
  REQUIRE(envrc);
  CHECK(envrc->missing_at_root);
  s.touch(".envrc2");
  auto other = walker.walk(s.fd.get(), ".envrc2", nullptr);
  REQUIRE(other);
  CHECK(other->decision.state == ProtectState::read_only);
}

TEST_CASE("missing_below: a name missing at the root is never sealed", "[unit][cpu-ns]") {
  // ProtectWalker's remembered answer hands over no directory: it relies on
  // the root itself never being the directory to seal.
  CHECK(missing_below("").state == ProtectState::not_kept);
  CHECK(missing_below("").sealed_dir.empty());
}

// ---------------------------------------------------------------- open_tree_attrs
// The executor clones a tree and sets its flags in one call where the
// kernel has open_tree_attr (Linux 6.15), in two where it has not or where
// something refuses it. Each way must give the same mounts: read-only,
// below the top too (AT_RECURSIVE). Each case runs in a forked child with
// user and mount namespaces of its own (skipped loudly where they are
// refused); a filter in the child makes the call fail as an older kernel
// (ENOSYS) or an outer sandbox (EPERM) would.

namespace {

constexpr int cpu_no_userns = 200;

bool write_proc_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Refuses open_tree_attr (467 on x86_64) with `err`; everything else allowed.
bool refuse_open_tree_attr(int err) {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(offsetof(seccomp_data, nr))),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 467, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<uint32_t>(err)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// In a child: `dir` with a tmpfs mounted on `dir`/sub, cloned read-only
// with open_tree_attrs(); exit 0 when the clone and its submount are both
// read-only and the original is still writable, else a code saying what.
int clone_read_only_in_child(const std::string& dir, int refuse_with) {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(cpu_no_userns);
    write_proc_file("/proc/self/setgroups", "deny");
    if (!write_proc_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_proc_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
      ::_exit(cpu_no_userns);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(cpu_no_userns);
    const std::string sub = dir + "/sub";
    if (::mount("tmpfs", sub.c_str(), "tmpfs", 0, "size=64k") != 0) ::_exit(cpu_no_userns);
    if (refuse_with != 0 && !refuse_open_tree_attr(refuse_with)) ::_exit(3);
    const int fd = sys::open_tree_attrs(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE,
                                        MOUNT_ATTR_RDONLY);
    if (fd < 0) ::_exit(4);
    struct statvfs top{}, below{}, original{};
    if (::fstatvfs(fd, &top) != 0) ::_exit(5);
    const int sub_fd = ::openat(fd, "sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sub_fd < 0 || ::fstatvfs(sub_fd, &below) != 0) ::_exit(6);
    if (::statvfs(sub.c_str(), &original) != 0) ::_exit(7);
    if ((top.f_flag & ST_RDONLY) == 0) ::_exit(8);
    if ((below.f_flag & ST_RDONLY) == 0) ::_exit(9);
    if ((original.f_flag & ST_RDONLY) != 0) ::_exit(10);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("open_tree_attrs: the clone is read-only to its submounts, in one call or in two", "[unit][cpu-ns]") {
  Scratch s("cpu-ns");
  s.mkdir("sub");
  for (int refuse : {0, ENOSYS, EPERM}) {
    INFO("open_tree_attr refused with errno " << refuse);
    const int code = clone_read_only_in_child(s.path, refuse);
    if (code == cpu_no_userns) SKIP("user and mount namespaces are refused here");
    CHECK(code == 0);
  }
}

// ---------------------------------------------------------------- the bench's cpu column
// bwrap exits without waiting for its sandbox's PID 1 (which builds the
// sandbox and reaps the payload): its time reached no rusage the bench saw,
// so the bwrap row's cpu column, the one the CPU target is read
// against, left most of bwrap's work out.

namespace {

class LeavingLauncher final : public bench::Launcher {
 public:
  std::optional<std::string> check(const bench::Row&) override { return std::nullopt; }
  pid_t spawn(const bench::Row&) override { return ++pid_; }
  std::pair<pid_t, bench::Launch> wait_any() override {
    bench::Launch l;
    l.cpu_ns = 1'000'000;
    return {pid_, l};
  }
  uint64_t reap_left_behind() override { return 4'000'000; }

 private:
  pid_t pid_ = 100;
};

}  // namespace

TEST_CASE("bench: the serial pass charges a launch with what it left behind", "[unit][cpu-ns][bench]") {
  LeavingLauncher launcher;
  bench::Row row;
  row.name = "leaves";
  row.argv = {"/bin/true"};
  bench::Options o;
  o.launches = 3;
  o.warmup = 0;
  uint64_t now = 0;
  bench::Results res = bench::measure({row}, o, launcher, [&] { return now += 1000; });
  REQUIRE(res.rows.size() == 1);
  REQUIRE(res.rows[0].cpu_ns.size() == 3);
  for (uint64_t c : res.rows[0].cpu_ns) CHECK(c == 5'000'000);
}

TEST_CASE("bench: a descendant the launch did not wait for is reaped by the bench and counted", "[unit][cpu-ns][bench]") {
  auto launcher = bench::process_launcher();
  REQUIRE(launcher);
  // The launch's shell exits at once; its child, left to the bench as the
  // subreaper, spins until it has used 30 ms of CPU (CPU time, not a
  // sleep: what it uses is what must be counted).
  bench::Row row;
  row.name = "orphan";
  row.argv = {"/bin/sh", "-c",
              "perl -e 'while (times < 0.03) {}' </dev/null >/dev/null 2>&1 & exit 0"};
  if (::access("/usr/bin/perl", X_OK) != 0) SKIP("no /usr/bin/perl for the spinning descendant");
  const pid_t pid = (*launcher)->spawn(row);
  REQUIRE(pid > 0);
  auto [got, l] = (*launcher)->wait_any();
  REQUIRE(got == pid);
  const uint64_t left = (*launcher)->reap_left_behind();
  // The descendant's 30 ms, counted only once the bench reaped it.
  CHECK(left >= 30'000'000);
  CHECK(l.cpu_ns < 30'000'000);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}
