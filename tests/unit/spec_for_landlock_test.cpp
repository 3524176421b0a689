// A launch that only the Landlock rung may run (--backend landlock) plans no
// mount list: its spec is every rung's spec but the namespace rung's mounts
// and programs.
// Compared field by field with a fresh full computation, so a field that
// make_plan() or prepare() comes to set differently without the mounts
// fails here.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>

#include <string>
#include <vector>

#include "launch/spec.hpp"
#include "mount/plan.hpp"
#include "policy/policy.hpp"
#include "policy/presets.hpp"
#include "scratch.hpp"
#include "unit_support.hpp"

using namespace nsrun;
using nsrun_unit::same_program;

namespace {

void check_same_but_mounts(const LaunchPlan& lean, const LaunchPlan& full) {
  CHECK_FALSE(lean.mounts_planned);
  CHECK(full.mounts_planned);
  CHECK(lean.mounts.empty());
  CHECK(lean.clone_flags == full.clone_flags);
  CHECK(lean.id_maps == full.id_maps);
  CHECK(lean.uid_map.inside == full.uid_map.inside);
  CHECK(lean.uid_map.outside == full.uid_map.outside);
  CHECK(lean.gid_map.inside == full.gid_map.inside);
  CHECK(lean.gid_map.outside == full.gid_map.outside);
  CHECK(lean.hostname == full.hostname);
  CHECK(lean.reaper == full.reaper);
  CHECK(lean.chdir == full.chdir);
  CHECK(lean.chdir_required == full.chdir_required);
  CHECK(lean.chdir_fallback == full.chdir_fallback);
  CHECK(lean.proc == full.proc);
}

std::vector<Policy> policies(const std::string& ws) {
  std::vector<Policy> out;
  Policy base;
  base.mode = Mode::workspace_write;
  base.workspace = ws;
  out.push_back(base);
  Policy ro = base;
  ro.mode = Mode::read_only;
  out.push_back(ro);
  Policy chdir = base;
  chdir.chdir = ws;
  chdir.proc = ProcMode::host_bind;
  chdir.network = Network::none;
  chdir.report_fd = 3;
  out.push_back(chdir);
  Policy locks = base;
  locks.as_pid_1 = true;
  locks.lock_files.push_back(ws + "/lock");
  locks.hostname = "box";
  locks.ns.uts = true;
  locks.uid = 1000;
  out.push_back(locks);
  Policy bwrap_like;  // no preset: bwrap's dialect
  bwrap_like.preset = false;
  bwrap_like.mode = Mode::workspace_write;
  bwrap_like.workspace = ws;
  bwrap_like.verdict = true;
  out.push_back(bwrap_like);
  return out;
}

}  // namespace

TEST_CASE("plan_without_mounts: make_plan()'s plan but the mount list", "[unit][landlock][spec-for]") {
  nsrun_unit::Scratch s("spec-for");
  s.mkdir("ws");
  const HostFacts host{1000, 1000, s.at("ws")};
  for (const Policy& p : policies(s.at("ws"))) {
    auto full = make_plan(p, host);
    REQUIRE(full);
    if (p.preset) CHECK_FALSE(full->mounts.empty());
    check_same_but_mounts(plan_without_mounts(p, host), *full);
  }
}

TEST_CASE("prepare for the Landlock rung alone: every rung's spec but the mounts", "[unit][landlock][spec-for]") {
  nsrun_unit::Scratch s("spec-for");
  s.mkdir("ws");
  for (const Policy& p : policies(s.at("ws"))) {
    auto full = prepare(p, SpecFor::every_rung);
    auto lean = prepare(p, SpecFor::landlock_only);
    REQUIRE(full);
    REQUIRE(lean);
    check_same_but_mounts(lean->plan, full->plan);
    CHECK(lean->env == full->env);
    CHECK(lean->exec_paths == full->exec_paths);
    CHECK(lean->argv == full->argv);
    CHECK(lean->pass_fds == full->pass_fds);
    CHECK(lean->keep_caps == full->keep_caps);
    CHECK(lean->cap_grant_inheritable == full->cap_grant_inheritable);
    CHECK(lean->keep_setfcap == full->keep_setfcap);
    CHECK(lean->new_session == full->new_session);
    CHECK(lean->die_with_parent == full->die_with_parent);
    CHECK(lean->filter.index() == full->filter.index());
    // The namespace rung's programs are not unpacked for a spec it never
    // runs (what the Landlock rung loads instead:
    // tests/unit/landlock_programs_test.cpp).
    CHECK(lean->seccomp.empty());
    REQUIRE(lean->extra_seccomp.size() == full->extra_seccomp.size());
    for (std::size_t i = 0; i < lean->extra_seccomp.size(); ++i)
      CHECK(same_program(lean->extra_seccomp[i], full->extra_seccomp[i]));
    CHECK(lean->assert_userns_disabled == full->assert_userns_disabled);
    CHECK(lean->info_fd == full->info_fd);
    CHECK(lean->json_status_fd == full->json_status_fd);
    CHECK(lean->block_fd == full->block_fd);
    CHECK(lean->userns_block_fd == full->userns_block_fd);
    CHECK(lean->userns_fd == full->userns_fd);
    CHECK(lean->userns2_fd == full->userns2_fd);
    CHECK(lean->pidns_fd == full->pidns_fd);
    CHECK(lean->join_uid == full->join_uid);
    CHECK(lean->join_gid == full->join_gid);
    CHECK(lean->lock_files == full->lock_files);
    CHECK(lean->limits.use_cgroup == full->limits.use_cgroup);
    CHECK(lean->limits.tmpfs_size == full->limits.tmpfs_size);
    CHECK(lean->observe == full->observe);
    CHECK(lean->seccomp_notify.empty());
    CHECK_FALSE(lean->seccomp_notify_key);
    CHECK(lean->watch_writes.empty());
    CHECK_FALSE(lean->write_scope);
    CHECK(lean->cgroup_base == full->cgroup_base);
    CHECK(lean->cgroup_v1_dirs == full->cgroup_v1_dirs);
    CHECK(lean->egress.has_value() == full->egress.has_value());
    CHECK(lean->require_listener == full->require_listener);
    CHECK(lean->stop_before_exec == full->stop_before_exec);
    CHECK(lean->setup_death_as_status == full->setup_death_as_status);
  }
}
