// What the verdict line and the report's "refusals" say, from a Verdict as
// the watch leaves it: each kind named in plain words with the option that
// would allow it; what nsrun could not see said as unseen, never guessed.
#include <catch2/catch_test_macros.hpp>

#include "launch/refusals.hpp"
#include "launch/watch.hpp"

using namespace nsrun;

namespace {

Verdict failed(int code = 1) {
  Verdict v;
  v.started = true;
  v.ended.how = "exit";
  v.ended.code = code;
  return v;
}

RefusalFacts facts() {
  RefusalFacts f;
  f.watch_writes = true;  // nothing unseen unless a test says so
  return f;
}

}  // namespace

TEST_CASE("seccomp refusals are named with the option that allows them", "[refusals]") {
  Verdict v = failed();
  v.denials_observed = true;
  v.denials.push_back(Denial{"keyctl", 250, 2, 1, ""});
  v.denials.push_back(Denial{"unshare", 272, 1, 1, ""});
  collect_refusals(v, facts());
  REQUIRE(v.refusals.size() == 2);
  CHECK(v.refusals[0].kind == "seccomp");
  CHECK(v.refusals[0].count == 2);
  CHECK(v.refusals[1].allow == "--allow-nested-userns");
  CHECK(verdict_line(v) == "nsrun: seccomp refused keyctl \u00d72 (and 1 more)");
  v.ended.code = 0;
  CHECK(verdict_line(v).empty());
}

TEST_CASE("a timeout is one line, with or without --verdict", "[refusals][timeout]") {
  Verdict v = failed(124);
  v.ended.how = "timeout";
  v.ended.limit = "timeout";
  v.ended.killed = true;
  RefusalFacts f = facts();
  f.timeout_ms = 2000;
  f.kill_after_ms = 2000;
  collect_refusals(v, f);
  CHECK(timeout_line(v) == "nsrun: timed out after 2s: SIGTERM, then SIGKILL 2s later");
  CHECK(verdict_line(v) == "nsrun: timed out after 2s: SIGTERM, then SIGKILL 2s later");
  Verdict quiet = failed(124);
  quiet.ended.how = "timeout";
  f.timeout_ms = 1500;
  collect_refusals(quiet, f);
  CHECK(timeout_line(quiet) == "nsrun: timed out after 1500ms: SIGTERM ended it");
  CHECK(timeout_line(failed()).empty());
}

TEST_CASE("egress denials name the host and the list it is missing from", "[refusals][egress]") {
  Verdict v = failed(56);
  std::vector<egress::Decision> decisions(3);
  decisions[0].host = "ok.example";
  decisions[0].port = 443;
  decisions[0].decision = "allowed";
  decisions[1].host = "registry.example";
  decisions[1].port = 443;
  decisions[1].decision = "denied";
  decisions[1].reason = "blocked-by-allowlist";
  decisions[2] = decisions[1];
  decisions[2].count = 2;
  RefusalFacts f = facts();
  f.egress = &decisions;
  collect_refusals(v, f);
  REQUIRE(v.refusals.size() == 1);
  CHECK(v.refusals[0].count == 3);
  CHECK(v.refusals[0].allow == "--allow-host registry.example");
  CHECK(verdict_line(v) == "nsrun: egress denied: registry.example:443 is not in --allow-host");
}

TEST_CASE("a protected path is not called outside the workspace", "[refusals][watch-writes]") {
  Verdict v = failed(255);
  v.writes_watched = v.writes_observed = true;
  v.writes_outside = {{"/ws/.git/config.lock", "openat", WritePlace::protected_, 1, 10, {}, 0},
                      {"/etc/hosts", "openat", WritePlace::outside, 2, 10, {}, 0}};
  collect_refusals(v, facts());
  REQUIRE(v.refusals.size() == 2);
  CHECK(v.refusals[0].kind == "protected-path");
  CHECK(v.refusals[1].kind == "read-only-root");
  CHECK(verdict_line(v) ==
        "nsrun: write to protected path /ws/.git/config.lock (kept read-only; --unprotect drops it from the set); "
        "write to /etc/hosts \u00d72 outside the writable roots (read-only; --writable DIR makes a directory writable)");
}

TEST_CASE("limits reached: the pids counter, the OOM kill", "[refusals][limits]") {
  Verdict v = failed();
  v.pids_refused = 5;
  RefusalFacts f = facts();
  f.pids = 8;
  collect_refusals(v, f);
  CHECK(verdict_line(v) == "nsrun: the pids limit (8) refused 5 forks");
  Verdict oom = failed(137);
  oom.ended.how = "oom";
  f.memory = 64ull << 20;
  collect_refusals(oom, f);
  CHECK(verdict_line(oom) == "nsrun: killed by the OOM killer at the memory limit (--limit-memory 64M)");
}

TEST_CASE("what nsrun cannot see is said, not guessed", "[refusals]") {
  Verdict v = failed(6);
  RefusalFacts f = facts();
  f.watch_writes = false;
  f.network = Network::none;
  collect_refusals(v, f);
  CHECK(v.refusals.empty());
  const std::string line = verdict_line(v);
  CHECK(line.starts_with("nsrun: exit 6; no refusal seen; not seen in this run: writes to read-only or protected "
                         "paths (--watch-writes shows them); the network is off (--network none)"));
  // Nothing unseen, nothing refused: silence.
  Verdict quiet = failed(2);
  quiet.denials_observed = true;
  collect_refusals(quiet, facts());
  CHECK(verdict_line(quiet).empty());
}

TEST_CASE("the verdict names the first three kinds, the report has them all", "[refusals]") {
  Verdict v = failed();
  v.denials_observed = true;
  v.pids_refused = 1;
  v.writes_outside = {{"/a", "mkdir", WritePlace::protected_, 1, 1, {}, 0}, {"/b", "mkdir", WritePlace::outside, 1, 1, {}, 0}};
  v.denials.push_back(Denial{"keyctl", 250, 1, 1, ""});
  collect_refusals(v, facts());
  CHECK(v.refusals.size() == 4);
  CHECK(verdict_line(v).ends_with("; 1 more kind in the report"));
}
