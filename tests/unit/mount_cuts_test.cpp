// What the plan lets the executor leave out of a launch: the source's
// identity where it cannot be the host's root, the second lookup of a bind
// onto its own source in the new root. Each decision is a pure function of
// the step; these tests hold the cases where the work must still be done.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>

#include "mount/plan.hpp"
#include "plan_support.hpp"

using namespace nsrun;
using plan_support::host;
using plan_support::workspace_policy;
using Op = MountStep::Op;

namespace {

MountStep bind_step(std::string source, std::string dest) {
  MountStep s;
  s.op = Op::bind;
  s.source = std::move(source);
  s.dest = std::move(dest);
  return s;
}

}  // namespace

TEST_CASE("host root: a source is asked its identity unless it cannot be the host's root directory",
          "[unit][plan][mount-cuts]") {
  // Plain paths other than / reached through no symlink: never.
  for (const char* path : {"/dev/null", "/home/u/ws", "/usr", "/a/b/c"}) {
    CHECK_FALSE(may_name_host_root(bind_step(path, "/x"), false));
    // Through a symlink, anything: /home/u/link -> /.
    CHECK(may_name_host_root(bind_step(path, "/x"), true));
  }
  // / itself, and every path whose text is not its only spelling.
  for (const char* path : {"/", "//", "/.", "/usr/..", "/usr/../", "/usr/", "/./usr", "/usr//bin"})
    CHECK(may_name_host_root(bind_step(path, "/x"), false));
  // An inherited fd may name anything.
  MountStep fd = bind_step("", "/x");
  fd.source_fd = 5;
  CHECK(may_name_host_root(fd, false));
  // A source in the new root: only mounts nsrun made are there.
  MountStep in_root = bind_step("/proc/sys", "/proc/sys");
  in_root.source_in_root = true;
  CHECK_FALSE(may_name_host_root(in_root, false));
  CHECK_FALSE(may_name_host_root(in_root, true));
}

TEST_CASE("own source: only a bind in the new root onto its own path reuses the source's lookup",
          "[unit][plan][mount-cuts]") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  std::size_t reused = 0;
  for (const MountStep& s : plan->mounts) {
    if (!binds_onto_own_source(s)) continue;
    ++reused;
    // The fresh /proc's read-only parts: found in the new root at the path
    // the clone goes back on.
    CHECK(s.source_in_root);
    CHECK(s.source == s.dest);
    CHECK(s.dest.starts_with("/proc/"));
  }
  CHECK(reused == 4);

  MountStep s = bind_step("/proc/sys", "/proc/sys");
  s.source_in_root = true;
  CHECK(binds_onto_own_source(s));
  // A host path onto the same path is two lookups in two trees.
  s.source_in_root = false;
  CHECK_FALSE(binds_onto_own_source(s));
  s.source_in_root = true;
  // Another destination, a cover (its own lookup rules), an exact lookup,
  // the root itself: the destination is looked up as always.
  s.dest = "/proc/other";
  CHECK_FALSE(binds_onto_own_source(s));
  s.dest = s.source;
  s.cover = true;
  CHECK_FALSE(binds_onto_own_source(s));
  s.cover = false;
  s.no_symlinks = true;
  CHECK_FALSE(binds_onto_own_source(s));
  CHECK_FALSE(binds_onto_own_source(bind_step("/", "/")));
  MountStep tmpfs;
  tmpfs.op = Op::tmpfs;
  tmpfs.dest = "/proc/sys";
  CHECK_FALSE(binds_onto_own_source(tmpfs));
}
