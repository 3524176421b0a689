// Help as a user reads it: every subcommand answers --help on stdout with
// exit 0, `nsrun help TOPIC` prints each topic, `nsrun help SUBCOMMAND` is
// that subcommand's --help, and an unknown topic is one line, exit 125.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

using namespace nsrun_test;

TEST_CASE("help: every subcommand answers --help, and nsrun help SUBCOMMAND is the same text", "[help]") {
  TempDir ws;
  for (const std::string sub : {"policy", "explain", "probe", "changes", "commit", "discard", "runs", "home",
                                "connect", "bench", "bwrap"}) {
    DYNAMIC_SECTION(sub) {
      RunResult r = nsrun({sub, "--help"}, at(ws));
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      CHECK(r.out.find("usage:") != std::string::npos);
      CHECK(r.out.find(sub == "bwrap" ? "bwrap" : "nsrun " + sub) != std::string::npos);
      RunResult via = nsrun({"help", sub}, at(ws));
      CHECK(via.exit_code == 0);
      CHECK(via.out == r.out);
    }
  }
}

TEST_CASE("help: nsrun help lists the topics, and each topic prints its text", "[help]") {
  TempDir ws;
  RunResult index = nsrun({"help"}, at(ws));
  REQUIRE(index.exit_code == 0);
  for (const std::string topic : {"modes", "layers", "egress", "limits", "rungs", "report", "settings", "exit"}) {
    INFO(topic);
    CHECK(index.out.find("  " + topic + " ") != std::string::npos);
    RunResult r = nsrun({"help", topic}, at(ws));
    CHECK(r.exit_code == 0);
    CHECK(r.out.starts_with("nsrun help " + topic + "\n"));
    CHECK(count_lines(r.out) >= 5);
  }
  RunResult report = nsrun({"help", "report"}, at(ws));
  for (const std::string field : {"rung", "refusals", "unobserved", "phases", "limits", "ended"}) {
    INFO(field);
    CHECK(report.out.find(field) != std::string::npos);
  }
  RunResult bad = nsrun({"help", "modez"}, at(ws));
  INFO("stderr: " << bad.err);
  CHECK(bad.exit_code == 125);
  CHECK(bad.out.empty());
  CHECK(bad.err ==
        "nsrun: help modez: no such topic (topics: modes, layers, egress, limits, rungs, report, settings, exit)\n");
  // The man page names them too (docs/nsrun.1, HELP TOPICS).
  RunResult usage = nsrun({"--help"}, at(ws));
  CHECK(usage.out.find("nsrun help [TOPIC]") != std::string::npos);
}
