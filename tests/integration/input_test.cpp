// Bad input attacked from outside: the command plants a symlink, a hard link
// or a FIFO where `--report` will be written; a policy smuggles a NUL into a
// path; inputs that never end; paths and command names that would break the
// one-line message. Every case asserts an effect on the host (a file
// unchanged, a marker absent, one line on stderr), on both rungs where a rung
// is involved, and runs as root and as the unprivileged user
// (tools/run-tests.sh runs the suite twice).
#include "harness.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

bool is_regular(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// nsrun RUNG --report REPORT -- /bin/sh -c SCRIPT, from `ws`.
RunResult run_with_report(Rung rung, const TempDir& ws, const std::string& report, const std::string& script) {
  return nsrun(concat(rung_options(rung), {"--report", report, "--", "/bin/sh", "-c", script}), at(ws));
}

// What every planted-name case checks afterwards: the target is unchanged
// and the report is a regular file at the name the user gave.
void check_report_in_place(const RunResult& r, const std::string& report, const std::string& target,
                           std::string_view before) {
  INFO("exit " << r.exit_code << " stdout: " << r.out << " stderr: " << r.err);
  CHECK(read_file(target) == before);
  REQUIRE(is_regular(report));
  CHECK(read_file(report).starts_with(R"({"schema_version":1,"rung":)"));
}

// `nsrun BEFORE touch WS/ran AFTER` through sh, under 256 MiB of address
// space and a 20 s timeout: an unbounded read used to grow until
// std::bad_alloc; the caps (16 MiB) are far below this.
RunResult run_bounded(const TempDir& ws, std::string_view before, std::string_view after = "") {
  RunOptions opts = at(ws);
  opts.timeout = 20s;
  return run({"/bin/sh", "-c",
              fmt::format("ulimit -v 262144; exec {} {} touch {}{}", shell_quote(nsrun_path()), before,
                          shell_quote(ws / "ran"), after)},
             opts);
}

#define RUNG_CASE(fn, title, tags) NSRUN_BOTH_RUNGS("[input]", title, tags, fn)

}  // namespace

// ---------------------------------------------------------------- --report

// The reproducer of the issue: `ln -sf /etc/important r.json` in the
// command used to make nsrun overwrite /etc/important with the report. The
// target here is a file the test owns outside the workspace (as root, in a
// root-owned directory).
void planted_symlink(Rung rung) {
  TempDir ws("ws");
  TempDir victim("victim");
  const std::string target = victim / "important";
  write_file(target, "precious\n");
  const std::string report = ws / "r.json";
  RunResult r = run_with_report(rung, ws, report, fmt::format("ln -sf {} {}", shell_quote(target), shell_quote(report)));
  CHECK(r.exit_code == 0);
  check_report_in_place(r, report, target, "precious\n");
}
RUNG_CASE(planted_symlink, "a symlink the command plants at --report does not redirect the report", "[report]")

// A hard link to a file outside the workspace cannot be made from inside
// (EXDEV on both rungs), so the command links a file the test owns inside
// the workspace, and tries the outside one too.
void planted_hard_link(Rung rung) {
  TempDir ws("ws");
  TempDir victim("victim");
  const std::string outside = victim / "important";
  const std::string inside = ws / "mine";
  write_file(outside, "outside\n");
  write_file(inside, "inside\n");
  const std::string report = ws / "r.json";
  RunResult r = run_with_report(rung, ws, report,
                                fmt::format("rm -f {0}; ln {1} {0} 2>/dev/null || ln {2} {0}", shell_quote(report),
                                            shell_quote(outside), shell_quote(inside)));
  CHECK(r.exit_code == 0);
  check_report_in_place(r, report, inside, "inside\n");
  CHECK(read_file(outside) == "outside\n");
}
RUNG_CASE(planted_hard_link, "a hard link the command plants at --report is replaced, not written through",
          "[report]")

// A FIFO at the name: opening it for writing would block nsrun forever.
void planted_fifo(Rung rung) {
  TempDir ws("ws");
  const std::string report = ws / "r.json";
  RunOptions opts = at(ws);
  opts.timeout = 20s;
  RunResult r = nsrun(concat(rung_options(rung), {"--report", report, "--", "/bin/sh", "-c",
                                                  fmt::format("rm -f {0} && mkfifo {0}", shell_quote(report))}),
                      opts);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(is_regular(report));
  CHECK(read_file(report).starts_with(R"({"schema_version":1,"rung":)"));
}
RUNG_CASE(planted_fifo, "a FIFO the command plants at --report does not hang nsrun", "[report]")

