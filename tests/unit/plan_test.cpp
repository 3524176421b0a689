#include <catch2/catch_test_macros.hpp>

#include <sched.h>

#include <algorithm>

#include "launch/spec.hpp"
#include "mount/plan.hpp"
#include "plan_support.hpp"
#include "policy/presets.hpp"

using namespace nsrun;
using plan_support::host;
using plan_support::workspace_policy;
using Op = MountStep::Op;

namespace {

// The protected paths of the writable roots come after every mount.
std::size_t protect_steps(const LaunchPlan& plan) {
  return static_cast<std::size_t>(
      std::count_if(plan.mounts.begin(), plan.mounts.end(), [](const MountStep& s) { return s.op == Op::protect; }));
}

std::size_t index_of(const LaunchPlan& plan, Op op, std::string_view dest) {
  for (std::size_t i = 0; i < plan.mounts.size(); ++i)
    if (plan.mounts[i].op == op && plan.mounts[i].dest == dest) return i;
  return plan.mounts.size();
}
}  // namespace

TEST_CASE("default plan: namespaces, self maps, reaper") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  CHECK((plan->clone_flags & (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS)) == (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS));
  CHECK((plan->clone_flags & CLONE_NEWNET) == 0);
  CHECK(plan->uid_map == IdMapping{1000, 1000});
  CHECK(plan->gid_map == IdMapping{1000, 1000});
  CHECK(plan->reaper);
  CHECK(plan->hostname == "nsrun");
  CHECK(plan->chdir == "/home/u/ws");
  CHECK_FALSE(plan->chdir_required);
}

TEST_CASE("plan order: root read-only first, then /dev, /proc, /tmp, the workspace last") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  const auto& m = plan->mounts;
  REQUIRE_FALSE(m.empty());
  CHECK((m[0].op == Op::bind && m[0].source == "/" && m[0].dest == "/"));
  CHECK((m[0].attrs & attr::rdonly) != 0);
  const auto dev = index_of(*plan, Op::tmpfs, "/dev");
  const auto proc = index_of(*plan, Op::proc, "/proc");
  const auto tmp = index_of(*plan, Op::tmpfs, "/tmp");
  const auto ws = index_of(*plan, Op::bind, "/home/u/ws");
  CHECK(dev < proc);
  CHECK(proc < tmp);
  CHECK(tmp < ws);
  CHECK(ws == m.size() - 1 - protect_steps(*plan));
  CHECK((m[ws].attrs & attr::rdonly) == 0);
  CHECK(m[tmp].mode == 01777);
}

TEST_CASE("fresh /proc keeps machine-wide parts read-only") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  for (const char* part : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
    const auto i = index_of(*plan, Op::bind, part);
    REQUIRE(i < plan->mounts.size());
    CHECK(plan->mounts[i].source_in_root);
    CHECK((plan->mounts[i].attrs & attr::rdonly) != 0);
    CHECK(i > index_of(*plan, Op::proc, "/proc"));
  }
}

TEST_CASE("--allow-nested-userns leaves the /proc covers off only where no uid 0 of the host is inside") {
  auto covered = [](const Policy& p, const HostFacts& h) {
    auto plan = make_plan(p, h);
    REQUIRE(plan);
    return index_of(*plan, Op::bind, "/proc/sys") < plan->mounts.size();
  };
  Policy p = workspace_policy();
  CHECK(covered(p, host()));
  p.allow_nested_userns = true;
  // A nested fresh procfs needs an uncovered one (mount_too_revealing()).
  CHECK_FALSE(covered(p, host()));
  // uid 0 writes sysctls without a capability: the covers stay for root.
  CHECK(covered(p, HostFacts{0, 0, "/home/u/ws"}));
  CHECK(covered(p, HostFacts{1000, 0, "/home/u/ws"}));
  // In a joined user namespace the map is not ours to know.
  p.userns_fd = 3;
  CHECK(covered(p, host()));
  p.userns_fd.reset();
  // A bound host /proc keeps them whatever the caller.
  p.proc = ProcMode::host_bind;
  CHECK(covered(p, host()));
}

