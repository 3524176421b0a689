// An agent always knows why its command failed: what a harness would do
// (run nsrun, read the report, check the verdict line) for each kind of
// refusal the sandbox makes, as root and as an unprivileged user. The
// report is checked against docs/report.schema.json every time; what nsrun
// cannot see is said as unseen, never guessed.
#include "cow_support.hpp"
#include "egress_world.hpp"
#include "harness.hpp"
#include "report_schema.hpp"
#include "reported.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {

bool kernel_root() { return ::geteuid() == 0; }

// The report conforms to the schema, and its refusals of `kind`.
std::vector<const nsrun::json::Value*> refusals_of(const nsrun::json::Value& report, std::string_view kind) {
  for (const auto& e : report_schema_errors(report)) FAIL_CHECK(e);
  std::vector<const nsrun::json::Value*> out;
  const nsrun::json::Value* list = report.is_object() ? report.find("refusals") : nullptr;
  if (list == nullptr || !list->is_array()) return out;
  for (const auto& r : list->as_array())
    if (str(r.find("kind")) == kind) out.push_back(&r);
  return out;
}

void schema_holds(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--", "true"},
           {"--verdict", "--", "sh", "-c", p + " sys keyctl; exit 1"},
           {"--watch-writes", "--", "sh", "-c", "echo x > /etc/nsrun-schema-probe; exit 3"},
           {"--timeout", "300ms", "--kill-after", "200ms", "--", "sleep", "30"},
           {"--", "/nonexistent/command"},
       }) {
    DYNAMIC_SECTION(join(args)) {
      auto r = run_reported(ws, concat(rung_options(rung), args));
      INFO(r.run.err);
      REQUIRE(r.report.is_object());
      for (const auto& e : report_schema_errors(r.report)) FAIL_CHECK(e);
      CHECK(r.report.find("schema_version")->as_int() == 1);
    }
  }
}

void seccomp_named(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  auto r = run_reported(ws, concat(rung_options(rung), {"--verdict", "--", "sh", "-c", p + " sys keyctl; exit 1"}));
  CHECK(r.run.exit_code == 1);
  CHECK(r.run.err == "nsrun: seccomp refused keyctl\n");
  auto found = refusals_of(r.report, "seccomp");
  REQUIRE(found.size() == 1);
  CHECK(str(found[0]->find("what")) == "keyctl");
  // (That a success says nothing: limits_test's [verdict].)
}

void timeout_said(Rung rung) {
  TempDir ws;
  // No --verdict: the timeout is still one line on stderr.
  auto r = run_reported(ws, concat(rung_options(rung), {"--timeout", "300ms", "--kill-after", "300ms", "--", "sh", "-c",
                                                        "trap '' TERM; sleep 30"}));
  CHECK(r.run.exit_code == 124);
  CHECK(r.run.err == "nsrun: timed out after 300ms: SIGTERM, then SIGKILL 300ms later\n");
  auto found = refusals_of(r.report, "timeout");
  REQUIRE(found.size() == 1);
  CHECK(str(found[0]->find("allow")) == "--timeout");
  RunResult term = nsrun_test::nsrun(concat(rung_options(rung), {"--timeout", "300ms", "--", "sleep", "30"}), at(ws));
  CHECK(term.exit_code == 124);
  CHECK(term.err == "nsrun: timed out after 300ms: SIGTERM ended it\n");
}

}  // namespace

#define BOTH_RUNGS(title, tags, fn) NSRUN_BOTH_RUNGS("[refusals]", title, tags, fn)

BOTH_RUNGS("every report conforms to docs/report.schema.json", "[schema]", schema_holds)
BOTH_RUNGS("a refused system call is named in the verdict and the report", "[verdict]", seccomp_named)
BOTH_RUNGS("a timeout prints one line, even without --verdict", "[timeout]", timeout_said)

