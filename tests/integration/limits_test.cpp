// Limits and verdicts, as the host sees them: a fork bomb and a
// memory hog stop where they were told to, a command that ignores SIGTERM
// and its daemonised children end at the timeout, a full tmpfs is the
// command's problem only, and the report names each refused system call
// while the command still got EPERM. Every bomb here has its own ceiling
// (fork-bomb MAX) and a timeout, so a limit that failed could not hurt the
// machine. Both rungs where they apply; the suite runs as root and as an
// unprivileged user (tools/run-tests.sh), and what an rlimit can keep
// differs between the two: the tests assert what the report then claims.
#include "harness.hpp"
#include "reported.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <map>

#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;

namespace {

int64_t num(const nsrun::json::Value* v) { return v != nullptr && v->is_int() ? v->as_int() : -1; }

const nsrun::json::Value* at_path(const nsrun::json::Value& root, std::initializer_list<std::string_view> keys) {
  const nsrun::json::Value* v = &root;
  for (auto k : keys) {
    if (v == nullptr || !v->is_object()) return nullptr;
    v = v->find(k);
  }
  return v;
}

bool kernel_root() { return ::geteuid() == 0; }

}  // namespace

TEST_CASE("limit values that are not values are refused before anything runs", "[limits][input]") {
  TempDir ws;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--limit-memory", "0"}, {"--limit-memory", "12Q"}, {"--limit-pids", "-3"}, {"--limit-cpu", "x"},
           {"--timeout", "soon"}, {"--timeout", "0"}, {"--kill-after", "2y"}, {"--rlimit", "nofile"},
           {"--rlimit", "bogus=1"}, {"--rlimit", "nofile=10:5"}, {"--tmpfs-size", "-1"}, {"--limits", "maybe"}}) {
    DYNAMIC_SECTION(join(args)) {
      TempDir marker_dir;
      const std::string marker = marker_dir / "ran";
      RunResult r = nsrun_test::nsrun(concat(args, {"--", "sh", "-c", "echo > " + shell_quote(marker)}), at(ws));
      CHECK(r.exit_code == 125);
      CHECK(r.err.starts_with("nsrun: "));
      CHECK(count_lines(r.err) == 1);
      CHECK_FALSE(file_exists(marker));
    }
  }
}

