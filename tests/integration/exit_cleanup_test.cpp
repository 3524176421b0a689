// When nsrun returns, nothing the command left is running, nsrun's own
// output is complete, and a cow workspace's layer is complete and
// unlocked.
#include "harness.hpp"
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

using namespace nsrun_test;

// nsrun ends with fflush + _exit. A command that leaves daemons behind
// (double fork, setsid, SIGTERM and SIGHUP ignored): when nsrun returns,
// none of them is left, on both rungs, and nsrun's own output (stdout of
// the command, its messages on stderr, the report) is complete when piped.
TEST_CASE("daemons the command leaves (double fork, setsid, SIGTERM ignored) are gone when nsrun returns",
          "[exit-cleanup][process][cleanup]") {
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      const std::vector<std::string> pin = rung_options(rung);
      TempDir ws("exit-cleanup-daemon");
      REQUIRE(::mkfifo((ws / "never").c_str(), 0600) == 0);
      REQUIRE(::mkfifo((ws / "go").c_str(), 0600) == 0);
      const std::string token = unique_token("a4daemon");
      // Each daemon blocks opening a fifo nobody writes: alive, no child.
      const std::string daemon = "trap '' TERM HUP INT; read x < \"$1\"";
      const std::string script = fmt::format(
          "( ( setsid /bin/sh -c {0} {1} \"$1\" & ) & ); "
          "( /bin/sh -c {0} {1} \"$1\" & ); "
          "/bin/sh -c {0} {1} \"$1\" & "
          "echo started; echo on-stderr >&2; read x < \"$2\"; exit 3",
          shell_quote(daemon), shell_quote(token));
      std::vector<std::string> argv = {nsrun_path()};
      argv.insert(argv.end(), pin.begin(), pin.end());
      argv.insert(argv.end(), {"--report", ws / "r.json", "--", "/bin/sh", "-c", script, "sh", ws / "never", ws / "go"});
      Process p(argv, at(ws));
      p.wait_for_line("started");
      // The control: the three daemons run (polled with a deadline: their
      // exec is not something the command can be told of).
      CHECK(eventually([&] { return processes_with_marker(token).size() >= 3; }));
      {
        const int fd = ::open((ws / "go").c_str(), O_WRONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        REQUIRE(::write(fd, "\n", 1) == 1);
        ::close(fd);
      }
      RunResult r = p.wait();
      INFO(r.out << r.err);
      CHECK(r.exit_code == 3);
      CHECK(r.out == "started\n");
      CHECK(r.err.find("on-stderr\n") != std::string::npos);
      // At once, no waiting.
      CHECK(processes_with_marker(token).empty());
      const std::string json = read_file(ws / "r.json");
      CHECK(json.find("\"exit_code\":3") != std::string::npos);
      CHECK((json.ends_with("}}") || json.ends_with("}}\n")));
    }
  }
}

// --workspace-mode cow: what a run wrote is in its layer after nsrun's
// _exit (nothing left half-written, no lock held): `nsrun changes RUN`
// lists it, `nsrun commit RUN` puts it in the workspace, and the host's
// workspace was untouched until then.
TEST_CASE("after nsrun's _exit the cow workspace's layer is complete and unlocked", "[exit-cleanup][cow]") {
  require_userns();
  TempDir ws("exit-cleanup-cow");
  write_file(ws / "a", "a\n");
  RunResult w = nsrun_test::nsrun({"--workspace-mode", "cow", "--", "/bin/sh", "-c", "echo b > b; cat a"}, at(ws));
  INFO(w.err);
  if (w.exit_code != 0 && w.err.find("overlay") != std::string::npos)
    unavailable("overlay", "the copy-on-write workspace needs an overlay here: " + w.err);
  REQUIRE(w.exit_code == 0);
  CHECK(w.out == "a\n");
  CHECK_FALSE(file_exists(ws / "b"));
  // "nsrun: run ID: the workspace is copy-on-write (...)"
  const std::size_t at_id = w.err.find("nsrun: run ");
  REQUIRE(at_id != std::string::npos);
  const std::string id = w.err.substr(at_id + 11, w.err.find(':', at_id + 11) - at_id - 11);
  RunResult changes = nsrun_test::nsrun({"changes", id}, at(ws));
  INFO(changes.out << changes.err);
  CHECK(changes.exit_code == 0);
  CHECK(changes.out.find("b") != std::string::npos);
  RunResult commit = nsrun_test::nsrun({"commit", id}, at(ws));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  CHECK(read_file(ws / "a") == "a\n");
  CHECK(read_file(ws / "b") == "b\n");
}
