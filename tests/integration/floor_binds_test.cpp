// The sandbox's floor with read-only binds (tools/nsrun-floor-sandbox.c,
// `--ro DIR`) is the yardstick of nsrun's cost per bind in `nsrun bench
// --binds N`. A floor that did less work for a bind than nsrun's PID 1
// would make that ratio lie, one that did more would flatter nsrun: for
// the same binds it makes the same mounts, and (where strace is installed)
// the process that builds the root makes the same system calls per bind,
// no more and no fewer. Left out by design, as for the launch: nsrun's
// check of each path before the clone (a stat in nsrun, not in PID 1).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sys/stat.h>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

std::string floor_sandbox_glibc() {
  const std::string dir = nsrun_path().substr(0, nsrun_path().rfind('/') + 1);
  for (const std::string& p : {dir + "nsrun-floor-sandbox-glibc", dir + "tools/nsrun-floor-sandbox-glibc"})
    if (::access(p.c_str(), X_OK) == 0) return p;
  unavailable("floor-sandbox", "nsrun-floor-sandbox-glibc is not built beside nsrun");
  return {};
}

// The two layouts a --ro bind meets: its directory under /tmp, which the
// sandbox's private /tmp covers, so the mount point is made there (the
// bench's layout: its directories sit beside its workspace in /tmp); and
// inside the workspace, where the host's view shows it and both ends'
// identities are compared.
struct Layout {
  std::string name;
  std::vector<std::string> dirs;
};

// `n` directories under a private directory of /tmp (TempDir's base is
// never under /tmp), removed at the end.
class UnderTmp {
 public:
  explicit UnderTmp(int n) {
    std::string templ = "/tmp/nsrun-floor-binds-XXXXXX";
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    REQUIRE(::chmod(templ.c_str(), 0755) == 0);
    dir_ = templ;
    for (int i = 0; i < n; ++i) {
      dirs_.push_back(fmt::format("{}/{}", dir_, i));
      make_dir(dirs_.back());
    }
  }
  ~UnderTmp() {
    for (const auto& d : dirs_) ::rmdir(d.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::string dir_;
  std::vector<std::string> dirs_;
};

std::vector<Layout> layouts(const UnderTmp& tmp, const TempDir& ws, int n) {
  std::vector<Layout> out = {{"under the private /tmp (made there)", tmp.dirs()}, {"inside the workspace", {}}};
  for (int i = 0; i < n; ++i) {
    make_dir(ws / fmt::format("in{}", i));
    out[1].dirs.push_back(ws / fmt::format("in{}", i));
  }
  return out;
}

std::vector<std::string> nsrun_argv(const TempDir& ws, const std::vector<std::string>& dirs,
                                    const std::vector<std::string>& payload) {
  std::vector<std::string> argv = {nsrun_path(), "--mode", "workspace-write", "--workspace", ws.path(), "--home", "ro"};
  for (const auto& d : dirs) argv.insert(argv.end(), {"--ro", d});
  argv.push_back("--");
  argv.insert(argv.end(), payload.begin(), payload.end());
  return argv;
}

std::vector<std::string> floor_argv(const std::string& floor, const TempDir& ws, const std::vector<std::string>& dirs,
                                    const std::vector<std::string>& payload) {
  std::vector<std::string> argv = {floor};
  for (const auto& d : dirs) argv.insert(argv.end(), {"--ro", d});
  argv.push_back(ws.path());
  argv.insert(argv.end(), payload.begin(), payload.end());
  return argv;
}

// The mounts the payload sees: "mount point options" per line of its
// mountinfo, and how many there are.
std::vector<std::string> mounts_seen(const std::vector<std::string>& argv, const TempDir& ws) {
  RunResult r = run(argv, at(ws));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    f >> id >> parent >> dev >> root >> point >> opts;
    out.push_back(point + " " + opts.substr(0, 2));
  }
  return out;
}

// System calls by name of the process that made the most move_mount calls
// (the one that builds the root), from `strace -f` of `argv`.
std::map<std::string, int> root_builder_calls(const std::vector<std::string>& argv, const TempDir& ws,
                                              const TempDir& out) {
  const std::string log = out / "strace";
  std::vector<std::string> traced = {"strace", "-f", "-qq", "-o", log, "--"};
  traced.insert(traced.end(), argv.begin(), argv.end());
  RunResult r = run(traced, at(ws));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::map<std::string, int>> by_pid;
  static const std::regex call(R"(^(\d+) +([a-z_0-9]+)\()");
  std::istringstream in(read_file(log));
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, call)) ++by_pid[m[1]][m[2]];
  }
  std::map<std::string, int> best;
  for (auto& [pid, calls] : by_pid)
    if (calls["move_mount"] > best["move_mount"]) best = calls;
  return best;
}

std::map<std::string, int> minus(std::map<std::string, int> a, const std::map<std::string, int>& b) {
  for (const auto& [name, n] : b) a[name] -= n;
  std::erase_if(a, [](const auto& kv) { return kv.second == 0; });
  return a;
}

std::string show(const std::map<std::string, int>& m) {
  std::string s;
  for (const auto& [name, n] : m) s += fmt::format("{} {}, ", name, n);
  return s;
}

}  // namespace

