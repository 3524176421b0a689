// Mount races, the parts testable without root: which plan steps resolve
// their paths through no symlink, which must land on the object they cloned,
// the collapse of repeated mounts on one destination, and the executor's
// refusals (in forked children with their own user and mount namespaces).
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "mount/executor.hpp"
#include "mount/plan.hpp"
#include "policy/presets.hpp"
#include "sys/timeline.hpp"

using namespace nsrun;
using Op = MountStep::Op;
using K = MountOp::Kind;

namespace {

Policy native_policy(std::string ws = "/home/u/ws") {
  Policy p;
  p.workspace = std::move(ws);
  p.argv = {"true"};
  return p;
}

HostFacts host() { return HostFacts{1000, 1000, "/home/u/ws"}; }

const MountStep* find(const LaunchPlan& plan, Op op, std::string_view dest) {
  for (const auto& s : plan.mounts)
    if (s.op == op && s.dest == dest) return &s;
  return nullptr;
}

std::size_t count(const LaunchPlan& plan, Op op, std::string_view dest) {
  return static_cast<std::size_t>(
      std::count_if(plan.mounts.begin(), plan.mounts.end(), [&](const MountStep& s) { return s.op == op && s.dest == dest; }));
}

MountStep bind_step(std::string src, std::string dest, uint64_t attrs = attr::rdonly) {
  MountStep s;
  s.op = Op::bind;
  s.source = std::move(src);
  s.dest = std::move(dest);
  s.attrs = attrs;
  s.no_symlinks = true;
  return s;
}

MountStep tmpfs_step(std::string dest, bool exact) {
  MountStep s;
  s.op = Op::tmpfs;
  s.dest = std::move(dest);
  s.no_symlinks = exact;
  return s;
}

}  // namespace

