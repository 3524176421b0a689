// nsrun's own work before the clone and after the command. What the launch
// promises at its two ends, looked at on the host: a protected path created
// while the command runs is reported after it (the scan after the run walks
// only the paths not kept), and when nsrun returns, its PID 1 and the command
// are gone, reaped.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Lets the command blocked in `read x < FIFO` go on: opening the write end
// meets its open of the read end (no sleep, no polling).
void release(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "\n", 1) == 1);
  ::close(fd);
}

// A workspace that looks like a git repository to the protected-path walk:
// .git/hooks and .git/config exist (kept read-only), .git/commondir,
// .git/config.worktree and .envrc do not (not kept in direct mode).
void git_layout(const TempDir& ws) {
  make_dir(ws / ".git");
  make_dir(ws / ".git/hooks");
  write_file(ws / ".git/config", "[core]\n\trepositoryformatversion = 0\n");
}

}  // namespace

TEST_CASE("protected paths the host creates while the command runs are reported after it",
          "[edges][protect]") {
  require_userns();
  for (bool report : {false, true}) {
    DYNAMIC_SECTION((report ? "with --report" : "without a report (the bench's --vs rows)")) {
      TempDir ws("edges-created");
      git_layout(ws);
      REQUIRE(::mkfifo((ws / "go").c_str(), 0600) == 0);
      std::vector<std::string> argv = {nsrun_path()};
      if (report) argv.insert(argv.end(), {"--report", ws / "r.json"});
      argv.insert(argv.end(), {"--", "sh", "-c", "echo ready; read x < go; echo done"});
      Process p(argv, at(ws));
      p.wait_for_line("ready");
      // The host, not the command: the scan before the launch has run (the
      // command has started), the one after it has not.
      write_file(ws / ".envrc", "eval evil\n");
      write_file(ws / ".git/config.worktree", "[core]\n\tfsmonitor = echo PWNED\n");
      release(ws / "go");
      RunResult r = p.wait();
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "ready\ndone\n");
      CHECK(r.err.find("nsrun: protected path " + ws / ".envrc" + ": created during the run") != std::string::npos);
      CHECK(r.err.find("nsrun: protected path " + ws / ".git/config.worktree" + ": created during the run") !=
            std::string::npos);
      // Kept paths are not looked at again and never reported as created.
      CHECK(r.err.find(ws / ".git/config:") == std::string::npos);
      CHECK(r.err.find(ws / ".git/hooks:") == std::string::npos);
      if (report) {
        const std::string json = read_file(ws / "r.json");
        CHECK(json.find("{\"path\":\"" + ws / ".envrc" + "\",\"kept\":\"not-kept\",\"operation\":\"created\"}") !=
              std::string::npos);
        CHECK(json.find("{\"path\":\"" + ws / ".git/config.worktree" +
                        "\",\"kept\":\"not-kept\",\"operation\":\"created\"}") != std::string::npos);
        CHECK(json.find("{\"path\":\"" + ws / ".git/config" + "\",\"kept\":\"read-only\",\"operation\":null}") !=
              std::string::npos);
        CHECK(json.find("{\"path\":\"" + ws / ".git/commondir" + "\",\"kept\":\"not-kept\",\"operation\":null}") !=
              std::string::npos);
      }
    }
  }
}

TEST_CASE("when nsrun returns, its PID 1 and the command are gone", "[edges][process][cleanup]") {
  require_userns();
  for (bool report : {false, true}) {
    DYNAMIC_SECTION((report ? "with --report" : "without a report")) {
      TempDir ws("edges-end");
      REQUIRE(::mkfifo((ws / "go").c_str(), 0600) == 0);
      const std::string token = unique_token("edges-end");
      std::vector<std::string> argv = {nsrun_path()};
      if (report) argv.insert(argv.end(), {"--report", ws / "r.json"});
      // The token is in the cmdline of nsrun, of its PID 1 (a fork of
      // nsrun) and of the shell.
      argv.insert(argv.end(), {"--", "sh", "-c", "echo ready; read x < go", "sh", token});
      Process p(argv, at(ws));
      p.wait_for_line("ready");
      const std::vector<pid_t> inside = processes_with_marker(token);
      // nsrun, PID 1, the command (the control: the marker finds them).
      REQUIRE(inside.size() >= 3);
      release(ws / "go");
      RunResult r = p.wait();
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      // At once, no waiting: nsrun reaps PID 1 before it returns, and the
      // kernel ends the PID namespace (the command) before PID 1 is reaped.
      // A zombie would still answer kill(pid, 0).
      for (pid_t pid : inside) {
        INFO("pid " << pid);
        errno = 0;
        CHECK(::kill(pid, 0) == -1);
        CHECK(errno == ESRCH);
      }
      CHECK(processes_with_marker(token).empty());
    }
  }
}

TEST_CASE("nsrun ends without its destructors, its output complete", "[edges][process]") {
  // nsrun now ends with _exit() once the launch is over (the Policy and
  // the statics are not freed one by one): everything it owes the caller
  // must be out by then, in both rungs' report paths.
  require_userns();
  TempDir ws("edges-exit");
  RunResult r = nsrun({"--report", ws / "r.json", "--", "sh", "-c", "echo out; echo err >&2; exit 7"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 7);
  CHECK(r.out == "out\n");
  CHECK(r.err.find("err\n") != std::string::npos);
  const std::string json = read_file(ws / "r.json");
  CHECK(json.starts_with("{\"schema_version\":1,\"rung\":"));
  CHECK(json.find("\"exit_code\":7") != std::string::npos);
  CHECK((json.ends_with("}}") || json.ends_with("}}\n")));
  // nsrun's own failure after parsing (a missing workspace): the message
  // and the status.
  RunResult bad = nsrun({"--workspace", ws / "missing", "--", "true"}, at(ws));
  CHECK(bad.exit_code == 125);
  CHECK(bad.err.starts_with("nsrun: "));
}
