// `nsrun bench` for real: its rows run, its files are written. No figure is
// compared with any other (no test asserts a speed).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>

using namespace nsrun_test;

TEST_CASE("nsrun bench measures its rows and writes the table, the JSON and the plot", "[bench]") {
  require_userns();
  TempDir out("bench");
  const std::string json = out / "bench.json";
  const std::string svg = out / "bench.svg";
  RunResult r = nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "bare,read-only,workspace-write",
                       "--vs", "/bin/true", "--vs", "/nonexistent/peer", "--json", json, "--plot", svg},
                      [] {
                        RunOptions o;
                        o.timeout = 60s;
                        return o;
                      }());
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

TEST_CASE("nsrun bench refuses bad options with exit 125", "[bench][validation]") {
  RunResult r = nsrun({"bench", "--launches", "zero"});
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("--launches") != std::string::npos);
  r = nsrun({"bench", "--baseline", "nothing-like-this", "-n", "1"});
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("--baseline") != std::string::npos);
}