TEST_CASE("the sandbox's floor makes the mounts nsrun makes for the same read-only binds", "[floor-binds][bench]") {
  require_userns();
  const std::string floor = floor_sandbox_glibc();
  TempDir ws("floor-binds-ws");
  UnderTmp tmp(12);
  const std::vector<std::string> cat = {"/bin/cat", "/proc/self/mountinfo"};
  for (const Layout& layout : layouts(tmp, ws, 12)) {
    INFO(layout.name);
    const auto nsrun_none = mounts_seen(nsrun_argv(ws, {}, cat), ws);
    const auto nsrun_binds = mounts_seen(nsrun_argv(ws, layout.dirs, cat), ws);
    const auto floor_none = mounts_seen(floor_argv(floor, ws, {}, cat), ws);
    const auto floor_binds = mounts_seen(floor_argv(floor, ws, layout.dirs, cat), ws);
    // One mount more per bind in both, each read-only at its own path.
    CHECK(nsrun_binds.size() - nsrun_none.size() == layout.dirs.size());
    CHECK(floor_binds.size() - floor_none.size() == layout.dirs.size());
    for (const std::string& d : layout.dirs) {
      INFO(d);
      CHECK(std::count(nsrun_binds.begin(), nsrun_binds.end(), d + " ro") == 1);
      CHECK(std::count(floor_binds.begin(), floor_binds.end(), d + " ro") == 1);
    }
    // And nothing written through them.
    RunResult w = run(floor_argv(floor, ws, layout.dirs, {"/bin/sh", "-c", "touch \"$0\"/x", layout.dirs[3]}), at(ws));
    CHECK(w.exit_code != 0);
    CHECK_FALSE(file_exists(layout.dirs[3] + "/x"));
  }
}

TEST_CASE("the sandbox's floor makes nsrun PID 1's system calls for each read-only bind, no more, no fewer",
          "[floor-binds][bench]") {
  require_userns();
  const std::string floor = floor_sandbox_glibc();
  if (run({"/bin/sh", "-c", "command -v strace"}).exit_code != 0) {
    WARN("strace is not installed: the floor's system calls per bind are not compared with nsrun's");
    return;
  }
  TempDir ws("floor-binds-calls-ws");
  TempDir out("floor-binds-calls-out");
  // 100 binds: 300 fds done with, six batches of them and more.
  UnderTmp tmp(100);
  const std::vector<std::string> payload = {"/bin/true"};
  for (const Layout& layout : layouts(tmp, ws, 100)) {
    INFO(layout.name);
    auto ns = minus(root_builder_calls(nsrun_argv(ws, layout.dirs, payload), ws, out),
                    root_builder_calls(nsrun_argv(ws, {}, payload), ws, out));
    auto fl = minus(root_builder_calls(floor_argv(floor, ws, layout.dirs, payload), ws, out),
                    root_builder_calls(floor_argv(floor, ws, {}, payload), ws, out));
    INFO("nsrun's PID 1, calls more with the binds: " << show(ns));
    INFO("the floor's PID 1, calls more with the binds: " << show(fl));
    CHECK(ns["move_mount"] == 100);
    // The fds done with (source, clone, destination) are closed in batches
    // of 48, one close_range() per run of consecutive numbers, none with a
    // close() of its own: how many runs a batch holds depends on the fds
    // the other mounts hold, so the counts differ, by a few per hundred
    // binds, not per bind.
    for (auto* calls : {&ns, &fl}) {
      CHECK((*calls)["close_range"] >= 300 / 48);
      CHECK((*calls)["close_range"] <= 2 * (300 / 48 + 1));
      calls->erase("close_range");
    }
    // The floor opens the host's root for the binds' sources when it is
    // given binds (nsrun has it open in every launch): once, not per bind.
    CHECK(fl["openat"] == 1);
    fl = minus(fl, {{"openat", 1}, {"close", 1}});
    ns = minus(ns, {});
    CHECK(ns == fl);
  }
}

TEST_CASE("nsrun bench --binds prints each row's cost per bind beside the floor's, paired", "[floor-binds][bench]") {
  require_userns();
  (void)floor_sandbox_glibc();
  TempDir out("bench-binds");
  RunOptions o;
  o.timeout = 120s;
  RunResult r = nsrun({"bench", "-n", "5", "--warmup", "1", "--rows", "bare", "--binds", "100", "--json", out / "bench.json"}, o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find(" failed)") == std::string::npos);
  // The rows without binds are run for the difference, whatever --rows says.
  CHECK(r.out.find("\nnsrun workspace-write ") != std::string::npos);
  CHECK(r.out.find("\nfloor-sandbox glibc ") != std::string::npos);
  CHECK(r.out.find("\nfloor-sandbox-net") == std::string::npos);
  CHECK(r.out.find("per read-only bind") != std::string::npos);
  CHECK(r.out.find("\nnsrun +100 ro binds ") != std::string::npos);
  CHECK(r.out.find("floor-sandbox glibc +100 ro binds: ") != std::string::npos);
  const std::string doc = read_file(out / "bench.json");
  CHECK(doc.find(R"("binds": 100, "without_binds": "nsrun workspace-write", "per_bind_us": {"n": )") != std::string::npos);
  CHECK(doc.find(R"("per_bind_floor_ratios": {"floor-sandbox glibc +100 ro binds": )") != std::string::npos);
}