TEST_CASE("a write to a protected path is named as protected, not as outside the workspace", "[refusals][protect]") {
  require_userns();
  TempDir ws;
  make_dir(ws / ".git");
  write_file(ws / ".git/config", "[core]\n");
  SECTION("with --watch-writes: observed and named") {
    auto r = run_reported(ws, {"--verdict", "--watch-writes", "--", "sh", "-c", "echo x >> .git/config"});
    CHECK(r.run.exit_code != 0);
    CHECK_THAT(r.run.err, ContainsSubstring("\nnsrun: write to protected path " + ws / ".git/config"));
    CHECK_THAT(r.run.err, !ContainsSubstring("outside the workspace"));
    auto found = refusals_of(r.report, "protected-path");
    REQUIRE(found.size() == 1);
    CHECK(str(found[0]->find("allow")) == "--unprotect .git/config");
  }
  SECTION("without it: the verdict says what it could not see") {
    auto r = run_reported(ws, {"--verdict", "--", "sh", "-c", "echo x >> .git/config"});
    CHECK(r.run.exit_code != 0);
    CHECK_THAT(r.run.err, ContainsSubstring("no refusal seen; not seen in this run: writes to read-only or protected "
                                            "paths (--watch-writes shows them)"));
    CHECK(refusals_of(r.report, "protected-path").empty());
  }
  CHECK(read_file(ws / ".git/config") == "[core]\n");
}

TEST_CASE("an egress denial names the host and the option", "[refusals][egress]") {
  require_userns();
  egress::have_tools();
  egress::World w;
  const std::string report = w.dir / "r.json";
  RunResult r = w.run(w.nsrun_cmd("--verdict --report " + shell_quote(report),
                                  "/usr/bin/curl -s -S --max-time 20 https://registry.test/"));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 56);
  CHECK_THAT(r.err, ContainsSubstring("nsrun: egress denied: registry.test:443 is not in --allow-host\n"));
  auto doc = nsrun::json::parse(read_file(report));
  REQUIRE(doc);
  auto found = refusals_of(*doc, "egress");
  REQUIRE(found.size() == 1);
  CHECK(str(found[0]->find("what")) == "registry.test:443");
  CHECK(str(found[0]->find("allow")) == "--allow-host registry.test");
}

TEST_CASE("--network none: said as unseen, and package managers told to stay offline", "[refusals][network]") {
  require_userns();
  TempDir ws;
  auto r = run_reported(ws, {"--verdict", "--network", "none", "--", "sh", "-c",
                             "echo $npm_config_offline $PIP_NO_INDEX $CARGO_NET_OFFLINE $GOPROXY $YARN_ENABLE_OFFLINE_MODE;"
                             " exit 6"});
  CHECK(r.run.exit_code == 6);
  CHECK(r.run.out == "true 1 true off 1\n");
  CHECK_THAT(r.run.err, ContainsSubstring("the network is off (--network none)"));
  bool listed = false;
  for (const auto& u : r.report.find("unobserved")->as_array()) listed |= str(u.find("kind")) == "network-none";
  CHECK(listed);
  RunResult own = nsrun_test::nsrun({"--network", "none", "--setenv", "GOPROXY", "direct", "--", "sh", "-c", "echo $GOPROXY"}, at(ws));
  CHECK(own.out == "direct\n");
  RunResult off = nsrun_test::nsrun({"--network", "none", "--no-offline-env", "--", "sh", "-c", "echo ${PIP_NO_INDEX:-unset}"}, at(ws));
  CHECK(off.out == "unset\n");
  RunResult shared = nsrun_test::nsrun({"--", "sh", "-c", "echo ${PIP_NO_INDEX:-unset}"}, at(ws));
  CHECK(shared.out == "unset\n");
  RunResult explain = nsrun_test::nsrun({"explain", "--network", "none", "--", "true"}, at(ws));
  CHECK_THAT(explain.out, ContainsSubstring("offline switches (--network none; --no-offline-env leaves them): "
                                            "npm_config_offline=true"));
}

TEST_CASE("the pids limit reached is named, or said to be unseen", "[refusals][pids]") {
  require_userns();
  TempDir ws;
  // The probe's own ceiling (60) keeps the bomb small if the limit failed.
  auto r = run_reported(ws, {"--verdict", "--limit-pids", "8", "--timeout", "20", "--", probe_path(), "fork-bomb",
                             "60"});
  INFO(r.run.out << r.run.err);
  if (r.run.exit_code == 125) {
    // Root without a cgroup: refused before anything ran (limits_test).
    CHECK(kernel_root());
    return;
  }
  const std::string how = str(r.report.find("limits")->find("enforcement")->find("pids"));
  if (how == "cgroup") {
    CHECK_THAT(r.run.err, StartsWith("nsrun: the pids limit (8) refused"));
    auto found = refusals_of(r.report, "limit");
    REQUIRE(found.size() == 1);
    CHECK(str(found[0]->find("what")) == "pids");
  } else {
    CHECK(how == "rlimit");
    CHECK_THAT(r.run.err, ContainsSubstring("forks refused by RLIMIT_NPROC"));
  }
}

