// The copy-on-write layers' pure parts: names, bases, the
// plan's overlay steps, and changes / patch on plain directories.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "launch/ladder.hpp"
#include "layers/changes.hpp"
#include "layers/dirs.hpp"
#include "policy/presets.hpp"
#include "mount/plan.hpp"
#include "policy/cow.hpp"
#include "policy/policy.hpp"
#include "sys/fd.hpp"

using namespace nsrun;
using Op = MountStep::Op;

namespace {

Policy cow_policy() {
  Policy p;
  p.workspace = "/home/u/src/ws";
  p.argv = {"true"};
  p.workspace_mode = WorkspaceMode::cow;
  p.home = HomeMode::cow;
  p.layers.home = "/home/u";
  p.layers.run_base = "/run/user/1000/nsrun/runs";
  p.layers.home_base = "/home/u/.local/state/nsrun/home";
  p.layers.home_name = "ws-0000";
  p.layers.workspace = {"/home/u/src/ws", "/run/user/1000/nsrun/runs/abc/upper", "/run/user/1000/nsrun/runs/abc/work-1"};
  p.layers.home_layer = {"/home/u", "/home/u/.local/state/nsrun/home/ws-0000/upper",
                         "/home/u/.local/state/nsrun/home/ws-0000/work-1"};
  return p;
}

std::size_t index_of(const LaunchPlan& plan, Op op, std::string_view dest) {
  for (std::size_t i = 0; i < plan.mounts.size(); ++i)
    if (plan.mounts[i].op == op && plan.mounts[i].dest == dest) return i;
  return plan.mounts.size();
}

struct Dir {
  std::string path;
  Fd fd;
  Dir() {
    char templ[] = "/tmp/nsrun-cow-unit-XXXXXX";
    REQUIRE(::mkdtemp(templ) != nullptr);
    path = templ;
    fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  ~Dir() {
    Fd parent(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    (void)layers::remove_tree(parent.get(), path.substr(5), path);
  }
  void write(const std::string& name, const std::string& text, mode_t mode = 0644) const {
    Fd f(::openat(fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    REQUIRE(f.valid());
    REQUIRE(::write(f.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    REQUIRE(::fchmodat(fd.get(), name.c_str(), mode, 0) == 0);
  }
};

}  // namespace

TEST_CASE("cow: layer names and bases") {
  CHECK(valid_layer_name("proj-1a2b3c4d"));
  CHECK_FALSE(valid_layer_name(""));
  CHECK_FALSE(valid_layer_name(".hidden"));
  CHECK_FALSE(valid_layer_name("a/b"));
  CHECK_FALSE(valid_layer_name(".."));
  CHECK_FALSE(valid_layer_name(std::string(65, 'a')));
  const std::string a = default_layer_name("/home/u/src/proj");
  CHECK(valid_layer_name(a));
  CHECK(a.starts_with("proj-"));
  CHECK(a != default_layer_name("/home/v/src/proj"));
  CHECK(valid_layer_name(default_layer_name("/")));
  CHECK(valid_layer_name(default_layer_name("/srv/.dot dir\n")));
  CHECK(default_run_base("/run/user/1", "/s", "/h") == "/run/user/1/nsrun/runs");
  CHECK(default_run_base("relative", "/s", "/h") == "/s/nsrun/runs");
  CHECK(default_run_base("", "", "/h") == "/h/.local/state/nsrun/runs");
  CHECK(default_run_base("", "", "/").empty());
  CHECK(default_home_base("", "/h") == "/h/.local/state/nsrun/home");
  CHECK(default_home_base("/s", "/h") == "/s/nsrun/home");
}

TEST_CASE("cow: the plan overlays the home, then the workspace, then hides the layer bases") {
  const Policy p = cow_policy();
  auto plan = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(plan);
  const std::size_t tmp = index_of(*plan, Op::tmpfs, "/tmp");
  const std::size_t home = index_of(*plan, Op::overlay, "/home/u");
  const std::size_t ws = index_of(*plan, Op::overlay, "/home/u/src/ws");
  const std::size_t hide_runs = index_of(*plan, Op::tmpfs, p.layers.run_base);
  const std::size_t hide_homes = index_of(*plan, Op::tmpfs, p.layers.home_base);
  REQUIRE(ws < plan->mounts.size());
  CHECK(tmp < home);
  CHECK(home < ws);
  CHECK(ws < hide_runs);
  CHECK(ws < hide_homes);
  CHECK(hide_homes < plan->mounts.size());
  const MountStep& s = plan->mounts[ws];
  CHECK(s.layers == std::vector<std::string>{"/home/u/src/ws"});
  CHECK(s.source == p.layers.workspace.upper);
  CHECK(s.workdir == p.layers.workspace.work);
  // The run layer is volatile (no sync of the upper file system at unmount);
  // the home layer, which persists, is not.
  CHECK(s.options == "userxattr,volatile");
  CHECK(plan->mounts[home].options == "userxattr");
  CHECK(s.no_symlinks);
  CHECK((s.attrs & attr::rdonly) == 0);
  // No writable bind of the real workspace anywhere.
  CHECK(index_of(*plan, Op::bind, "/home/u/src/ws") == plan->mounts.size());
}

// Outside a user namespace overlayfs would keep its marks in trusted.*,
// which commit does not read, and leave user.overlay.* to the command:
// nsrun's layers ask for user.* there too; a policy's own overlay keeps
// the kernel's default (bwrap's semantics).
TEST_CASE("cow: the layers keep user.* overlay marks without a user namespace too") {
  Policy p = cow_policy();
  p.ns.user = false;
  MountOp own = mount_op(MountOp::Kind::overlay, "/data/upper", "/data/merged");
  own.layers = {"/data/lower"};
  own.workdir = "/data/work";
  p.mounts.push_back(own);
  auto plan = make_plan(p, HostFacts{0, 0, p.workspace});
  REQUIRE(plan);
  CHECK(plan->mounts[index_of(*plan, Op::overlay, "/home/u/src/ws")].options == "userxattr,index=off,volatile");
  CHECK(plan->mounts[index_of(*plan, Op::overlay, "/home/u")].options == "userxattr,index=off");
  CHECK(plan->mounts[index_of(*plan, Op::overlay, "/data/merged")].options == "index=off");
}

TEST_CASE("cow: unmade layers give a read-only overlay, never a writable bind") {
  Policy p = cow_policy();
  p.layers.workspace = {};
  auto plan = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(plan);
  const std::size_t ws = index_of(*plan, Op::overlay, "/home/u/src/ws");
  REQUIRE(ws < plan->mounts.size());
  CHECK((plan->mounts[ws].attrs & attr::rdonly) != 0);
  CHECK(plan->mounts[ws].source.empty());
}

TEST_CASE("cow: --home ro adds nothing, rw binds the home, the workspace inside keeps its bind on top") {
  Policy p = cow_policy();
  p.workspace_mode = WorkspaceMode::direct;
  p.home = HomeMode::ro;
  auto ro = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(ro);
  CHECK(index_of(*ro, Op::overlay, "/home/u") == ro->mounts.size());
  CHECK(index_of(*ro, Op::bind, "/home/u") == ro->mounts.size());
  p.home = HomeMode::rw;
  auto rw = make_plan(p, HostFacts{1000, 1000, p.workspace});
  REQUIRE(rw);
  CHECK(index_of(*rw, Op::bind, "/home/u") < index_of(*rw, Op::bind, "/home/u/src/ws"));
  CHECK(index_of(*rw, Op::bind, "/home/u/src/ws") < rw->mounts.size());
}

TEST_CASE("cow: validation") {
  Policy p = cow_policy();
  p.mode = Mode::read_only;
  CHECK_FALSE(validate_layers(p));
  p = cow_policy();
  p.cow_dir = "relative";
  CHECK_FALSE(validate_layers(p));
  p = cow_policy();
  p.home_layer = "../x";
  CHECK_FALSE(validate_layers(p));
  p = cow_policy();
  CHECK(validate_layers(p));
}

TEST_CASE("cow: the cache redirects") {
  auto r = cache_redirects("/l/redirect", "-Xmx1g");
  auto find = [&](std::string_view var) {
    auto it = std::find_if(r.begin(), r.end(), [&](const auto& kv) { return kv.first == var; });
    return it == r.end() ? std::string() : it->second;
  };
  CHECK(find("CCACHE_DIR") == "/l/redirect/ccache");
  CHECK(find("npm_config_cache") == "/l/redirect/npm");
  CHECK(find("MAVEN_OPTS") == "-Xmx1g -Dmaven.repo.local=/l/redirect/m2");
  CHECK(find("GOMODCACHE") == "/l/redirect/go-mod");
}

TEST_CASE("cow: quote_path follows git") {
  CHECK(layers::quote_path("a b.txt") == "a b.txt");
  CHECK(layers::quote_path("nl\nname") == "\"nl\\nname\"");
  CHECK(layers::quote_path("q\"b\\") == "\"q\\\"b\\\\\"");
  CHECK(layers::quote_path("\xc3\xa9") == "\"\\303\\251\"");
}

TEST_CASE("cow: changes and patch of plain directories") {
  Dir upper, lower;
  lower.write("same", "x\n");
  upper.write("same", "x\n");
  lower.write("edit", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
  upper.write("edit", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n");
  upper.write("new", "added");
  lower.write("mode", "m\n", 0644);
  upper.write("mode", "m\n", 0755);
  REQUIRE(::symlinkat("target", upper.fd.get(), "link") == 0);
  auto changes = layers::collect(upper.fd.get(), lower.fd.get());
  REQUIRE(changes);
  CHECK(layers::list(*changes) == "M edit\nA link\nM mode\nA new\n");
  auto text = layers::patch(upper.fd.get(), lower.fd.get(), *changes);
  REQUIRE(text);
  CHECK(*text ==
        "diff --git a/edit b/edit\n--- a/edit\n+++ b/edit\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+target\n"
        "\\ No newline at end of file\n"
        "diff --git a/mode b/mode\nold mode 100644\nnew mode 100755\n"
        "diff --git a/new b/new\nnew file mode 100644\n--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+added\n"
        "\\ No newline at end of file\n");
}

TEST_CASE("cow: a refused layer overlay is overlay-unavailable, other failures stay the user's") {
  for (int err : {EPERM, EINVAL, ENODEV, EOPNOTSUPP}) {
    Error e = sys_error(Operation::mount_layer, "/ws", err);
    CHECK(classify_namespace_failure(e, ProcMode::fresh) == "overlay-unavailable");
  }
  CHECK(classify_namespace_failure(sys_error(Operation::mount_layer, "/ws", ENOENT), ProcMode::fresh).empty());
  // The bwrap dialect's own overlays keep their own failure.
  CHECK(classify_namespace_failure(sys_error(Operation::mount_fs, "/ws", EPERM), ProcMode::fresh).empty());
}