namespace {

void fork_bomb_stops(Rung rung) {
  TempDir ws;
  auto r = run_reported(ws, concat(rung_options(rung), {"--limit-pids", "8", "--timeout", "20", "--", probe_path(),
                                                        "fork-bomb", "200"}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  if (r.run.exit_code == 125) {
    // Nothing here keeps the limit for the whole sandbox (no cgroup; uid 0
    // is exempt from RLIMIT_NPROC; without a user namespace it counts the
    // whole uid): refused, never run with a limit that is not there. Only
    // where no mechanism can exist: an unprivileged user on the namespace
    // rung always has RLIMIT_NPROC.
    CHECK_FALSE((rung == Rung::namespaces && !kernel_root()));
    CHECK(r.run.err.find("pids") != std::string::npos);
    CHECK(r.run.out.empty());
    return;
  }
  // The probe is one of the 8: it forks 7 and the 8th fork fails.
  CHECK(r.run.out == "forked 7\nerror EAGAIN\n");
  const std::string how = str(at_path(r.report, {"limits", "enforcement", "pids"}));
  // RLIMIT_NPROC does not bind uid 0: for root only a cgroup is true.
  CHECK(how == (kernel_root() ? "cgroup" : "rlimit"));
  // The host is fine: this process can still fork.
  RunResult after = run({"true"});
  CHECK(after.exit_code == 0);
}

void fork_bomb_best_effort(Rung rung) {
  TempDir ws;
  auto r = run_reported(ws, concat(rung_options(rung), {"--limit-pids", "8", "--limits", "best-effort", "--timeout",
                                                        "20", "--", probe_path(), "fork-bomb", "20"}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  // Run, bounded by the bomb's own ceiling; the report claims a mechanism
  // only where the bomb did stop at the limit.
  const std::string how = str(at_path(r.report, {"limits", "enforcement", "pids"}));
  if (how == "none") CHECK(r.run.out == "forked 20\nok\n");
  else CHECK(r.run.out == "forked 7\nerror EAGAIN\n");
}

void memory_hog(Rung rung) {
  TempDir ws;
  auto r = run_reported(ws, concat(rung_options(rung), {"--limit-memory", "64M", "--timeout", "20", "--", probe_path(),
                                                        "hog", "512"}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  const std::string how = str(at_path(r.report, {"limits", "enforcement", "memory"}));
  if (how == "cgroup") {
    // The whole sandbox's memory: the kernel's OOM killer ends the hog.
    CHECK(r.run.exit_code == 137);
    CHECK(str(at_path(r.report, {"ended", "how"})) == "oom");
    CHECK(str(at_path(r.report, {"ended", "limit"})) == "memory");
    CHECK(r.run.out.find("ok") == std::string::npos);
  } else {
    // No cgroup: RLIMIT_AS is not the sandbox's memory, so strict refuses
    // before anything runs, naming it.
    CHECK(r.run.exit_code == 125);
    CHECK(r.run.err.find("RLIMIT_AS") != std::string::npos);
    CHECK(r.run.out.empty());
    // best-effort: RLIMIT_AS per process, said on stderr; the hog's own
    // mapping fails well before 512 MiB and the command decides what to do
    // with ENOMEM.
    auto b = run_reported(ws, concat(rung_options(rung), {"--limits", "best-effort", "--limit-memory", "64M", "--timeout",
                                                          "20", "--", probe_path(), "hog", "512"}));
    INFO("stdout: " << b.run.out << "\nstderr: " << b.run.err);
    CHECK(str(at_path(b.report, {"limits", "enforcement", "memory"})) == "rlimit");
    CHECK(b.run.err.starts_with("nsrun: --limit-memory: RLIMIT_AS per process instead (best-effort"));
    CHECK(b.run.exit_code == 1);
    CHECK(b.run.out.find("error ENOMEM") != std::string::npos);
    CHECK(str(at_path(b.report, {"ended", "how"})) == "exit");
  }
}

void timeout_ends_everything(Rung rung) {
  TempDir ws;
  const std::string token = unique_token("limits-timeout");
  // The command ignores SIGTERM and leaves a daemon (its own session) and a
  // worker that would live forever.
  const std::string script = fmt::format("trap '' TERM; {} daemonise {} >/dev/null; exec {} sleep-forever {}",
                                         shell_quote(probe_path()), token, shell_quote(probe_path()), token);
  const auto started = std::chrono::steady_clock::now();
  auto r = run_reported(ws, concat(rung_options(rung), {"--timeout", "1", "--kill-after", "500ms", "--", "sh", "-c",
                                                        script}));
  const auto took = std::chrono::steady_clock::now() - started;
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  CHECK(r.run.exit_code == 124);
  CHECK(took < 15s);
  CHECK(str(at_path(r.report, {"ended", "how"})) == "timeout");
  CHECK(num(at_path(r.report, {"ended", "code"})) == 124);
  CHECK(str(at_path(r.report, {"limits", "enforcement", "timeout"})) == "timer");
  CHECK(eventually([&] { return processes_with_marker(token).empty(); }));
}

void tmpfs_full(Rung rung) {
  TempDir ws;
  auto r = run_reported(ws, concat(rung_options(rung), {"--tmpfs-size", "1M", "--", "sh", "-c",
                                                        fmt::format("dd if=/dev/zero of=/tmp/big bs=64k count=32 2>&1 "
                                                                    "| grep -o 'No space left on device'; {} write "
                                                                    "ok.txt fine",
                                                                    shell_quote(probe_path()))}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  if (rung == Rung::landlock) {
    // Its /tmp is a host directory: no size to set, so refused.
    CHECK(r.run.exit_code == 125);
    CHECK(r.run.err.find("tmpfs") != std::string::npos);
    return;
  }
  CHECK(r.run.out == "No space left on device\nok\n");
  // The workspace, on the host's file system, took its write.
  CHECK(read_file(ws / "ok.txt") == "fine");
  CHECK(str(at_path(r.report, {"limits", "enforcement", "tmpfs"})) == "mount");
}

void denials_listed(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  const std::string script = fmt::format(
      "{0} sys keyctl; {0} sys keyctl; {0} sys io_uring_setup; {0} sys unshare-user; {0} tiocsti; exit 3", p);
  auto r = run_reported(ws, concat(rung_options(rung), {"--", "sh", "-c", script}));
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  // Behaviour unchanged: each attempt still got EPERM.
  CHECK(r.run.out == "error EPERM\nerror EPERM\nerror EPERM\nerror EPERM\nerror EPERM\n");
  CHECK(r.run.exit_code == 3);
  const auto* denials = r.report.find("denials");
  REQUIRE(denials != nullptr);
  REQUIRE(denials->is_array());
  std::map<std::string, int64_t> seen;
  for (const auto& d : denials->as_array()) seen[str(d.find("syscall"))] = num(d.find("count"));
  CHECK(seen == std::map<std::string, int64_t>{{"keyctl", 2}, {"io_uring_setup", 1}, {"unshare", 1}, {"ioctl", 1}});
  CHECK(str(at_path(r.report, {"ended", "how"})) == "exit");
}

void verdict_line(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  SECTION("a failure after a refusal") {
    RunResult r = nsrun_test::nsrun(concat(rung_options(rung), {"--verdict", "--", "sh", "-c", p + " sys keyctl; exit 1"}), at(ws));
    CHECK(r.exit_code == 1);
    CHECK(r.err == "nsrun: seccomp refused keyctl\n");
  }
  SECTION("success says nothing") {
    RunResult r = nsrun_test::nsrun(concat(rung_options(rung), {"--verdict", "--", "sh", "-c", p + " sys keyctl; exit 0"}), at(ws));
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
  }
  SECTION("a failure without a refusal seen says what could not be seen") {
    RunResult r = nsrun_test::nsrun(concat(rung_options(rung), {"--verdict", "--", "sh", "-c", "exit 2"}), at(ws));
    CHECK(r.exit_code == 2);
    CHECK(r.err.starts_with("nsrun: exit 2; no refusal seen; not seen in this run: writes to read-only or protected "
                            "paths (--watch-writes shows them)"));
    CHECK(count_lines(r.err) == 1);
  }
}

void ended_by_signal(Rung rung) {
  TempDir ws;
  auto r = run_reported(ws, concat(rung_options(rung), {"--", "sh", "-c", "kill -KILL $$"}));
  CHECK(r.run.exit_code == 137);
  CHECK(str(at_path(r.report, {"ended", "how"})) == "signal");
  CHECK(num(at_path(r.report, {"ended", "signal"})) == 9);
  auto e = run_reported(ws, concat(rung_options(rung), {"--", "sh", "-c", "exit 137"}));
  CHECK(e.run.exit_code == 137);
  CHECK(str(at_path(e.report, {"ended", "how"})) == "exit");
  CHECK(num(at_path(e.report, {"usage", "user_micros"})) >= 0);
}

void rlimits_applied(Rung rung) {
  TempDir ws;
  const std::string p = shell_quote(probe_path());
  RunResult r = nsrun_test::nsrun(concat(rung_options(rung), {"--rlimit", "nofile=64:128", "--", "sh", "-c",
                                                  fmt::format("{0} rlimit nofile; {0} rlimit core", p)}),
                      at(ws));
  INFO(r.err);
  // core=0 is the default.
  CHECK(r.out == "64 128\n0 0\n");
}

}  // namespace

#define BOTH_RUNGS(title, tags, fn) NSRUN_BOTH_RUNGS("[limits]", title, tags, fn)

BOTH_RUNGS("a fork bomb stops at --limit-pids, or nsrun refuses to pretend", "[pids]", fork_bomb_stops)
BOTH_RUNGS("--limits best-effort runs and reports pids as none where nothing keeps it", "[pids]", fork_bomb_best_effort)
BOTH_RUNGS("a memory hog stops at --limit-memory, with the enforcement named", "[memory]", memory_hog)
BOTH_RUNGS("--timeout ends a SIGTERM-ignoring command and its daemons, exit 124", "[timeout]", timeout_ends_everything)
BOTH_RUNGS("a full --tmpfs-size gives ENOSPC to the command only", "[tmpfs]", tmpfs_full)
BOTH_RUNGS("the report lists the refused calls, and the command still got EPERM", "[denials]", denials_listed)
BOTH_RUNGS("--verdict speaks only after a failure, naming what was refused or unseen", "[verdict]", verdict_line)
BOTH_RUNGS("ended tells a death by signal from an exit with the same status", "[verdict]", ended_by_signal)
BOTH_RUNGS("--rlimit and the default core=0 reach the command", "[rlimit]", rlimits_applied)

TEST_CASE("--limits require-cgroup refuses where no cgroup can be made", "[limits][cgroup]") {
  require_userns();
  TempDir ws;
  auto r = run_reported(ws, {"--limits", "require-cgroup", "--limit-pids", "8", "--", probe_path(), "fork-bomb",
                             "20"});
  INFO("stdout: " << r.run.out << "\nstderr: " << r.run.err);
  if (r.run.exit_code == 125) {
    CHECK(r.run.err.find("require-cgroup") != std::string::npos);
    CHECK(r.run.out.empty());
    return;
  }
  // A cgroup was made (root on a cgroup v1 host, or a delegated v2): it
  // kept the limit, and it is gone afterwards.
  CHECK(str(at_path(r.report, {"limits", "enforcement", "pids"})) == "cgroup");
  CHECK(r.run.out == "forked 7\nerror EAGAIN\n");
}