TEST_CASE("--limit-memory without a cgroup: strict refuses RLIMIT_AS, best-effort says it", "[refusals][memory]") {
  require_userns();
  TempDir ws;
  auto strict = run_reported(ws, {"--limit-memory", "512M", "--", "true"});
  if (str(strict.report.find("limits") ? strict.report.find("limits")->find("enforcement")->find("memory") : nullptr) ==
      "cgroup") {
    SUCCEED("a cgroup keeps the memory limit here (root on cgroup v1)");
    return;
  }
  CHECK(strict.run.exit_code == 125);
  CHECK(count_lines(strict.run.err) == 1);
  CHECK_THAT(strict.run.err, ContainsSubstring("RLIMIT_AS"));
  RunResult best = nsrun_test::nsrun({"--limits", "best-effort", "--verdict", "--limit-memory", "512M", "--", "sh", "-c", "exit 3"},
                         at(ws));
  CHECK(best.exit_code == 3);
  CHECK_THAT(best.err, StartsWith("nsrun: --limit-memory: RLIMIT_AS per process instead (best-effort"));
  CHECK_THAT(best.err, ContainsSubstring("allocations past --limit-memory"));
}

TEST_CASE("a current directory not visible inside is refused, not replaced by /", "[refusals][chdir]") {
  require_userns();
  TempDir ws;
  // A directory in the host's /tmp, outside the workspace: the private
  // /tmp hides it.
  const std::string elsewhere = "/tmp/" + unique_token("nsrun-cwd");
  make_dir(elsewhere, 0755);
  const std::string marker = ws / "ran";
  RunOptions o;
  o.cwd = elsewhere;
  RunResult r = nsrun_test::nsrun({"--workspace", ws.path(), "--", "sh", "-c", "pwd > " + shell_quote(marker)}, o);
  CHECK(r.exit_code == 125);
  CHECK(count_lines(r.err) == 1);
  CHECK_THAT(r.err, ContainsSubstring("the current directory is not visible inside the sandbox"));
  CHECK_THAT(r.err, ContainsSubstring("--chdir DIR"));
  CHECK_FALSE(file_exists(marker));
  RunResult given = nsrun_test::nsrun({"--workspace", ws.path(), "--chdir", ws.path(), "--", "sh", "-c", "pwd > " + shell_quote(marker)}, o);
  CHECK(given.exit_code == 0);
  CHECK(read_file(marker) == ws.path() + "\n");
  ::rmdir(elsewhere.c_str());
}