// Planted before the run (by an earlier command, say): refused up front,
// exit 125, one line, the command not run, the target unchanged.
void planted_before(Rung rung) {
  TempDir ws("ws");
  TempDir victim("victim");
  const std::string target = victim / "important";
  write_file(target, "precious\n");
  const std::string marker = ws / "ran";
  struct Plant {
    std::string what;
    std::string command;
  };
  for (const Plant& plant : std::vector<Plant>{
           {"symlink", "ln -s " + shell_quote(target) + " "},
           {"dangling symlink", "ln -s " + shell_quote(victim / "created") + " "},
           {"hard link", "ln " + shell_quote(target) + " "},
           {"fifo", "mkfifo "},
           {"directory", "mkdir "},
       }) {
    const std::string report = ws / unique_token("r");
    REQUIRE(run({"/bin/sh", "-c", plant.command + shell_quote(report)}).exit_code == 0);
    RunOptions opts = at(ws);
    opts.timeout = 20s;
    RunResult r = nsrun(concat(rung_options(rung), {"--report", report, "--", "touch", marker}), opts);
    INFO(plant.what << ": " << r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.starts_with("nsrun: --report " + report + ": "));
    CHECK_FALSE(file_exists(marker));
    CHECK(read_file(target) == "precious\n");
    CHECK_FALSE(file_exists(victim / "created"));
  }
}
RUNG_CASE(planted_before, "a symlink, hard link, FIFO or directory at --report before the run is refused",
          "[report]")

// An earlier command plants a directory symlink in its workspace; a later
// launch names a report below it. The report must not land outside.
void planted_directory_symlink(Rung rung) {
  TempDir ws("ws");
  TempDir victim("victim");
  const std::string target = victim / "important";
  write_file(target, "precious\n");
  RunResult first = run_with_report(rung, ws, ws / "r1.json",
                                    fmt::format("ln -s {} {}", shell_quote(victim.path()), shell_quote(ws / "out")));
  REQUIRE(first.exit_code == 0);
  RunResult second = nsrun(concat(rung_options(rung), {"--report", ws / "out/important", "--", "touch", ws / "ran"}),
                           at(ws));
  INFO(second.err);
  CHECK(second.exit_code == 125);
  CHECK(count_lines(second.err) == 1);
  CHECK(second.err.find("symbolic link") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "ran"));
  CHECK(read_file(target) == "precious\n");
}
RUNG_CASE(planted_directory_symlink, "a directory symlink an earlier command planted does not steer --report",
          "[report]")

TEST_CASE("--report into a missing directory is refused before anything runs", "[input][report]") {
  TempDir ws("ws");
  RunResult r = nsrun({"--report", ws / "no/such/r.json", "--", "touch", ws / "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(count_lines(r.err) == 1);
  CHECK_FALSE(file_exists(ws / "ran"));
}

// ---------------------------------------------------------------- NUL

// The reproducer: {"writable":["/\u0000/var/tmp/x"]} became a writable `/`.
void nul_in_policy(Rung rung) {
  TempDir ws("ws");
  TempDir outside("out");
  const std::string marker = ws / "ran";
  const std::string pwned = outside / "pwned";
  const std::vector<std::string> policies{
      R"({"writable":["/\u0000)" + outside.path() + R"("]})",
      R"({"workspace":"/\u0000)" + ws.path() + R"("})",
      R"({"mounts":[{"kind":"bind","source":"/\u0000)" + outside.path() + R"(","dest":")" + outside.path() + R"("}]})",
      R"({"mounts":[{"kind":"bind","source":")" + outside.path() + R"(","dest":"/\u0000"}]})",
      R"({"env":[{"op":"set","name":"A","value":"x\u0000y"}]})",
      R"({"argv":["touch",")" + marker + R"(\u0000"]})",
  };
  for (const auto& text : policies) {
    const std::string file = ws / unique_token("p.json");
    write_file(file, text);
    RunResult r = nsrun(concat(rung_options(rung), {"--policy", file, "--", "/bin/sh", "-c",
                                                    fmt::format("touch {} {}", shell_quote(marker), shell_quote(pwned))}),
                        at(ws));
    INFO(text << ": " << r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("NUL") != std::string::npos);
    CHECK_FALSE(file_exists(marker));
    CHECK_FALSE(file_exists(pwned));
  }
}
RUNG_CASE(nul_in_policy, "a NUL in a policy path, env entry or argument is refused; nothing runs", "[nul]")

// ---------------------------------------------------------------- caps

TEST_CASE("an endless policy file is refused in one line, in bounded time and memory", "[input][cap]") {
  TempDir ws("ws");
  RunResult r = run_bounded(ws, "--policy /dev/zero --");
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err == "nsrun: --policy: /dev/zero: larger than 16777216 bytes\n");
  CHECK_FALSE(file_exists(ws / "ran"));
}

TEST_CASE("bwrap --args from an endless fd: exit 1, one line, in bounded time and memory", "[input][cap][bwrap]") {
  TempDir ws("ws");
  RunResult r = run_bounded(ws, "bwrap --args 9", " 9</dev/zero");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "bwrap: Can't read --args data: File too large\n");
  CHECK_FALSE(file_exists(ws / "ran"));
}

