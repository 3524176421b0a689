// `nsrun bench` for real: its rows run, its files are written. No figure is
// compared with any other (no test asserts a speed).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <algorithm>
#include <string>

using namespace nsrun_test;

namespace {

// A few launches per row: a bench that takes a minute is stuck.
RunOptions within_a_minute() {
  RunOptions o;
  o.timeout = 60s;
  return o;
}

}  // namespace

TEST_CASE("nsrun bench measures its rows and writes the table, the JSON and the plot", "[bench]") {
  require_userns();
  TempDir out("bench");
  const std::string json = out / "bench.json";
  const std::string svg = out / "bench.svg";
  RunResult r = nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "bare,read-only,workspace-write",
                       "--vs", "/bin/true", "--vs", "/nonexistent/peer", "--json", json, "--plot", svg},
                      within_a_minute());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nsrun read-only") != std::string::npos);
  CHECK(r.out.find("nsrun workspace-write") != std::string::npos);
  // A peer that cannot start is shown as such, not measured.
  CHECK(r.out.find("unavailable (/nonexistent/peer not found)") != std::string::npos);
  // The phase breakdown comes from nsrun's own --report-fd.
  CHECK(r.out.find("nsrun phases") != std::string::npos);
  CHECK(r.out.find("clone") != std::string::npos);

  const std::string doc = read_file(json);
  CHECK(doc.find(R"("name": "nsrun workspace-write")") != std::string::npos);
  CHECK(doc.find(R"("baseline": "true")") != std::string::npos);
  CHECK(doc.find(R"("failures": 0)") != std::string::npos);
  CHECK(doc.find(R"("phases_us": [{"name": "prepare")") != std::string::npos);
  const std::string plot = read_file(svg);
  CHECK(plot.starts_with("<svg"));
  CHECK(plot.find("</svg>") != std::string::npos);
}

// Every writable row's launch scans the workspace after the run, at a cost
// per directory: the bind rows' directories must not sit inside it, or
// every row would measure that scan of a thousand directories.
TEST_CASE("nsrun bench's workspace is empty: the bind rows' directories are beside it", "[bench]") {
  require_userns();
  TempDir out("bench-ws");
  const std::string seen = out / "seen";
  const std::string peer = "/bin/sh -c 'echo \"run: $(ls -A -- \"$0\" | wc -l)\" >> " + seen + "' {ws}";
  RunResult r = nsrun({"bench", "-n", "2", "--warmup", "1", "--rows", "bare", "--binds", "3", "--vs", peer},
                      within_a_minute());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nsrun +3 ro binds") != std::string::npos);
  const std::string lines = read_file(seen);
  CHECK(lines.starts_with("run: 0\n"));
  CHECK(lines.find("run: ") != std::string::npos);
  CHECK(lines.find_first_not_of("run: 0\n") == std::string::npos);
}

TEST_CASE("nsrun bench refuses bad options with exit 125", "[bench][validation]") {
  RunResult r = nsrun({"bench", "--launches", "zero"});
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("--launches") != std::string::npos);
  r = nsrun({"bench", "--baseline", "nothing-like-this", "-n", "1"});
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("--baseline") != std::string::npos);
}

// The floor rows: a static program that only execs the payload,
// one per C library the build offers, found beside nsrun or in tools/
// below its directory (a build tree). Each launch of a floor row must run
// the payload itself, with its arguments.
TEST_CASE("nsrun bench's floor rows exec the payload and pair every row against it", "[bench]") {
  require_userns();
  const std::string dir = nsrun_path().substr(0, nsrun_path().rfind('/') + 1);
  auto built = [&](const std::string& libc) {
    for (const std::string& p : {dir + "nsrun-floor-" + libc, dir + "tools/nsrun-floor-" + libc})
      if (::access(p.c_str(), X_OK) == 0) return true;
    return false;
  };
  TempDir out("bench-floor");
  const std::string log = out / "runs";
  RunResult r = nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "bare,floor", "--payload",
                       "/bin/sh -c 'echo \"$0\" >> " + log + "' ran", "--json", out / "bench.json"},
                      within_a_minute());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::size_t floors = 0;
  for (const std::string libc : {"glibc", "musl"}) {
    INFO(libc);
    CHECK(r.out.find("floor " + libc) != std::string::npos);
    if (built(libc)) {
      ++floors;
      CHECK(r.out.find("floor " + libc + "  unavailable") == std::string::npos);
    } else {
      WARN("nsrun-floor-" << libc << " is not built beside " << nsrun_path() << ": its row is shown unavailable");
      CHECK(r.out.find("nsrun-floor-" + libc + " not built") != std::string::npos);
    }
  }
  // Each measured row ran the payload once to check it, once to warm up and
  // three times measured: bare and every floor that was built.
  const std::string runs = read_file(log);
  CHECK(static_cast<std::size_t>(std::count(runs.begin(), runs.end(), '\n')) == 5 * (1 + floors));
  CHECK(runs.find("ran\n") == 0);
  if (floors > 0) {
    CHECK(r.out.find("above the floor") != std::string::npos);
    CHECK(read_file(out / "bench.json").find(R"("floor_ratios": {"floor glibc": )") != std::string::npos);
  }
}

// `nsrun bench` has a cow row (the copy-on-write workspace's
// launch, paired with workspace-write), and its run layers, one per
// launch, are gone when the bench ends.
TEST_CASE("nsrun bench's cow row runs beside workspace-write and leaves no run layer", "[bench][cow]") {
  require_userns();
  TempDir tmp("bench-cow");
  RunOptions o = within_a_minute();
  o.env = {"TMPDIR=" + tmp.path()};
  RunResult r = nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "workspace-write,cow"}, o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nsrun workspace-write") != std::string::npos);
  CHECK(r.out.find("nsrun cow") != std::string::npos);
  CHECK(r.out.find(" failed)") == std::string::npos);
  CHECK(run({"ls", "-A", tmp.path()}).out.empty());
}
