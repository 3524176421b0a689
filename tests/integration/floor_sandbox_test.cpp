// The sandbox's floor: tools/nsrun-floor-sandbox.c,
// the kernel work of nsrun's workspace-write launch with no policy logic,
// is the yardstick of `nsrun bench`'s floor-sandbox rows. A floor that did
// not really confine would measure nothing, so these tests hold it to the
// promise from the host: a read-only root, a PID namespace (and with --net
// a network namespace) of its own, the workspace writable, nothing outside
// it, no capability and a seccomp filter. Each libc's build, each variant.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// nsrun-floor-sandbox-<libc> beside nsrun or in tools/ below its directory
// (a build tree), as `nsrun bench` finds it; empty when not built.
std::string floor_sandbox(const std::string& libc) {
  const std::string dir = nsrun_path().substr(0, nsrun_path().rfind('/') + 1);
  for (const std::string& p : {dir + "nsrun-floor-sandbox-" + libc, dir + "tools/nsrun-floor-sandbox-" + libc})
    if (::access(p.c_str(), X_OK) == 0) return p;
  return {};
}

// The floors that were built: glibc's always (built with the tests), musl's
// where musl-gcc is installed. Loud about the one that is missing.
std::vector<std::string> built_floors() {
  std::vector<std::string> out;
  for (const std::string libc : {"glibc", "musl"}) {
    if (std::string p = floor_sandbox(libc); !p.empty()) out.push_back(p);
    else WARN("nsrun-floor-sandbox-" << libc << " is not built beside " << nsrun_path() << ": not tested");
  }
  if (out.empty()) unavailable("floor-sandbox", "no nsrun-floor-sandbox-* is built beside nsrun");
  return out;
}

RunResult under_floor(const std::string& floor, bool net, const TempDir& ws, std::vector<std::string> probe_args) {
  std::vector<std::string> argv{floor};
  if (net) argv.push_back("--net");
  argv.push_back(ws.path());
  argv.push_back(probe_path());
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return run(argv);
}

}  // namespace

TEST_CASE("the sandbox's floor confines as nsrun's workspace-write does, seen from the host", "[floor-sandbox][bench]") {
  require_userns();
  for (const std::string& floor : built_floors()) {
    for (bool net : {false, true}) {
      INFO(floor << (net ? " --net" : ""));
      TempDir ws("floor-ws");
      TempDir host("floor-host");

      // The workspace is writable, and what is written there is on the host.
      RunResult in = under_floor(floor, net, ws, {"write", ws / "in", "floor"});
      INFO(in.err);
      CHECK(in.exit_code == 0);
      CHECK(in.out == "ok\n");
      CHECK(read_file(ws / "in") == "floor");

      // Anywhere else the root is the host's, read-only.
      RunResult out = under_floor(floor, net, ws, {"write", host / "out", "escaped"});
      INFO(out.err);
      CHECK(out.exit_code == 1);
      CHECK(out.out == "error EROFS\n");
      CHECK_FALSE(file_exists(host / "out"));
      const std::string top = "/nsrun-floor-" + unique_token();
      RunResult root = under_floor(floor, net, ws, {"mkdir", top});
      CHECK(root.out == "error EROFS\n");
      CHECK_FALSE(file_exists(top));

      // Its own PID namespace: the payload is PID 2 (the floor's PID 1
      // reaps it), and the namespace is not the host's.
      CHECK(under_floor(floor, net, ws, {"getpid"}).out == "2\n");
      const std::string pid_ns = under_floor(floor, net, ws, {"ns", "pid"}).out;
      CHECK(pid_ns.starts_with("pid:["));
      CHECK(chomp(pid_ns) != read_link("/proc/self/ns/pid"));
      for (const char* kind : {"mnt", "user", "ipc", "uts", "cgroup"}) {
        INFO(kind);
        const std::string ns = chomp(under_floor(floor, net, ws, {"ns", kind}).out);
        CHECK(ns.starts_with(std::string(kind) + ":["));
        CHECK(ns != read_link(std::string("/proc/self/ns/") + kind));
      }
      // network-none's floor has a network namespace of its own; the
      // workspace-write floor shares the host's, as nsrun does.
      const std::string net_ns = chomp(under_floor(floor, net, ws, {"ns", "net"}).out);
      CHECK(net_ns.starts_with("net:["));
      CHECK((net_ns != read_link("/proc/self/ns/net")) == net);

      // No capability, no_new_privs and nsrun's filter (one, in mode 2).
      const std::string status = under_floor(floor, net, ws, {"read", "/proc/self/status"}).out;
      CHECK(status.find("CapEff:\t0000000000000000\n") != std::string::npos);
      CHECK(status.find("CapBnd:\t0000000000000000\n") != std::string::npos);
      CHECK(status.find("NoNewPrivs:\t1\n") != std::string::npos);
      CHECK(status.find("Seccomp:\t2\n") != std::string::npos);
      CHECK(status.find("Seccomp_filters:\t1\n") != std::string::npos);
      // The filter is nsrun's default: a nested user namespace is refused.
      RunResult nested = under_floor(floor, net, ws, {"nested-userns", "remount-rw", "/", "x"});
      CHECK(nested.out.starts_with("unshare error"));
    }
  }
}

TEST_CASE("the sandbox's floor refuses a bad command line with exit 125 and runs nothing", "[floor-sandbox][bench]") {
  for (const std::string& floor : built_floors()) {
    INFO(floor);
    TempDir ws("floor-ws");
    RunResult r = run({floor, "relative/ws", "/bin/true"});
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("usage") != std::string::npos);
    // A payload that cannot be executed: PID 2 reports 127 through PID 1.
    r = run({floor, ws.path(), "/nonexistent/payload"});
    CHECK(r.exit_code == 127);
  }
}

// The bench's floor-sandbox rows run the floor on the bench's workspace and
// pair nsrun's rows of the same promise against it.
TEST_CASE("nsrun bench's floor-sandbox rows run and pair workspace-write and network-none", "[floor-sandbox][bench]") {
  require_userns();
  (void)built_floors();
  TempDir out("bench-floor-sandbox");
  RunOptions o;
  o.timeout = 120s;
  RunResult r = nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "floor-sandbox,workspace-write,network-none",
                       "--json", out / "bench.json"},
                      o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const std::string libc : {"glibc", "musl"}) {
    INFO(libc);
    for (const std::string& row : {"floor-sandbox " + libc, "floor-sandbox-net " + libc}) {
      CHECK(r.out.find(row) != std::string::npos);
      if (!floor_sandbox(libc).empty()) CHECK(r.out.find(row + "  unavailable") == std::string::npos);
    }
  }
  CHECK(r.out.find(" failed)") == std::string::npos);
  CHECK(r.out.find("above the sandbox's floor") != std::string::npos);
  const std::string doc = read_file(out / "bench.json");
  CHECK(doc.find(R"("sandbox_floor_ratios": {"floor-sandbox glibc": )") != std::string::npos);
  CHECK(doc.find(R"("sandbox_floor_ratios": {"floor-sandbox-net glibc": )") != std::string::npos);
}
