// The plan's half of issue 10 items 8 and 11: which steps resolve their
// paths through no symlink, which must land on the object they cloned, and
// the collapse of repeated mounts on one destination.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <string>

#include "mount/plan.hpp"
#include "policy/presets.hpp"

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
