// A session's command gets a spec of its own, made from the session's by a
// pure function (session/exec_spec.hpp): the session's spec is never
// written, and only what the request names (and what every session
// command gets: its own session, no caller's fds) differs.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "session/exec_spec.hpp"
#include "session/pid1.hpp"

using namespace nsrun;
using namespace nsrun::session;

namespace {

LaunchSpec session_spec() {
  LaunchSpec s;
  s.argv = {"/bin/sh"};
  s.env = {"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=C"};
  s.exec_paths = {"/bin/sh"};
  s.pass_fds = {5, 7};
  s.new_session = -1;
  s.stop_before_exec = true;
  s.plan.chdir = "/work";
  s.plan.hostname = "sandbox";
  s.limits.timeout_ms = 1234;
  s.timeline.start();
  s.timeline.mark("prepare");
  return s;
}

// PID 1's serving entry point reads the session's spec const.
static_assert(std::is_same_v<decltype(&serve_in_sandbox),
                             void (*)(const LaunchSpec&, Attempt&, int, const sigset_t&, const CommandSetup&,
                                      const std::vector<Fd>&)>);

}  // namespace

TEST_CASE("a session command's spec: the request's command and environment, the rest the session's", "[unit][session]") {
  const LaunchSpec session = session_spec();
  const LaunchSpec before = session_spec();
  const LaunchSpec spec = exec_spec(session, {"ls", "-l"}, {"LANG=fr_FR.UTF-8", "EXTRA=1"});
  CHECK(spec.argv == std::vector<std::string>{"ls", "-l"});
  CHECK(spec.env == std::vector<std::string>{"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=fr_FR.UTF-8", "EXTRA=1"});
  // Found on the merged PATH.
  CHECK(spec.exec_paths == std::vector<std::string>{"/opt/bin/ls", "/usr/bin/ls"});
  // Its own session and process group; no fd of the session's caller; a real exec.
  CHECK(spec.new_session == 1);
  CHECK(spec.pass_fds.empty());
  CHECK(!spec.stop_before_exec);
  // The rest is the session's.
  CHECK(spec.plan.chdir == "/work");
  CHECK(spec.plan.hostname == "sandbox");
  CHECK(spec.limits.timeout_ms == 1234);
  CHECK(spec.timeline.phases().size() == session.timeline.phases().size());
  // The session's spec is unchanged.
  CHECK(session.argv == before.argv);
  CHECK(session.env == before.env);
  CHECK(session.exec_paths == before.exec_paths);
  CHECK(session.pass_fds == before.pass_fds);
  CHECK(session.new_session == before.new_session);
  CHECK(session.stop_before_exec);
}

TEST_CASE("a session command's PATH may come from the request; a path is used as given", "[unit][session]") {
  const LaunchSpec session = session_spec();
  CHECK(exec_spec(session, {"tool"}, {"PATH=/a:/b"}).exec_paths == std::vector<std::string>{"/a/tool", "/b/tool"});
  CHECK(exec_spec(session, {"./run.sh"}, {}).exec_paths == std::vector<std::string>{"./run.sh"});
  // Each request starts from the session's environment, not the last command's.
  (void)exec_spec(session, {"a"}, {"X=1"});
  CHECK(exec_spec(session, {"b"}, {}).env == session.env);
}

TEST_CASE("a session command's environment: later entries win, entries without a name are ignored", "[unit][session]") {
  CHECK(merged_env({"A=1", "B=2"}, {"A=3", "A=4"}) == std::vector<std::string>{"B=2", "A=4"});
  CHECK(merged_env({"A=1"}, {"=x", "noequals", "AB=2"}) == std::vector<std::string>{"A=1", "AB=2"});
  CHECK(merged_env({"A=1"}, {"A="}) == std::vector<std::string>{"A="});
}
