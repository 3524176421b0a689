// The copy-on-write home as the presets' default, and its
// cache-redirect fallback's pure parts (launch/home_fallback.hpp).
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/bwrap.hpp"
#include "launch/home_fallback.hpp"
#include "mount/plan.hpp"
#include "policy/cow.hpp"
#include "policy/policy.hpp"

using namespace nsrun;
using Op = MountStep::Op;

namespace {

Policy home_policy() {
  Policy p;
  p.workspace = "/home/u/src/ws";
  p.argv = {"true"};
  p.layers.home = "/home/u";
  p.layers.home_base = "/home/u/.local/state/nsrun/home";
  p.layers.home_name = "ws-0000";
  p.layers.home_layer = {"/home/u", "/home/u/.local/state/nsrun/home/ws-0000/upper",
                         "/home/u/.local/state/nsrun/home/ws-0000/work-1"};
  p.layers.redirect = "/home/u/.local/state/nsrun/home/ws-0000/redirect";
  return p;
}

std::size_t index_of(const LaunchPlan& plan, Op op, std::string_view dest) {
  for (std::size_t i = 0; i < plan.mounts.size(); ++i)
    if (plan.mounts[i].op == op && plan.mounts[i].dest == dest) return i;
  return plan.mounts.size();
}

}  // namespace

TEST_CASE("home default: cow in the presets, ro in the bwrap dialect") {
  CHECK(Policy{}.home == HomeMode::cow);
  BwrapContext ctx;
  ctx.cwd = "/home/u/ws";
  ctx.uid = 1000;
  ctx.read_fd = [](int) -> Result<std::string> { return std::string(); };
  ctx.fd_open = [](int fd) { return fd <= 2; };
  const std::vector<std::string> args = {"--ro-bind", "/", "/", "true"};
  auto inv = parse_bwrap(args, ctx);
  REQUIRE(inv);
  CHECK(inv->policy.home == HomeMode::ro);
  // bwrap's plan has no overlay, whatever the layers say.
  Policy b = inv->policy;
  b.layers = home_policy().layers;
  auto plan = make_plan(b, HostFacts{1000, 1000, "/home/u/ws"});
  REQUIRE(plan);
  CHECK(std::none_of(plan->mounts.begin(), plan->mounts.end(), [](const MountStep& s) { return s.op == Op::overlay; }));
}

TEST_CASE("home fallback: only the home overlay's refusal by the host falls back") {
  const Policy p = home_policy();
  auto plan = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(plan);
  const std::size_t at = index_of(*plan, Op::overlay, "/home/u");
  REQUIRE(at < plan->mounts.size());
  auto refused = [&](Operation op, int err, std::size_t step) {
    Error e = sys_error(op, "/home/u", err);
    e.plan_step = static_cast<uint32_t>(step);
    return home_overlay_refused(e, *plan, p);
  };
  for (int err : {EPERM, EINVAL, ENODEV, EOPNOTSUPP}) CHECK(refused(Operation::mount_layer, err, at));
  CHECK_FALSE(refused(Operation::mount_layer, ENOENT, at));         // a path gone: the user's to see
  CHECK_FALSE(refused(Operation::mount_layer, EPERM, at + 1));      // another step
  CHECK_FALSE(refused(Operation::mount_fs, EPERM, at));             // not a layer
  CHECK_FALSE(refused(Operation::mount_layer, EPERM, Error::no_plan_step));
  Policy no_redirect = p;
  no_redirect.layers.redirect.clear();
  Error e = sys_error(Operation::mount_layer, "/home/u", EPERM);
  e.plan_step = static_cast<uint32_t>(at);
  CHECK_FALSE(home_overlay_refused(e, *plan, no_redirect));
  // A copy-on-write workspace that is $HOME: its overlay, not the home's.
  Policy ws_home = p;
  ws_home.mode = Mode::workspace_write;
  ws_home.workspace_mode = WorkspaceMode::cow;
  ws_home.workspace = "/home/u";
  CHECK_FALSE(home_overlay_refused(e, *plan, ws_home));
}

TEST_CASE("home fallback: no overlay, the redirect directory bound writable, the caches pointed at it") {
  for (Mode mode : {Mode::workspace_write, Mode::read_only}) {
    Policy p = home_policy();
    p.mode = mode;
    const Policy f = cache_redirect_policy(p);
    CHECK(f.home == HomeMode::ro);
    auto plan = make_plan(f, HostFacts{1000, 1000, p.workspace});
    REQUIRE(plan);
    CHECK(std::none_of(plan->mounts.begin(), plan->mounts.end(), [](const MountStep& s) { return s.op == Op::overlay; }));
    const std::size_t bind = index_of(*plan, Op::bind, p.layers.redirect);
    REQUIRE(bind < plan->mounts.size());
    CHECK((plan->mounts[bind].attrs & attr::rdonly) == 0);
    // The real home is never bound writable.
    CHECK(index_of(*plan, Op::bind, "/home/u") == plan->mounts.size());
  }
  std::vector<std::string> env = {"PATH=/bin", "MAVEN_OPTS=-Xmx1g", "CARGO_HOME=/home/u/.cargo"};
  redirect_caches(env, "/r");
  auto value = [&](std::string_view name) {
    for (const auto& e : env)
      if (e.starts_with(std::string(name) + "=")) return e.substr(name.size() + 1);
    return std::string("<unset>");
  };
  CHECK(value("npm_config_cache") == "/r/npm");
  CHECK(value("CARGO_HOME") == "/r/cargo");
  CHECK(value("MAVEN_OPTS") == "-Xmx1g -Dmaven.repo.local=/r/m2");
  CHECK(value("PATH") == "/bin");
  CHECK(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.starts_with("CARGO_HOME="); }) == 1);
}

TEST_CASE("home cow: --allow-read under the home is bound read-only over the layer") {
  Policy p = home_policy();
  p.allow_read = {"/home/u/.ssh", "/elsewhere/key"};
  auto plan = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(plan);
  const std::size_t layer = index_of(*plan, Op::overlay, "/home/u");
  const std::size_t ssh = index_of(*plan, Op::bind, "/home/u/.ssh");
  REQUIRE(ssh < plan->mounts.size());
  CHECK(layer < ssh);
  CHECK((plan->mounts[ssh].attrs & attr::rdonly) != 0);
  CHECK(index_of(*plan, Op::bind, "/elsewhere/key") == plan->mounts.size());
}
