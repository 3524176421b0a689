// --watch-writes: write attempts outside the writable roots are
// listed in the report and the verdict as observations, while the command
// gets exactly the answers it got without the watch (EROFS from the
// namespace rung's mounts, EACCES from Landlock). The paths nsrun reads are
// racy: a thread rewriting the path while the call waits changes nothing
// the kernel decides. Both rungs; the suite runs as root and as an
// unprivileged user (tools/run-tests.sh).
#include "harness.hpp"
#include "reported.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <map>
#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;

namespace {

// path -> "syscall where count observed" of each listed attempt.
std::map<std::string, std::string> listed(const nsrun::json::Value& report) {
  std::map<std::string, std::string> out;
  const auto* w = report.find("writes_outside");
  if (w == nullptr || !w->is_array()) return out;
  for (const auto& item : w->as_array()) {
    const auto* count = item.find("count");
    const auto* observed = item.find("observed");
    out[str(item.find("path"))] = fmt::format(
        "{} {} {} {}", str(item.find("syscall")), str(item.find("where")),
        count != nullptr && count->is_int() ? count->as_int() : -1,
        observed != nullptr && observed->is_bool() && observed->as_bool() ? "observed" : "not-marked");
  }
  return out;
}

// What the kernel answers a write the rung refuses.
std::string refusal(Rung rung) { return rung == Rung::namespaces ? "error EROFS" : "error EACCES"; }

void outside_listed_inside_not(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  const std::string token = unique_token("ww");
  const std::string etc = "/etc/" + token;
  make_dir(ws / "sub");
  std::string script = fmt::format("{0} write {1} x; {0} write {2}/in.txt x; cd sub && {0} write rel.txt x; exit 0", p,
                                   etc, shell_quote(ws.path()));
  std::vector<std::string> extra;
  if (rung == Rung::namespaces) {
    // A protected sub-path of the workspace, kept read-only by a mount.
    make_dir(ws / ".git");
    make_dir(ws / ".git/hooks");
    script = fmt::format("{0} write {1}/.git/hooks/pre-commit x; ", p, shell_quote(ws.path())) + script;
  } else {
    // Landlock cannot keep a path inside a writable root read-only: the rung
    // refuses protected paths that exist, so none does here.
    extra = {"--protect-defaults", "none"};
  }
  auto r = run_reported(ws, concat(concat(rung_options(rung), extra), {"--watch-writes", "--", "sh", "-c", script}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  REQUIRE(r.run.exit_code == 0);
  // The answers are the rung's own, unchanged by the watch.
  const std::string expected = (rung == Rung::namespaces ? "error EROFS\n" : "") + refusal(rung) + "\nok\nok\n";
  CHECK(r.run.out == expected);
  CHECK(!file_exists(etc));
  CHECK(read_file(ws / "in.txt") == "x");
  CHECK(read_file(ws / "sub/rel.txt") == "x");
  CHECK(!file_exists(ws / ".git/hooks/pre-commit"));
  std::map<std::string, std::string> want{{etc, "openat outside 1 observed"}};
  if (rung == Rung::namespaces) want[ws / ".git/hooks/pre-commit"] = "openat protected 1 observed";
  CHECK(listed(r.report) == want);
}

void relative_paths_resolve(Rung rung) {
  TempDir base("ww-base");
  const std::string ws = base / "ws";
  make_dir(ws);
  make_dir(ws + "/sub");
  make_dir(base / "xx");
  const std::string p = shell_quote(probe_path());
  const std::string token = unique_token("rel");
  // Through a chdir out of the workspace, through a dirfd, and through ".."
  // from a directory inside the workspace to one beside it.
  const std::string script = fmt::format(
      "cd /etc && {0} write {1}-cwd x; {0} write-at /etc {1}-dirfd; cd {2}/sub && {0} write ../../xx/{1}-dots x; "
      "{0} write-at {2}/sub ../in-{1}; exit 0",
      p, token, shell_quote(ws));
  TempDir out("report");
  const std::string report = out / "r.json";
  RunOptions opts;
  opts.cwd = ws;
  RunResult run = nsrun_test::nsrun(concat(rung_options(rung), {"--report", report, "--watch-writes", "--", "sh", "-c",
                                                                 script}),
                                    opts);
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  REQUIRE(run.exit_code == 0);
  const std::string no = refusal(rung) + "\n";
  CHECK(run.out == no + no + no + "ok\n");
  CHECK(file_exists(ws + "/in-" + token));
  auto doc = nsrun::json::parse(read_file(report));
  REQUIRE(doc);
  CHECK(listed(*doc) == std::map<std::string, std::string>{
                            {"/etc/" + token + "-cwd", "openat outside 1 observed"},
                            {"/etc/" + token + "-dirfd", "openat outside 1 observed"},
                            {base / "xx/" + token + "-dots", "openat outside 1 observed"},
                        });
}

void racing_thread_changes_nothing(Rung rung) {
  TempDir base("ww-race");
  const std::string ws = base / "ws";
  make_dir(ws);
  make_dir(base / "xx");
  // Same length: the thread flips two bytes back and forth.
  const std::string inside = ws + "/f";
  const std::string outside = base / "xx/f";
  auto r = run_reported(base, concat(rung_options(rung), {"--workspace", ws, "--watch-writes", "--", probe_path(),
                                                          "write-race", inside, outside, "3000"}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  REQUIRE(r.run.exit_code == 0);
  // Every answer is the kernel's: success inside, the rung's refusal
  // outside, ENOENT for a half-rewritten name; nothing else.
  CHECK(r.run.out.find(" other 0") != std::string::npos);
  CHECK(r.run.out.starts_with("ok "));
  CHECK(r.run.out.find("ok 0 ") == std::string::npos);
  // The decision stayed the mounts' or Landlock's: nothing landed outside.
  CHECK(!file_exists(outside));
  CHECK(file_exists(inside));
  // Whatever the watch read is only listed, as an observation.
  for (const auto& [path, what] : listed(r.report)) CHECK(what.ends_with(" observed"));
}

void verdict_names_them(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  const std::string token = unique_token("verdict");
  const std::string etc = "/etc/" + token;
  RunResult r = nsrun_test::nsrun(
      concat(rung_options(rung),
             {"--verdict", "--watch-writes", "--", "sh", "-c", fmt::format("{0} write {1} x; {0} write {1} x; exit 1", p, etc)}),
      at(ws));
  CHECK(r.exit_code == 1);
  CHECK(r.err == fmt::format("nsrun: write to {} \u00d72 outside the writable roots (read-only; --writable DIR makes a "
                             "directory writable)\n",
                             etc));
  CHECK(r.out == refusal(rung) + "\n" + refusal(rung) + "\n");
}

void nothing_without_the_option(Rung rung) {
  TempDir ws;
  const std::string p = probe_path();
  auto filters = [](const Reported& r) {
    const std::string& line = r.run.out;
    return line.find('=') == std::string::npos ? -1 : std::stoi(line.substr(line.find('=') + 1));
  };
  // The kernel allows one listener per task: with the default filter the
  // watch's rules join its notifying variant (no filter more); with
  // --seccomp log (no notifying variant) the watch is a filter of its own.
  for (const std::string mode : {"default", "log"}) {
    auto with = run_reported(ws, concat(rung_options(rung), {"--seccomp", mode, "--watch-writes", "--", p, "status",
                                                             "Seccomp_filters"}));
    auto without = run_reported(ws, concat(rung_options(rung), {"--seccomp", mode, "--", p, "status", "Seccomp_filters"}));
    INFO(mode << " with: " << with.run.out << with.run.err << "\nwithout: " << without.run.out << without.run.err);
    REQUIRE(with.run.exit_code == 0);
    REQUIRE(without.run.exit_code == 0);
    CHECK(filters(with) == filters(without) + (mode == "log" ? 1 : 0));
    CHECK(without.report.find("writes_outside") == nullptr);
    const auto* w = with.report.find("writes_outside");
    REQUIRE(w != nullptr);
    CHECK(w->is_array());
  }
}

// The watch never turns a refusal into a continue: a call both watched and
// refused (chmod, which the Landlock rung refuses everywhere) is refused
// and counted as a denial; the same call elsewhere is only observed.
void refusal_wins(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  write_file(ws / "f", "x");
  auto r = run_reported(ws, concat(rung_options(rung), {"--watch-writes", "--", "sh", "-c",
                                                        fmt::format("{0} meta chmod f; {0} meta chmod /etc/passwd; {0} sys keyctl", p)}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  std::map<std::string, int64_t> denied;
  if (const auto* d = r.report.find("denials"); d != nullptr && d->is_array())
    for (const auto& item : d->as_array()) denied[str(item.find("syscall"))] = item.find("count")->as_int();
  if (rung == Rung::landlock) {
    CHECK(r.run.out == "error EPERM\nerror EPERM\nerror EPERM\n");
    CHECK(denied == std::map<std::string, int64_t>{{"fchmodat", 2}, {"keyctl", 1}});
    CHECK(listed(r.report).empty());
  } else {
    CHECK(r.run.out.starts_with("ok\n"));
    CHECK(r.run.out.ends_with("error EPERM\n"));
    CHECK(denied == std::map<std::string, int64_t>{{"keyctl", 1}});
    CHECK(listed(r.report) == std::map<std::string, std::string>{{"/etc/passwd", "fchmodat outside 1 observed"}});
  }
}

}  // namespace

#define BOTH_RUNGS(title, tags, fn) NSRUN_BOTH_RUNGS("[watch-writes]", title, tags, fn)

BOTH_RUNGS("writes outside the workspace are listed, writes inside are not, answers unchanged", "", outside_listed_inside_not)
BOTH_RUNGS("relative paths resolve through the cwd, a dirfd and ..", "", relative_paths_resolve)
BOTH_RUNGS("a thread rewriting the path changes no decision", "[race]", racing_thread_changes_nothing)
BOTH_RUNGS("--verdict names the writes outside", "[verdict]", verdict_names_them)
BOTH_RUNGS("without --watch-writes nothing is added, with it no listener more", "", nothing_without_the_option)
BOTH_RUNGS("a call both refused and watched is refused and counted as a denial", "", refusal_wins)

TEST_CASE("--watch-writes needs somewhere to show what it saw, and a sandbox", "[watch-writes][input]") {
  TempDir ws;
  RunResult r = nsrun_test::nsrun({"--watch-writes", "--", "true"}, at(ws));
  CHECK(r.exit_code == 125);
  CHECK(r.err.starts_with("nsrun: --watch-writes: nothing would show the observations"));
  RunResult f = nsrun_test::nsrun({"--mode", "full-access", "--verdict", "--watch-writes", "--", "true"}, at(ws));
  CHECK(f.exit_code == 125);
  CHECK(f.err.starts_with("nsrun: --watch-writes: full-access"));
  // Native only: the bwrap dialect keeps bwrap's options and wording.
  RunResult b = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--watch-writes", "true"}, at(ws));
  CHECK(b.exit_code == 1);
  CHECK(b.err == "bwrap: Unknown option --watch-writes\n");
}