TEST_CASE("native protections resolve through no symlink; bwrap's dialect follows them") {
  Policy p = native_policy();
  p.writable = {"/srv/out"};
  p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/.git", "/home/u/ws/.git"));
  p.mounts.push_back(mount_op(K::hide, "", "/home/u/ws/secret"));
  p.mounts.push_back(mount_op(K::tmpfs, "", "/home/u/ws/scratch"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK(find(*plan, Op::bind, "/home/u/ws")->no_symlinks);
  CHECK(find(*plan, Op::bind, "/srv/out")->no_symlinks);
  CHECK(find(*plan, Op::bind, "/home/u/ws/.git")->no_symlinks);
  CHECK(find(*plan, Op::tmpfs, "/home/u/ws/secret")->no_symlinks);
  // A fresh empty tmpfs protects nothing and grants nothing of the host's.
  CHECK_FALSE(find(*plan, Op::tmpfs, "/home/u/ws/scratch")->no_symlinks);
  CHECK_FALSE(find(*plan, Op::tmpfs, "/tmp")->no_symlinks);

  p.follow_symlinks = true;
  plan = make_plan(p, host());
  REQUIRE(plan);
  for (const auto& s : plan->mounts) CHECK_FALSE(s.no_symlinks);
}

TEST_CASE("host_view: a path bound onto itself where the new root shows the host") {
  Policy p = native_policy();
  p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/a", "/home/u/ws/a"));
  p.mounts.push_back(mount_op(K::ro_bind, "/tmp/x", "/tmp/x"));
  p.mounts.push_back(mount_op(K::ro_bind, "/etc/hosts", "/home/u/ws/hosts"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  // The root has nothing below it yet: nothing to compare with.
  CHECK_FALSE(find(*plan, Op::bind, "/")->host_view);
  // Over the host's "/", over the workspace's own bind.
  CHECK(find(*plan, Op::bind, "/home/u/ws")->host_view);
  CHECK(find(*plan, Op::bind, "/home/u/ws/a")->host_view);
  // Under the private /tmp the path is nsrun's own tmpfs, not the host's.
  CHECK_FALSE(find(*plan, Op::bind, "/tmp/x")->host_view);
  // Not onto itself.
  CHECK_FALSE(find(*plan, Op::bind, "/home/u/ws/hosts")->host_view);
}

TEST_CASE("host_view: a workspace that is the private /tmp itself is not compared with it") {
  auto plan = make_plan(native_policy("/tmp"), host());
  REQUIRE(plan);
  CHECK_FALSE(find(*plan, Op::bind, "/tmp")->host_view);
}

TEST_CASE("host_view: a later mount above hides what was mounted below") {
  Policy p = native_policy();
  p.mounts.push_back(mount_op(K::tmpfs, "", "/home/u/ws/a/b"));
  p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/a", "/home/u/ws/a"));
  p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/a/b", "/home/u/ws/a/b"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK(find(*plan, Op::bind, "/home/u/ws/a/b")->host_view);
}

TEST_CASE("8,000 --ro of one path collapse to one mount") {
  Policy p = native_policy();
  for (int i = 0; i < 8000; ++i) p.mounts.push_back(mount_op(K::ro_bind, "/etc", "/etc"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK(count(*plan, Op::bind, "/etc") == 1);
}

TEST_CASE("interleaved repeats on unrelated paths collapse to the last of each") {
  Policy p = native_policy();
  for (int i = 0; i < 1000; ++i) {
    p.mounts.push_back(mount_op(K::ro_bind, "/etc", "/etc"));
    p.mounts.push_back(mount_op(K::ro_bind, "/usr", "/usr"));
    p.mounts.push_back(mount_op(K::hide, "", "/home/u/ws/secret"));
  }
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK(count(*plan, Op::bind, "/etc") == 1);
  CHECK(count(*plan, Op::bind, "/usr") == 1);
  CHECK(count(*plan, Op::tmpfs, "/home/u/ws/secret") == 1);
}

TEST_CASE("collapse: only identical adjacent steps, or ones nothing in between can see") {
  SECTION("adjacent identical binds collapse in any dialect") {
    std::vector<MountStep> s{bind_step("/etc", "/etc"), bind_step("/etc", "/etc"), bind_step("/etc", "/etc")};
    for (auto& x : s) x.no_symlinks = false;
    collapse_duplicates(s);
    CHECK(s.size() == 1);
  }
  SECTION("a different bind on the same path in between keeps both") {
    std::vector<MountStep> s{bind_step("/etc", "/etc"), bind_step("/srv", "/etc"), bind_step("/etc", "/etc")};
    collapse_duplicates(s);
    CHECK(s.size() == 3);
  }
  SECTION("a step below the path in between keeps both (it is covered only by the second)") {
    std::vector<MountStep> s{bind_step("/etc", "/etc"), tmpfs_step("/etc/ssl", true), bind_step("/etc", "/etc")};
    collapse_duplicates(s);
    CHECK(s.size() == 3);
  }
  SECTION("a step above the path in between keeps both") {
    std::vector<MountStep> s{bind_step("/a/b", "/a/b"), bind_step("/a", "/a"), bind_step("/a/b", "/a/b")};
    collapse_duplicates(s);
    CHECK(s.size() == 3);
  }
  SECTION("a step that follows symlinks in between may pass through the path: both kept") {
    std::vector<MountStep> s{bind_step("/etc", "/etc"), tmpfs_step("/x", false), bind_step("/etc", "/etc")};
    collapse_duplicates(s);
    CHECK(s.size() == 3);
  }
  SECTION("a sibling whose name extends the path is unrelated") {
    std::vector<MountStep> s{bind_step("/a/b", "/a/b"), bind_step("/a/b-c", "/a/b-c"), bind_step("/a/b", "/a/b")};
    collapse_duplicates(s);
    REQUIRE(s.size() == 2);
    CHECK(s[0].dest == "/a/b-c");
    CHECK(s[1].dest == "/a/b");
  }
  SECTION("different attributes are different mounts") {
    std::vector<MountStep> s{bind_step("/etc", "/etc", attr::rdonly), bind_step("/etc", "/etc", 0)};
    collapse_duplicates(s);
    CHECK(s.size() == 2);
  }
  SECTION("paths spelled with '.', '..' or '//' are not compared as text") {
    std::vector<MountStep> s{bind_step("/a/../b", "/a/../b"), bind_step("/b", "/b"), bind_step("/a/../b", "/a/../b")};
    collapse_duplicates(s);
    CHECK(s.size() == 3);
  }
  SECTION("fd sources and sources in the new root are never dropped") {
    MountStep fd = bind_step("", "/x");
    fd.source_fd = 7;
    MountStep in_root = bind_step("/proc/sys", "/proc/sys");
    in_root.source_in_root = true;
    std::vector<MountStep> s{fd, fd, in_root, in_root};
    collapse_duplicates(s);
    CHECK(s.size() == 4);
  }
}

// ---------------------------------------------------------------- executor
// The executor's refusals, each in a forked child that makes its own user
// and mount namespaces (no root needed; skipped loudly where user
// namespaces are refused). The child runs build_root() and reports through
// its exit status which error it got.

namespace {

bool write_proc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

constexpr int no_userns = 254;  // above every errno the steps can give

// Runs build_root(steps) in a child with new user and mount namespaces;
// returns the errno of the error it failed with (0: it succeeded), or
// no_userns + 1000 when it could not make them.
int child_build_root(const std::vector<MountStep>& steps, std::string* step_out = nullptr) {
  int pipefd[2];
  REQUIRE(::pipe2(pipefd, O_CLOEXEC) == 0);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(no_userns);
    write_proc("/proc/self/setgroups", "deny");
    if (!write_proc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_proc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
      ::_exit(no_userns);
    Timeline t;
    auto r = build_root(steps, t);
    std::string step = r ? std::string() : r.error().step;
    (void)!::write(pipefd[1], step.data(), step.size());
    ::_exit(r ? 0 : std::min(r.error().err, 253));
  }
  ::close(pipefd[1]);
  char buf[256];
  ssize_t n = ::read(pipefd[0], buf, sizeof buf);
  ::close(pipefd[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  if (step_out && n > 0) step_out->assign(buf, static_cast<std::size_t>(n));
  const int code = WEXITSTATUS(status);
  if (code == no_userns) return no_userns + 1000;
  return code;
}

struct HostDir {
  std::string path;
  HostDir() {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base && *base ? base : "/var/tmp") + "/nsrun-unit-XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
    REQUIRE(::mkdir((path + "/real").c_str(), 0755) == 0);
    REQUIRE(::symlink((path + "/real").c_str(), (path + "/link").c_str()) == 0);
  }
  ~HostDir() {
    ::unlink((path + "/link").c_str());
    ::rmdir((path + "/real").c_str());
    ::rmdir(path.c_str());
  }
};

MountStep root_bind() {
  MountStep s = bind_step("/", "/", attr::rdonly);
  return s;
}

void skip_without_userns(int got) {
  if (got == no_userns + 1000) SKIP("user namespaces refused here: the executor's refusals were not checked");
}

}  // namespace

TEST_CASE("executor: a no_symlinks source through a symlink is refused (ELOOP)", "[executor]") {
  HostDir host;
  MountStep ro = bind_step(host.path + "/link", host.path + "/link");
  std::string step;
  const int got = child_build_root({root_bind(), ro}, &step);
  skip_without_userns(got);
  CHECK(got == ELOOP);
  CHECK(step == "bind");
}

TEST_CASE("executor: a no_symlinks destination reached through a symlink is refused (ELOOP)", "[executor]") {
  HostDir host;
  MountStep ro = bind_step(host.path + "/real", host.path + "/link");
  std::string step;
  const int got = child_build_root({root_bind(), ro}, &step);
  skip_without_userns(got);
  CHECK(got == ELOOP);
  CHECK(step == "mount on");
}

TEST_CASE("executor: '..' and symlinks in a path to create are refused", "[executor]") {
  HostDir host;
  MountStep dotdot;
  dotdot.op = Op::mkdir;
  dotdot.dest = "/a/../b";
  std::string step;
  int got = child_build_root({tmpfs_step("/", false), dotdot}, &step);
  skip_without_userns(got);
  CHECK(got == EINVAL);
  CHECK(step == "create");

  MountStep through;
  through.op = Op::mkdir;
  through.dest = host.path + "/link/new";
  got = child_build_root({root_bind(), tmpfs_step(host.path, false), [&] {
                            MountStep l;
                            l.op = Op::symlink;
                            l.source = "/";
                            l.dest = host.path + "/link";
                            return l;
                          }(),
                          through},
                         &step);
  CHECK(got == ELOOP);
  CHECK(step == "create");
}

TEST_CASE("executor: a path bound onto itself must land on the object it cloned", "[executor]") {
  HostDir host;
  // The source is host `real`; in the new root an earlier bind put host
  // `/` (another inode) at that path, yet the plan says the new root shows
  // the host there: the executor must notice the two objects differ.
  MountStep cover = bind_step("/", host.path + "/real", 0);
  MountStep ro = bind_step(host.path + "/real", host.path + "/real");
  ro.host_view = true;
  std::string step;
  const int got = child_build_root({root_bind(), cover, ro}, &step);
  skip_without_userns(got);
  CHECK(got == ESTALE);
  CHECK(step == "bind");
  // The same without the cover builds.
  CHECK(child_build_root({root_bind(), ro}) == 0);
}

// ---------------------------------------------------------------- executor: created paths
// The paths the executor creates in the new root and the
// destinations it mounts on never pass through a symlink or a '..'. The new
// root is a tmpfs the steps fill, so every symlink here is one the plan
// itself made, as a hostile earlier step or a bwrap caller would.

namespace {

MountStep step(Op op, std::string dest, std::string source = {}) {
  MountStep s;
  s.op = op;
  s.dest = std::move(dest);
  s.source = std::move(source);
  return s;
}

MountStep tmpfs_root() { return step(Op::tmpfs, "/"); }

// A symlink the plan makes: `dest` -> `target`.
MountStep plan_symlink(std::string dest, std::string target) { return step(Op::symlink, std::move(dest), std::move(target)); }

struct Refusal {
  int err;
  std::string step;
};

Refusal refused(const std::vector<MountStep>& steps) {
  std::string name;
  const int got = child_build_root(steps, &name);
  skip_without_userns(got);
  return {got, name};
}

}  // namespace

TEST_CASE("executor: a file to write whose last component is a symlink is refused (ELOOP)", "[executor]") {
  MountStep w = step(Op::write_file, "/f");
  w.data = "x";
  const Refusal r = refused({tmpfs_root(), plan_symlink("/f", "/target"), w});
  CHECK(r.err == ELOOP);
  CHECK(r.step == "create");
}

TEST_CASE("executor: a file to write below a symlinked directory is refused (ELOOP)", "[executor]") {
  MountStep w = step(Op::write_file, "/d/f");
  w.data = "x";
  const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/real"), plan_symlink("/d", "/real"), w});
  CHECK(r.err == ELOOP);
  CHECK(r.step == "create");
}

// bwrap's --dir keeps a directory that is already there, through a symlink
// inside the root too (nothing is made); a dangling symlink is another
// matter: making the directory would make it wherever the link points.
TEST_CASE("executor: a directory to make that is a dangling symlink is refused (ELOOP)", "[executor]") {
  const Refusal r = refused({tmpfs_root(), plan_symlink("/d", "/elsewhere"), step(Op::mkdir, "/d")});
  CHECK(r.err == ELOOP);
  CHECK(r.step == "create");
  CHECK(refused({tmpfs_root(), step(Op::mkdir, "/real"), plan_symlink("/d", "/real"), step(Op::mkdir, "/d")}).err == 0);
}

TEST_CASE("executor: '..' in a mount destination or a file to write is refused (EINVAL)", "[executor]") {
  SECTION("tmpfs") {
    const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/a"), step(Op::tmpfs, "/a/../b")});
    CHECK(r.err == EINVAL);
    CHECK(r.step == "create");
  }
  SECTION("write_file") {
    MountStep w = step(Op::write_file, "/a/../f");
    w.data = "x";
    const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/a"), w});
    CHECK(r.err == EINVAL);
    CHECK(r.step == "create");
  }
}

TEST_CASE("executor: a mount destination whose parent is a symlink is refused (ELOOP)", "[executor]") {
  SECTION("tmpfs") {
    const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/real"), plan_symlink("/d", "/real"), step(Op::tmpfs, "/d/t")});
    CHECK(r.err == ELOOP);
    CHECK(r.step == "create");
  }
  SECTION("a file's mount point (dest_is_file)") {
    MountStep b = step(Op::bind, "/d/null", "/dev/null");
    b.dest_is_file = true;
    const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/real"), plan_symlink("/d", "/real"), b});
    CHECK(r.err == ELOOP);
    CHECK(r.step == "create");
  }
}

TEST_CASE("executor: the same steps without the symlink build (the refusals are not blanket)", "[executor]") {
  MountStep w = step(Op::write_file, "/real/f");
  w.data = "x";
  const Refusal r = refused({tmpfs_root(), step(Op::mkdir, "/real"), w, step(Op::tmpfs, "/real/t"), step(Op::mkdir, "/real/d")});
  CHECK(r.err == 0);
}