TEST_CASE("a script in the host's /tmp hidden by the private one is named, with --tmp to fix it", "[refusals][tmp]") {
  require_userns();
  TempDir ws;
  const std::string dir = "/tmp/" + unique_token("nsrun-tmp");
  make_dir(dir, 0755);
  const std::string script = dir + "/x.sh";
  write_file(script, "echo from-host-tmp\n", 0644);
  RunResult hidden = nsrun_test::nsrun({"--", "bash", script}, at(ws));
  CHECK(hidden.exit_code == 127);
  CHECK_THAT(hidden.err, ContainsSubstring("nsrun: " + script + " is in the host's /tmp, which the sandbox's private /tmp "
                                           "hides (--tmp host"));
  RunResult host = nsrun_test::nsrun({"--tmp", "host", "--", "bash", script}, at(ws));
  CHECK(host.out == "from-host-tmp\n");
  // (--chdir /: the workspace itself may be under the host's /tmp, which
  // DIR now covers.)
  TempDir scratch("scratch");
  RunResult own = nsrun_test::nsrun({"--tmp", scratch.path(), "--chdir", "/", "--", "sh", "-c", "echo in > /tmp/f"}, at(ws));
  CHECK(own.exit_code == 0);
  CHECK(read_file(scratch / "f") == "in\n");
  RunResult ro = nsrun_test::nsrun({"--mode", "read-only", "--tmp", "host", "--", "true"}, at(ws));
  CHECK(ro.exit_code == 125);
  ::unlink(script.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("--allow-nested-userns: a user namespace inside works, as root too", "[refusals][nested]") {
  require_userns();
  TempDir ws;
  SECTION("unshare -Ur") {
    RunResult r = nsrun_test::nsrun({"--allow-nested-userns", "--", "unshare", "-Ur", "id", "-u"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "0\n");
  }
  // nsrun and bwrap inside nsrun: tests/integration/nesting_test.cpp.
  SECTION("without the option, still refused") {
    RunResult r = nsrun_test::nsrun({"--", "unshare", "-Ur", "true"}, at(ws));
    CHECK(r.exit_code != 0);
    RunResult none = nsrun_test::nsrun({"--seccomp", "none", "--", "unshare", "-Ur", "true"}, at(ws));
    if (kernel_root()) CHECK(none.exit_code != 0);  // no CAP_SETFCAP without the option
  }
}

namespace {

// The paths of one list of a changes / commit JSON.
std::vector<std::string> paths_in(const nsrun::json::Value& doc, std::string_view key) {
  std::vector<std::string> out;
  const nsrun::json::Value* list = doc.find(key);
  if (list == nullptr || !list->is_array()) return {"<no " + std::string(key) + ">"};
  for (const auto& c : list->as_array()) out.push_back(str(c.find("path")));
  return out;
}

}  // namespace

TEST_CASE("the review loop for machines: changes --json, commit --json and its exit codes", "[refusals][review][cow]") {
  require_userns();
  using namespace nsrun_test::cow;
  TempDir ws("review-ws"), state("review-state"), home("review-home");
  write_file(ws / "shared.txt", "host v1\n");
  const auto env = layer_env(state, home.path());
  wait_for_next_tick(ws / "shared.txt");
  const std::string id = cow_run(ws, env, "echo fine > ok.txt && echo evil > .envrc && echo sandbox > shared.txt");
  write_file(ws / "shared.txt", "host v2\n");

  RunResult changes = nsrun_test::nsrun({"changes", id, "--json"}, in(ws, env));
  INFO(changes.out << changes.err);
  CHECK(changes.exit_code == 0);
  auto listed = nsrun::json::parse(changes.out);
  REQUIRE(listed);
  CHECK(str(listed->find("run_id")) == id);
  CHECK(paths_in(*listed, "changes") == std::vector<std::string>{".envrc", "ok.txt", "shared.txt"});

  // Protected and a conflict at once: the protected code, the higher one.
  RunResult commit = nsrun_test::nsrun({"commit", id, "--json"}, in(ws, env));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 4);
  auto done = nsrun::json::parse(commit.out);
  REQUIRE(done);
  CHECK(paths_in(*done, "applied") == std::vector<std::string>{"ok.txt"});
  CHECK(paths_in(*done, "protected") == std::vector<std::string>{".envrc"});
  CHECK(paths_in(*done, "conflicts") == std::vector<std::string>{"shared.txt"});
  CHECK(paths_in(*done, "failed").empty());
  CHECK(read_file(ws / "ok.txt") == "fine\n");
  CHECK_FALSE(file_exists(ws / ".envrc"));

  // Only the conflict left in what is asked for: its own code.
  RunResult conflict = nsrun_test::nsrun({"commit", id, "shared.txt"}, in(ws, env));
  CHECK(conflict.exit_code == 3);
  CHECK(read_file(ws / "shared.txt") == "host v2\n");
  RunResult forced = nsrun_test::nsrun({"commit", id, "shared.txt", "--force", "--json"}, in(ws, env));
  CHECK(forced.exit_code == 0);
  CHECK(read_file(ws / "shared.txt") == "sandbox\n");
  CHECK(nsrun_test::nsrun({"changes", id, "--json", "--patch"}, in(ws, env)).exit_code == 125);
  CHECK(nsrun_test::nsrun({"discard", id}, in(ws, env)).exit_code == 0);
}
