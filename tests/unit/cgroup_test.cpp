// The cgroup v2 path on a fake tree: this project's hosts are
// cgroup v1 hybrids, where no v2 subtree can be delegated, so the steps
// nsrun takes on a real delegated subtree (detection, the leaf for nsrun,
// the controllers, the sandbox's cgroup and its limits, the events, the
// removal) are checked here against plain files and directories.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ns/cgroup.hpp"
#include "probe/cgroup.hpp"

using namespace nsrun;
namespace fs = std::filesystem;

namespace {

struct FakeTree {
  std::string root;
  FakeTree() {
    char templ[] = "/tmp/nsrun-cgroup-test-XXXXXX";
    REQUIRE(::mkdtemp(templ) != nullptr);
    root = templ;
  }
  ~FakeTree() { fs::remove_all(root); }
  void put(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(root + rel).parent_path());
    std::ofstream(root + rel) << text;
  }
  std::string get(const std::string& rel) const {
    std::ifstream in(root + rel);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

const char* hybrid = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n";
const char* pure_v2 = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/nsrun.scope\n";

}  // namespace

TEST_CASE("/proc/self/cgroup: the v2 path and the controllers bound to v1", "[cgroup]") {
  CHECK(cgroup_v2_path(hybrid) == "/");
  CHECK(cgroup_v2_path(pure_v2) == "/user.slice/user-1000.slice/user@1000.service/app.slice/nsrun.scope");
  CHECK_FALSE(cgroup_v2_path("4:memory:/x\n").has_value());
  CHECK(cgroup_v1_controllers(hybrid) == std::vector<std::string>{"pids", "memory", "cpu"});
  CHECK(cgroup_v1_controllers(pure_v2).empty());
  CHECK(cgroup_v1_controllers("3:cpu,cpuacct:/\n") == std::vector<std::string>{"cpu", "cpuacct"});
}

TEST_CASE("detection: a delegated v2 subtree, a hybrid host, a subtree not ours", "[cgroup]") {
  FakeTree t;
  const std::string scope = "/user.slice/user-1000.slice/user@1000.service/app.slice/nsrun.scope";
  t.put(scope + "/cgroup.controllers", "cpuset cpu io memory pids\n");
  t.put(scope + "/cgroup.procs", "");
  t.put(scope + "/cgroup.subtree_control", "");
  SECTION("delegated") {
    CgroupHost h = detect_cgroup_v2(t.root, pure_v2);
    CHECK(h.usable);
    CHECK(h.dir == t.root + scope);
    CHECK(h.controllers == std::vector<std::string>{"memory", "pids", "cpu"});
  }
  SECTION("hybrid: the controllers live in v1") {
    t.put("/cgroup.controllers", "");
    CgroupHost h = detect_cgroup_v2(t.root, hybrid);
    CHECK_FALSE(h.usable);
    CHECK(h.why.find("v1") != std::string::npos);
  }
  SECTION("not writable: not delegated") {
    if (::geteuid() == 0) SKIP("root writes whatever the mode says");
    ::chmod((t.root + scope + "/cgroup.procs").c_str(), 0444);
    CgroupHost h = detect_cgroup_v2(t.root, pure_v2);
    CHECK_FALSE(h.usable);
    CHECK(h.why.find("not delegated") != std::string::npos);
  }
}

TEST_CASE("the sandbox's cgroup: nsrun in a leaf, controllers, limits, events, removal", "[cgroup]") {
  FakeTree t;
  LimitsPlan plan;
  plan.use_cgroup = true;
  plan.cgroup_memory = 64ULL << 20;
  plan.cgroup_pids = 11;
  plan.cgroup_cpu_millis = 500;
  CHECK(cgroup_controllers_line(plan) == "+memory +pids +cpu");
  t.put("/cgroup.procs", "4242\n");  // nsrun starts in the delegated cgroup
  auto made = SandboxCgroup::make(t.root, 4242, plan, true);
  REQUIRE(made.has_value());
  CHECK(t.get("/nsrun-supervisor/cgroup.procs") == "4242");
  CHECK(t.get("/cgroup.subtree_control") == "+memory +pids +cpu");
  CHECK(made->path() == t.root + "/nsrun-4242");
  CHECK(t.get("/nsrun-4242/memory.max") == std::to_string(64ULL << 20));
  CHECK(t.get("/nsrun-4242/memory.swap.max") == "0");
  CHECK(t.get("/nsrun-4242/pids.max") == "11");
  CHECK(t.get("/nsrun-4242/cpu.max") == "50000 100000");
  CHECK(made->fd() >= 0);
  t.put("/nsrun-4242/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n");
  t.put("/nsrun-4242/pids.events", "max 7\n");
  t.put("/nsrun-4242/memory.peak", "67108864\n");
  const CgroupEvents e = made->events();
  CHECK(e.oom_kills == 1);
  CHECK(e.pids_max_hits == 7);
  CHECK(e.peak_bytes == 67108864u);
  ::unlink((t.root + "/nsrun-4242/memory.events").c_str());
  ::unlink((t.root + "/nsrun-4242/pids.events").c_str());
  ::unlink((t.root + "/nsrun-4242/memory.peak").c_str());
  REQUIRE(made->remove().has_value());
  CHECK_FALSE(fs::exists(t.root + "/nsrun-4242"));
  // A second sandbox of the same nsrun pid is refused, never shared.
  REQUIRE(SandboxCgroup::make(t.root, 4243, plan, true).has_value());
  CHECK_FALSE(SandboxCgroup::make(t.root, 4243, plan, true).has_value());
}

TEST_CASE("the delegated cgroup: shared with other processes, or named in NSRUN_CGROUP", "[cgroup]") {
  FakeTree t;
  const std::string scope = "/user.slice/user-1000.slice/user@1000.service/app.slice/nsrun.scope";
  for (const std::string& d : {scope, std::string("/sandboxes")}) {
    t.put(d + "/cgroup.controllers", "cpu memory pids\n");
    t.put(d + "/cgroup.procs", "");
    t.put(d + "/cgroup.subtree_control", "");
  }
  CHECK(cgroup_other_processes("12\n77\n", 77) == 1);
  CHECK(cgroup_other_processes("", 77) == 0);
  CHECK(cgroup_lists("12\n77\n", 77));
  CHECK_FALSE(cgroup_lists("12\n177\n", 77));
  SECTION("nsrun alone in its cgroup: usable, and it moves itself into a leaf") {
    t.put(scope + "/cgroup.procs", "77\n");
    CgroupHost h = detect_cgroup_v2(t.root, pure_v2, "", 77);
    CHECK(h.usable);
    CHECK(h.inside);
  }
  SECTION("a shell beside nsrun: refused before anything is made, naming the way out") {
    t.put(scope + "/cgroup.procs", "12\n77\n");
    CgroupHost h = detect_cgroup_v2(t.root, pure_v2, "", 77);
    CHECK_FALSE(h.usable);
    CHECK(h.why.find("1 other process") != std::string::npos);
    CHECK(h.why.find("Delegate=yes") != std::string::npos);
  }
  SECTION("NSRUN_CGROUP names an empty delegated cgroup: used, nsrun stays where it is") {
    t.put(scope + "/cgroup.procs", "12\n77\n");
    CgroupHost h = detect_cgroup_v2(t.root, pure_v2, t.root + "/sandboxes/", 77);
    CHECK(h.usable);
    CHECK_FALSE(h.inside);
    CHECK(h.dir == t.root + "/sandboxes");
    LimitsPlan plan;
    plan.use_cgroup = true;
    plan.cgroup_pids = 5;
    auto made = SandboxCgroup::make(h.dir, 77, plan, true);
    REQUIRE(made.has_value());
    CHECK_FALSE(fs::exists(h.dir + "/nsrun-supervisor"));  // no leaf: nsrun is not in it
    CHECK(t.get("/sandboxes/nsrun-77/pids.max") == "5");
    REQUIRE(made->remove().has_value());
  }
  SECTION("NSRUN_CGROUP outside the hierarchy, or walking out of it, or not a cgroup") {
    for (const std::string& bad : {std::string("/tmp"), t.root + "/../etc", t.root + "/nowhere"}) {
      CgroupHost h = detect_cgroup_v2(t.root, pure_v2, bad, 77);
      INFO(bad);
      CHECK_FALSE(h.usable);
      CHECK(h.why.find("NSRUN_CGROUP") != std::string::npos);
    }
  }
}

TEST_CASE("controllers already enabled are not written again", "[cgroup]") {
  CHECK(cgroup_enables("cpu memory pids\n", "+memory +pids"));
  CHECK(cgroup_enables("memory pids\n", "+pids"));
  CHECK_FALSE(cgroup_enables("memory\n", "+memory +pids"));
  CHECK_FALSE(cgroup_enables("", "+cpu"));
  CHECK_FALSE(cgroup_enables("cpuset\n", "+cpu"));
}

TEST_CASE("cgroup key lines", "[cgroup]") {
  CHECK(cgroup_key("populated 1\nfrozen 0\n", "populated") == 1);
  CHECK(cgroup_key("populated 1\nfrozen 0\n", "frozen") == 0);
  CHECK(cgroup_key("oom 2\noom_kill 5\n", "oom_kill") == 5);
  CHECK(cgroup_key("oom_kill 5\n", "oom") == 0);
}

TEST_CASE("cgroup v1 as root: detection per hierarchy, the writes, nsrun in and out", "[cgroup]") {
  FakeTree t;
  t.put("/pids/cgroup.procs", "");
  t.put("/memory/process_api/x/cgroup.procs", "");
  t.put("/cpu/cgroup.procs", "");
  const char* text = "8:pids:/\n4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/\n";
  CHECK_FALSE(detect_cgroup_v1(t.root, text, false).usable);
  const CgroupV1Host h = detect_cgroup_v1(t.root, text, true);
  REQUIRE(h.usable);
  CHECK(h.dirs == std::vector<std::pair<std::string, std::string>>{
                      {"pids", t.root + "/pids"}, {"memory", t.root + "/memory/process_api/x"}, {"cpu", t.root + "/cpu"}});
  LimitsPlan plan;
  plan.cgroup_pids = 9;
  plan.cgroup_memory = 1 << 20;
  plan.cgroup_cpu_millis = 250;
  CHECK(cgroup_v1_writes("cpu", plan) ==
        std::vector<std::pair<std::string, std::string>>{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "25000"}});
  auto made = SandboxCgroupV1::make(h.dirs, 77, plan, true);
  REQUIRE(made.has_value());
  CHECK(t.get("/pids/nsrun-77/pids.max") == "9");
  CHECK(t.get("/memory/process_api/x/nsrun-77/memory.limit_in_bytes") == "1048576");
  CHECK(t.get("/cpu/nsrun-77/cpu.cfs_quota_us") == "25000");
  REQUIRE(made->enter(77).has_value());
  CHECK(t.get("/pids/nsrun-77/cgroup.procs") == "77");
  REQUIRE(made->leave(77).has_value());
  CHECK(t.get("/pids/cgroup.procs") == "77");
  t.put("/memory/process_api/x/nsrun-77/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  CHECK(made->events().oom_kills == 2);
  ::unlink((t.root + "/memory/process_api/x/nsrun-77/memory.oom_control").c_str());
  REQUIRE(made->remove().has_value());
  CHECK_FALSE(fs::exists(t.root + "/pids/nsrun-77"));
  CHECK_FALSE(fs::exists(t.root + "/memory/process_api/x/nsrun-77"));
}