TEST_CASE("host-bind /proc binds the host's procfs; auto picks it only on an allow-listed backend") {
  Policy p = workspace_policy();
  p.host_backend = "lakebox";
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK(plan->proc == ProcMode::host_bind);
  CHECK(index_of(*plan, Op::proc, "/proc") == plan->mounts.size());
  const auto i = index_of(*plan, Op::bind, "/proc");
  REQUIRE(i < plan->mounts.size());
  CHECK(plan->mounts[i].source == "/proc");
  CHECK(plan->mounts[i].attrs == (attr::nosuid | attr::nodev | attr::noexec));

  p.host_backend = "bare";
  CHECK(make_plan(p, host())->proc == ProcMode::fresh);
}

TEST_CASE("minimal /dev: device binds, devpts, ptmx link, shm") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}) {
    const auto i = index_of(*plan, Op::bind, node);
    REQUIRE(i < plan->mounts.size());
    CHECK(plan->mounts[i].dest_is_file);
    CHECK((plan->mounts[i].attrs & attr::nodev) == 0);
  }
  CHECK(index_of(*plan, Op::devpts, "/dev/pts") < plan->mounts.size());
  CHECK(index_of(*plan, Op::symlink, "/dev/ptmx") < plan->mounts.size());
  CHECK(index_of(*plan, Op::tmpfs, "/dev/shm") < plan->mounts.size());
}

TEST_CASE("later entries win: user mounts come after the preset") {
  Policy p = workspace_policy();
  p.mounts.push_back(mount_op(MountOp::Kind::ro_bind, "/home/u/ws/.git", "/home/u/ws/.git"));
  p.mounts.push_back(mount_op(MountOp::Kind::hide, "", "/home/u/.ssh"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  const auto ws = index_of(*plan, Op::bind, "/home/u/ws");
  const auto git = index_of(*plan, Op::bind, "/home/u/ws/.git");
  const auto ssh = index_of(*plan, Op::tmpfs, "/home/u/.ssh");
  CHECK(ws < git);
  CHECK(git < ssh);
  CHECK((plan->mounts[git].attrs & attr::rdonly) != 0);
  CHECK((plan->mounts[ssh].attrs & attr::rdonly) != 0);
}

TEST_CASE("namespace and process options shape the plan") {
  Policy p = workspace_policy();
  p.as_pid_1 = true;
  p.network = Network::none;
  p.ns.uts = false;
  p.uid = 0;
  p.chdir = "/srv";
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  CHECK_FALSE(plan->reaper);
  CHECK((plan->clone_flags & CLONE_NEWNET) != 0);
  CHECK((plan->clone_flags & CLONE_NEWUTS) == 0);
  CHECK(plan->hostname.empty());
  CHECK(plan->uid_map == IdMapping{0, 1000});
  CHECK(plan->chdir == "/srv");
  CHECK(plan->chdir_required);
}

TEST_CASE("describe prints flags and steps by name") {
  auto plan = make_plan(workspace_policy(), host());
  REQUIRE(plan);
  const std::string text = describe(*plan);
  CHECK(text.find("CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS") != std::string::npos);
  CHECK(text.find("bind / -> / [rdonly|nosuid|nodev]") != std::string::npos);
  CHECK(text.find("pivot_root") != std::string::npos);
}

TEST_CASE("exec candidates follow execvp's PATH rules") {
  CHECK(exec_candidates("/bin/sh", "/x") == std::vector<std::string>{"/bin/sh"});
  CHECK(exec_candidates("./run", "/x") == std::vector<std::string>{"./run"});
  CHECK(exec_candidates("sh", "/a:/b") == std::vector<std::string>{"/a/sh", "/b/sh"});
  CHECK(exec_candidates("sh", "/a::/b") == std::vector<std::string>{"/a/sh", "./sh", "/b/sh"});
  CHECK(exec_candidates("sh", nullptr).front() == "/usr/local/bin/sh");
}

TEST_CASE("a writable /: the private /dev, /proc, /tmp come after its bind, /sys read-only between") {
  Policy p = workspace_policy();
  p.writable = {"/"};
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  const auto& m = plan->mounts;
  std::size_t root_rw = m.size();
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i].op == Op::bind && m[i].dest == "/" && (m[i].attrs & attr::rdonly) == 0) root_rw = i;
  REQUIRE(root_rw < m.size());
  const auto sys = index_of(*plan, Op::bind, "/sys");
  REQUIRE(sys < m.size());
  CHECK((m[sys].attrs & attr::rdonly) != 0);
  CHECK(m[sys].optional);
  CHECK(root_rw < sys);
  CHECK(sys < index_of(*plan, Op::tmpfs, "/dev"));
  CHECK(root_rw < index_of(*plan, Op::proc, "/proc"));
  CHECK(root_rw < index_of(*plan, Op::tmpfs, "/tmp"));
  // /proc/sys is made read-only after the fresh procfs, not before it.
  CHECK(index_of(*plan, Op::proc, "/proc") < index_of(*plan, Op::bind, "/proc/sys"));
}

