// The process model: nsrun -> PID 1 (the reaper) -> the command. Exit
// statuses, signal forwarding, reaping, and nothing left behind.
#include "harness.hpp"
#include "probe_cmd.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <linux/kcmp.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Runs nsrun ARGS in `ws`: it ends with `status` and says why on one line of
// its own.
void check_refused(const std::vector<std::string>& args, const TempDir& ws, int status) {
  RunResult r = nsrun(args, at(ws));
  CHECK(r.exit_code == status);
  INFO("stderr: " << r.err);
  CHECK(r.err.starts_with("nsrun: "));
}

}  // namespace

TEST_CASE("nsrun exits with the command's status", "[process][exit]") {
  require_userns();
  TempDir ws;
  struct Case {
    const char* script;
    int expected;
  };
  for (const Case& c : {Case{"exit 0", 0}, Case{"exit 3", 3}, Case{"kill -9 $$", 137},
                        Case{"kill -TERM $$", 143}}) {
    DYNAMIC_SECTION("sh -c '" << c.script << "'") {
      RunResult r = nsrun({"--", "sh", "-c", c.script}, at(ws));
      INFO(r.err);
      CHECK(r.exit_code == c.expected);
    }
  }
  SECTION("with --as-pid-1") {
    RunResult r = nsrun({"--as-pid-1", "--", "sh", "-c", "exit 3"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 3);
  }
}

// With SIGCHLD ignored the kernel reaps children without a signal; nsrun
// and its PID 1 must still see the command end (they once slept forever).
TEST_CASE("a caller that ignores SIGCHLD still gets the command's status", "[process][exit]") {
  require_userns();
  TempDir ws;
  for (const char* backend : {"namespaces", "landlock"}) {
    DYNAMIC_SECTION("--backend " << backend) {
      if (std::string_view(backend) == "landlock") require_landlock();
      RunResult r = run({"bash", "-c", "trap '' CHLD; exec \"$0\" \"$@\"", nsrun_path(), "--backend", backend, "--",
                         "sh", "-c", "exit 3"},
                        [&] {
                          RunOptions o = at(ws);
                          o.timeout = 10s;
                          return o;
                        }());
      INFO(r.err);
      CHECK(r.exit_code == 3);
    }
  }
}

TEST_CASE("a file that is not executable: 126", "[process][exit]") {
  require_userns();
  TempDir ws;
  std::string script = ws / "not-executable";
  write_file(script, "#!/bin/sh\nexit 0\n", 0644);

  check_refused({"--", script}, ws, 126);
}

TEST_CASE("a command that does not exist: 127", "[process][exit]") {
  require_userns();
  TempDir ws;
  for (std::string command : {"no-such-command-xyz", "/no/such/dir/no-such-command-xyz"}) {
    DYNAMIC_SECTION(command) {
      check_refused({"--", command}, ws, 127);
    }
  }
}

TEST_CASE("nsrun's own failure: 125", "[process][exit]") {
  require_userns();
  TempDir ws;
  check_refused(with_probe({"--mode", "no-such-mode"}, {"write", ws / "marker"}), ws, 125);
  CHECK_FALSE(file_exists(ws / "marker"));
}

TEST_CASE("the command is PID 2 under nsrun's PID 1; --as-pid-1 makes it PID 1",
          "[process][pid]") {
  require_userns();
  TempDir ws;
  SECTION("default") {
    RunResult pid = nsrun(with_probe({}, {"getpid"}), at(ws));
    RunResult ppid = nsrun(with_probe({}, {"getppid"}), at(ws));
    INFO(pid.err << ppid.err);
    CHECK(pid.out == "2\n");
    CHECK(ppid.out == "1\n");
  }
  SECTION("--as-pid-1") {
    RunResult pid = nsrun(with_probe({"--as-pid-1"}, {"getpid"}), at(ws));
    INFO(pid.err);
    CHECK(pid.out == "1\n");
  }
}

TEST_CASE("the command sees its child in /proc then kills it and waits for it",
          "[process][children]") {
  require_userns();
  TempDir ws;
  for (bool as_pid_1 : {false, true}) {
    DYNAMIC_SECTION((as_pid_1 ? "--as-pid-1" : "under nsrun's PID 1")) {
      check_probe(pid1_options(as_pid_1), {"spawn-kill"}, ws, 0, "seen killed 9\n");
    }
  }
}

TEST_CASE("an orphaned zombie is reaped by PID 1", "[process][reaper]") {
  require_userns();
  TempDir ws;
  RunResult r = nsrun(with_probe({}, {"orphan-zombie"}), at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.starts_with("reaped "));
}

TEST_CASE("SIGTERM sent to nsrun reaches the command", "[process][signals]") {
  require_userns();
  TempDir ws;
  std::string mark = ws / "mark";

  // nsrun ARGS says ready, gets SIGTERM; the command's handler exits 0
  // after writing `expected` to the mark.
  auto term_leaves_mark = [&](const std::vector<std::string>& args, std::string_view expected) {
    Process p(args, at(ws));
    p.wait_for_line("ready");
    p.signal(SIGTERM);
    RunResult r = p.wait();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    REQUIRE(file_exists(mark));
    CHECK(read_file(mark) == expected);
  };
  SECTION("a handler in the command runs") {
    term_leaves_mark({nsrun_path(), "--", probe_path(), "trap-term", mark}, "term");
  }
  SECTION("a shell trap runs and leaves a mark in the workspace") {
    std::string script = fmt::format(
        "trap 'echo term > {}; exit 0' TERM; {} & echo ready; wait", shell_quote(mark),
        probe_sh("sleep-forever"));
    term_leaves_mark({nsrun_path(), "--", "sh", "-c", script}, "term\n");
  }
}

TEST_CASE("every termination signal nsrun forwards reaches the command", "[process][signals]") {
  require_userns();
  TempDir ws;
  for (const char* name : {"TERM", "INT", "HUP", "QUIT", "USR1", "USR2", "WINCH"}) {
    DYNAMIC_SECTION("SIG" << name) {
      int sig = 0;
      for (int s = 1; s < NSIG; ++s) {
        const char* abbrev = sigabbrev_np(s);
        if (abbrev && std::string_view(abbrev) == name) sig = s;
      }
      REQUIRE(sig != 0);
      std::string mark = ws / fmt::format("mark-{}", name);
      std::string script =
          fmt::format("trap 'echo {} > {}; exit 0' {}; {} & echo ready; wait", name,
                      shell_quote(mark), name, probe_sh("sleep-forever"));
      Process p({nsrun_path(), "--", "sh", "-c", script}, at(ws));
      p.wait_for_line("ready");
      p.signal(sig);
      RunResult r = p.wait();
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      REQUIRE(file_exists(mark));
      CHECK(read_file(mark) == std::string(name) + "\n");
    }
  }
}

TEST_CASE("after nsrun exits no process of the sandbox is left", "[process][cleanup]") {
  require_userns();
  TempDir ws;
  // The token is in the cmdline of nsrun, of its PID 1 (a clone of nsrun),
  // of the shell and of the background probe: all of them must go.
  std::string token = unique_token("leftover");
  auto none_left = [&] { return processes_with_marker(token).empty(); };
  auto leftovers = [&] {
    std::string s;
    for (pid_t pid : processes_with_marker(token)) s += fmt::format("{} ", pid);
    return s;
  };

  // A shell with a background probe; nsrun gets `sig`.
  auto signal_nsrun = [&](int sig) {
    std::string script = probe_sh("sleep-forever " + token) + " & wait";
    Process p({nsrun_path(), "--", "sh", "-c", script}, at(ws));
    p.wait_for_line("sleeping");
    // The control: the marker finds the sandbox's processes while they live.
    REQUIRE_FALSE(processes_with_marker(token).empty());
    p.signal(sig);
    RunResult r = p.wait();
    INFO(r.out << r.err);
    CHECK(r.exit_code == 128 + sig);
    CHECK(eventually(none_left));
    INFO("left: " << leftovers());
    CHECK(none_left());
  };
  SECTION("nsrun gets SIGTERM; a background child is left behind the shell") { signal_nsrun(SIGTERM); }
  SECTION("nsrun gets SIGKILL: everything inside dies with it") { signal_nsrun(SIGKILL); }
  for (bool as_pid_1 : {false, true}) {
    DYNAMIC_SECTION("the command exits, leaving a background child"
                    << (as_pid_1 ? " (--as-pid-1)" : "")) {
      std::vector<std::string> args = pid1_options(as_pid_1);
      // The command waits until the child has started, then exits without it.
      std::string script = fmt::format("{} > {} & while ! [ -s {} ]; do :; done; exit 5",
                                       probe_sh("sleep-forever " + token),
                                       shell_quote(ws / "started"), shell_quote(ws / "started"));
      args.insert(args.end(), {"--", "sh", "-c", script});
      RunResult r = nsrun(args, at(ws));
      INFO(r.out << r.err);
      CHECK(r.exit_code == 5);
      CHECK(read_file(ws / "started").starts_with("sleeping "));
      CHECK(eventually(none_left));
      INFO("left: " << leftovers());
      CHECK(none_left());
    }
  }
}

// PID 1 lives inside the sandbox beside the untrusted command; nsrun lives
// outside with the caller's privileges. Shared memory between the two would
// turn any write bug in PID 1 into code execution outside the sandbox, so
// PID 1 must have an address space of its own. kcmp(KCMP_VM) asks the
// kernel directly; it needs ptrace access to PID 1, which is not dumpable,
// so only root can ask.
TEST_CASE("PID 1 does not share nsrun's address space", "[process][pid1]") {
  require_userns();
  if (::geteuid() != 0) SKIP("kcmp of a non-dumpable PID 1 needs CAP_SYS_PTRACE (run as root)");
  TempDir ws;
  std::string token = unique_token("vm");
  std::string script = probe_sh("sleep-forever " + token);
  for (std::string backend_args : {"", "--allow-nested-userns"}) {
    std::vector<std::string> args{nsrun_path()};
    if (!backend_args.empty()) args.push_back(backend_args);
    args.insert(args.end(), {"--", "sh", "-c", script});
    Process p(args, at(ws));
    p.wait_for_line("sleeping");
    // nsrun's only child is PID 1.
    std::string children = read_file(fmt::format("/proc/{}/task/{}/children", p.pid(), p.pid()));
    pid_t pid1 = static_cast<pid_t>(std::stol(children));
    REQUIRE(pid1 > 0);
    errno = 0;
    long same = ::syscall(SYS_kcmp, p.pid(), pid1, KCMP_VM, 0, 0);
    INFO("kcmp: " << same << " errno " << errno << " (" << strerror(errno) << ")");
    REQUIRE(same >= 0);
    CHECK(same != 0);  // 0 would mean one and the same address space
    p.signal(SIGKILL);
    p.wait();
  }
}