TEST_CASE("bwrap --file and --seccomp from an endless fd: exit 1, one line", "[input][cap][bwrap]") {
  TempDir ws("ws");
  for (const std::string option : {"--file 9 /x", "--seccomp 9"}) {
    RunResult r = run_bounded(ws, "bwrap --ro-bind / / " + option, " 9</dev/zero");
    INFO(option << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("File too large") != std::string::npos);
    CHECK_FALSE(file_exists(ws / "ran"));
  }
}

// ---------------------------------------------------------------- messages

TEST_CASE("a path with a newline gives one line, the newline escaped", "[input][message]") {
  TempDir ws("ws");
  const std::string path = ws.path() + "/no\nsuch: forged line";
  RunResult r = nsrun({"--ro", path, "--", "touch", ws / "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err == "nsrun: --ro " + ws.path() + "/no\\nsuch: forged line: No such file or directory\n");
  CHECK_FALSE(file_exists(ws / "ran"));
}

void long_command_name(Rung rung) {
  TempDir ws("ws");
  const std::string name(100 * 1024, 'a');
  RunResult r = nsrun(concat(rung_options(rung), {"--", name}), at(ws));
  INFO(r.err.substr(0, 300));
  CHECK((r.exit_code == 126 || r.exit_code == 127));
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.starts_with("nsrun: exec aaaa"));
  CHECK(r.err.find("\xe2\x80\xa6") != std::string::npos);  // the ellipsis of the cut
  CHECK(r.err.ends_with(": File name too long\n"));
  CHECK(r.err.find("channel") == std::string::npos);
}
RUNG_CASE(long_command_name, "a 100 KiB command name gives a one-line error naming the command", "[message]")

TEST_CASE("a 1 MiB command name through bwrap --args gives one line, not a silent exit", "[input][message][bwrap]") {
  require_userns();
  TempDir ws("ws");
  const std::string args = ws / "args";
  write_file(args, std::string(1 << 20, 'a'));
  RunResult r = run({"/bin/sh", "-c",
                     fmt::format("exec {} bwrap --ro-bind / / --args 9 9<{}", shell_quote(nsrun_path()),
                                 shell_quote(args))},
                    at(ws));
  INFO(r.err.substr(0, 300));
  CHECK(r.exit_code == 1);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.starts_with("bwrap: execvp aaaa"));
  CHECK(r.err.ends_with(": File name too long\n"));
}

TEST_CASE("a deleted working directory is named, not reported as an empty --workspace", "[input][message][cwd]") {
  TempDir ws("ws");
  RunResult r = run({"/bin/sh", "-c",
                     fmt::format("mkdir gone && cd gone && rmdir ../gone && exec {} -- touch {}",
                                 shell_quote(nsrun_path()), shell_quote(ws / "ran"))},
                    at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err ==
        "nsrun: current directory: no longer exists (it is the default workspace); cd to an existing directory or "
        "give --workspace DIR\n");
  CHECK_FALSE(file_exists(ws / "ran"));
}