// Hidden host sockets are covered last, where the host's
// is what the sandbox shows.
TEST_CASE("hidden sockets: /dev/null over a socket, a tmpfs over a directory, after every other mount") {
  Policy p = workspace_policy();
  p.hidden_sockets = {"/run/docker.sock", "/run/user/1000/gnupg/", "/tmp/.X11-unix/", "/home/u/ws/app.sock"};
  p.mounts.push_back(mount_op(MountOp::Kind::ro_bind, "/run", "/run"));
  auto plan = make_plan(p, host());
  REQUIRE(plan);
  const auto& m = plan->mounts;
  const auto docker = index_of(*plan, Op::bind, "/run/docker.sock");
  const auto gnupg = index_of(*plan, Op::tmpfs, "/run/user/1000/gnupg");
  const auto app = index_of(*plan, Op::bind, "/home/u/ws/app.sock");
  REQUIRE(docker < m.size());
  REQUIRE(gnupg < m.size());
  REQUIRE(app < m.size());
  CHECK(m[docker].source == "/dev/null");
  CHECK(m[docker].dest_is_file);
  CHECK(m[docker].cover);  // never made, skipped when gone or out of reach
  CHECK(m[gnupg].cover);
  CHECK((m[docker].attrs & (attr::rdonly | attr::nodev)) == (attr::rdonly | attr::nodev));
  CHECK((m[gnupg].attrs & attr::rdonly) != 0);
  // After the --ro /run that would otherwise bring the host's back.
  CHECK(index_of(*plan, Op::bind, "/run") < docker);
  CHECK(m.size() - 3 - protect_steps(*plan) <= std::min({docker, gnupg, app}));
  // Under the private /tmp the X11 directory is not the host's: nothing to cover.
  CHECK(index_of(*plan, Op::tmpfs, "/tmp/.X11-unix") == m.size());

  // A workspace of /tmp shows the host's /tmp: then it is covered.
  p.mounts.clear();
  p.workspace = "/tmp";
  auto in_tmp = make_plan(p, host());
  REQUIRE(in_tmp);
  CHECK(index_of(*in_tmp, Op::tmpfs, "/tmp/.X11-unix") < in_tmp->mounts.size());
}

namespace {

// plain_path()'s definition, component by component: what the one-pass
// version must answer for every path.
bool plain_path_by_components(std::string_view p) {
  if (p == "/") return true;
  if (p.empty() || p.front() != '/' || p.back() == '/') return false;
  for (std::size_t i = 0; i < p.size();) {
    const std::size_t end = std::min(p.find('/', i + 1), p.size());
    const std::string_view part = p.substr(i + 1, end - i - 1);
    if (part.empty() || part == "." || part == "..") return false;
    i = end;
  }
  return true;
}

}  // namespace

TEST_CASE("plain_path: every path of up to 8 bytes of '/', '.' and 'a' as its definition says", "[unit][plan]") {
  const std::string alphabet = "/.a";
  std::size_t plain = 0;
  for (std::size_t len = 0; len <= 8; ++len) {
    std::size_t total = 1;
    for (std::size_t k = 0; k < len; ++k) total *= alphabet.size();
    for (std::size_t n = 0; n < total; ++n) {
      std::string p;
      for (std::size_t k = 0, v = n; k < len; ++k, v /= alphabet.size()) p += alphabet[v % alphabet.size()];
      const bool expected = plain_path_by_components(p);
      if (plain_path(p) != expected) FAIL_CHECK("plain_path(\"" << p << "\") should be " << expected);
      plain += expected ? 1 : 0;
    }
  }
  CHECK(plain > 100);  // the alphabet makes plain paths too, not only refusals
  CHECK(plain_path("/tmp/ws/binds/123"));
  CHECK_FALSE(plain_path("/tmp/ws/../etc"));
  CHECK_FALSE(plain_path("tmp"));
}
