// A session with --network proxy forks its proxy before the session's
// nsrun starts its control-socket thread: a fork copies only the forking
// thread, and a proxy forked beside another thread could inherit a lock
// that thread held (malloc's, stdio's) and hang or corrupt its heap.
// Observed on the host: right after `nsrun session start`, before any
// connection, the session's nsrun already has the proxy as a child (a
// process outside the sandbox's PID namespace), and every thread of that
// nsrun was made after it (pids and thread ids come from one counter).
#include "harness.hpp"
#include "session_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <signal.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {


std::vector<pid_t> numbers(const std::string& text) {
  std::vector<pid_t> out;
  std::istringstream in(text);
  for (long n; in >> n;) out.push_back(static_cast<pid_t>(n));
  return out;
}

// The children of `pid` that are not in a PID namespace below the host's
// (one NSpid entry): the proxy; the sandbox's PID 1 has two.
std::vector<pid_t> host_children(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& tid : names_in(fmt::format("/proc/{}/task", pid)))
    for (pid_t child : numbers(read_file(fmt::format("/proc/{}/task/{}/children", pid, tid)))) {
      const std::string status = read_file(fmt::format("/proc/{}/status", child));
      const auto at = status.find("NSpid:");
      REQUIRE(at != std::string::npos);
      const std::string line = status.substr(at + 6, status.find('\n', at) - at - 6);
      if (numbers(line).size() == 1) out.push_back(child);
    }
  return out;
}

}  // namespace

TEST_CASE("session: --network proxy's process is forked before the session's thread starts", "[session]") {
  require_userns();
  SECTION("with --network proxy") {
    Session s;
    RunResult started = s.run_nsrun({"session", "start", s.name, "--idle-timeout", "60s", "--network", "proxy",
                                     "--allow-host", "allowed.test"});
    INFO(started.err);
    REQUIRE(started.exit_code == 0);
    const pid_t host = s.host_pid();
    const std::vector<pid_t> proxy = host_children(host);
    REQUIRE(proxy.size() == 1);
    // Every thread of the session's nsrun (the control socket's, the
    // proxy's reader) came after the proxy's fork.
    std::vector<std::string> threads = names_in(fmt::format("/proc/{}/task", host));
    CHECK(threads.size() >= 2);
    for (const auto& tid : threads)
      if (std::stol(tid) != host) CHECK(std::stol(tid) > proxy.front());
    // The proxy's serving is session_test.cpp's (--network proxy's rules
    // for every exec).
  }
  SECTION("without it: no process but PID 1") {
    Session s;
    RunResult started = s.run_nsrun({"session", "start", s.name, "--idle-timeout", "60s"});
    INFO(started.err);
    REQUIRE(started.exit_code == 0);
    CHECK(host_children(s.host_pid()).empty());
  }
}
