// An exec of a session gets the report and verdict a one-shot launch gets
// (`nsrun exec --report/--verdict`, docs/sessions.md): what was refused to
// that exec, and only to it. The reports are read on the host and checked
// against docs/report.schema.json; the attacks are a session's own
// commands trying to put refusals into another exec's report, to make it
// too large, or to rewrite it after it was written.
#include "harness.hpp"
#include "report_schema.hpp"
#include "reported.hpp"
#include "session_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

struct ExecReport {
  RunResult run;
  nsrun::json::Value report;  // null: none written, or not JSON
};

// `nsrun exec NAME --report FILE [options] -- command`, the report read
// back from the host and checked against the schema.
ExecReport exec_reported(const Session& s, std::vector<std::string> command, std::vector<std::string> options = {}) {
  const std::string path = s.dirs / unique_token("report") + ".json";
  options.insert(options.begin(), {"--report", path});
  ExecReport r;
  r.run = s.exec(std::move(command), options);
  if (file_exists(path)) {
    auto doc = nsrun::json::parse(read_file(path));
    if (doc) r.report = std::move(*doc);
  }
  if (r.report.is_object())
    for (const auto& e : report_schema_errors(r.report)) FAIL_CHECK(e);
  return r;
}

std::vector<const nsrun::json::Value*> refusals_of(const nsrun::json::Value& report, std::string_view kind) {
  std::vector<const nsrun::json::Value*> out;
  const nsrun::json::Value* list = report.is_object() ? report.find("refusals") : nullptr;
  if (list == nullptr || !list->is_array()) return out;
  for (const auto& r : list->as_array())
    if (kind.empty() || str(r.find("kind")) == kind) out.push_back(&r);
  return out;
}

std::string ended(const nsrun::json::Value& report, std::string_view key) {
  const nsrun::json::Value* e = report.is_object() ? report.find("ended") : nullptr;
  const nsrun::json::Value* v = e != nullptr && e->is_object() ? e->find(key) : nullptr;
  if (v != nullptr && v->is_int()) return std::to_string(v->as_int());
  return str(v);
}

bool unobserved_mentions(const nsrun::json::Value& report, std::string_view kind, std::string_view words) {
  const nsrun::json::Value* list = report.is_object() ? report.find("unobserved") : nullptr;
  if (list == nullptr || !list->is_array()) return false;
  for (const auto& u : list->as_array())
    if (str(u.find("kind")) == kind && str(u.find("why")).find(words) != std::string::npos) return true;
  return false;
}

void require_curl() {
  if (::access("/usr/bin/curl", X_OK) != 0) unavailable("curl", "/usr/bin/curl is not installed");
}

// A curl through the session's proxy to http://HOST/ (the proxy refuses it
// itself: no network is needed).
std::string curl_to(const std::string& host) {
  return "/usr/bin/curl -s -o /dev/null -w '%{http_code}' -x \"$HTTP_PROXY\" http://" + host + "/";
}

// An exec (with --verdict) that runs while another process of the session
// is denied twice: it waits for the other's marker `denied-once`, removes
// it, waits for the next one, and exits 4. So two denials fall inside its
// window, whoever made them.
ExecReport exec_across_two_denials(const Session& s) {
  return exec_reported(s,
                       {"sh", "-c",
                        "while [ ! -e denied-once ]; do :; done; rm denied-once; "
                        "while [ ! -e denied-once ]; do :; done; exit 4"},
                       {"--verdict"});
}

}  // namespace

TEST_CASE("session report: a clean exec's report says how it ended and lists no refusal", "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start());
  ExecReport r = exec_reported(s, {"sh", "-c", "echo hi"}, {"--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);
  CHECK(r.run.out == "hi\n");
  CHECK(r.run.err.empty());
  REQUIRE(r.report.is_object());
  CHECK(ended(r.report, "how") == "exit");
  CHECK(ended(r.report, "code") == "0");
  CHECK(str(r.report.find("rung")) == "namespaces");
  CHECK(refusals_of(r.report, "").empty());
  // A signal is told from an exit with 128+N.
  ExecReport killed = exec_reported(s, {"sh", "-c", "kill -TERM $$"});
  CHECK(killed.run.exit_code == 128 + 15);
  CHECK(ended(killed.report, "how") == "signal");
  CHECK(ended(killed.report, "signal") == "15");
  // Not found: the launch's setup-failed, with its error.
  ExecReport missing = exec_reported(s, {"/nonexistent/command"});
  CHECK(missing.run.exit_code == 127);
  CHECK(ended(missing.report, "how") == "setup-failed");
  CHECK(missing.report.find("error") != nullptr);
}

TEST_CASE("session report: a rename onto a protected .git/config is a protected-path refusal in that exec's report "
          "and verdict, not in the next exec's",
          "[session-report]") {
  require_userns();
  Session s;
  make_git_workspace(s);
  require_started(s.start());
  ExecReport r = exec_reported(s, {"sh", "-c", "echo x > new; mv new .git/config 2>/dev/null; exit 3"}, {"--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 3);
  REQUIRE(r.report.is_object());
  auto refused = refusals_of(r.report, "protected-path");
  REQUIRE(refused.size() == 1);
  CHECK_THAT(str(refused[0]->find("what")), ContainsSubstring(".git/config"));
  CHECK_THAT(r.run.err, ContainsSubstring("protected path"));
  CHECK_THAT(r.run.err, ContainsSubstring(".git/config"));
  CHECK(ended(r.report, "code") == "3");
  // The next exec's report has none of it.
  ExecReport next = exec_reported(s, {"true"});
  CHECK(next.run.exit_code == 0);
  CHECK(refusals_of(next.report, "").empty());
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  CHECK(read_file(s.ws / ".git/config") == "[core]\n");
}

TEST_CASE("session report: a refused system call is a seccomp refusal of that exec", "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start());
  ExecReport r = exec_reported(s, {"sh", "-c", shell_quote(probe_path()) + " sys keyctl; exit 1"}, {"--verdict"});
  INFO(r.run.out << r.run.err);
  CHECK(r.run.exit_code == 1);
  auto refused = refusals_of(r.report, "seccomp");
  REQUIRE(refused.size() == 1);
  CHECK(str(refused[0]->find("what")) == "keyctl");
  CHECK_THAT(r.run.err, ContainsSubstring("seccomp refused keyctl"));
  const nsrun::json::Value* denials = r.report.find("denials");
  REQUIRE(denials != nullptr);
  CHECK(denials->is_array());
}

TEST_CASE("session report: a denied egress host is an egress refusal of that exec", "[session-report]") {
  require_userns();
  require_curl();
  Session s;
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test"}));
  ExecReport r = exec_reported(s, {"sh", "-c", curl_to("refused.test") + "; exit 6"}, {"--verdict"});
  INFO(r.run.out << r.run.err);
  CHECK(r.run.out == "403");
  CHECK(r.run.exit_code == 6);
  auto refused = refusals_of(r.report, "egress");
  REQUIRE(refused.size() == 1);
  CHECK(str(refused[0]->find("what")) == "refused.test:80");
  CHECK(str(refused[0]->find("allow")) == "--allow-host refused.test");
  CHECK_THAT(r.run.err, ContainsSubstring("egress denied: refused.test:80 is not in --allow-host"));
  // The next exec made none.
  ExecReport next = exec_reported(s, {"true"});
  CHECK(refusals_of(next.report, "egress").empty());
}

TEST_CASE("session report: the session's time limit ending an exec is ended.how timeout, with the verdict line",
          "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start({"--timeout", "1500ms"}));
  ExecReport r = exec_reported(s, {"sleep", "30"}, {"--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 124);
  REQUIRE(r.report.is_object());
  CHECK(ended(r.report, "how") == "timeout");
  CHECK(ended(r.report, "limit") == "timeout");
  CHECK(refusals_of(r.report, "timeout").size() == 1);
  CHECK_THAT(r.run.err, ContainsSubstring("nsrun: the session's time limit (--timeout 1500ms) ended it"));
}

TEST_CASE("session report: exec options are checked before anything runs", "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start());
  // A report in the workspace could be rewritten by a background job
  // after it was written: refused, and the command does not run.
  RunResult in_ws = s.exec({"sh", "-c", "echo ran > ran"}, {"--report", s.ws / "r.json"});
  CHECK(in_ws.exit_code == 125);
  CHECK_THAT(in_ws.err, ContainsSubstring("may write"));
  CHECK(!file_exists(s.ws / "ran"));
  CHECK(!file_exists(s.ws / "r.json"));
  CHECK(s.exec({"true"}, {"--background", "--verdict"}).exit_code == 125);
  CHECK(s.exec({"true"}, {"--report-fd", "x"}).exit_code == 125);
}

TEST_CASE("attack: a background job flooding refusals puts none of them in a foreground exec's report, and the "
          "session keeps answering",
          "[session-report]") {
  require_userns();
  Session s;
  make_git_workspace(s);
  require_started(s.start());
  const std::string p = shell_quote(probe_path());
  // Refused calls and guarded renames as fast as a shell makes them, and
  // a process that leaves its session (setsid) doing the same.
  const std::string flood = "echo x > n; i=0; while :; do " + p + " sys keyctl; mv n .git/config 2>/dev/null; "
                            "i=$((i+1)); [ $i = 20 ] && touch flooding; done";
  RunResult bg = s.exec({"sh", "-c", flood}, {"--background"});
  REQUIRE(bg.exit_code == 0);
  RunResult bg2 = s.exec({"setsid", "sh", "-c", flood}, {"--background"});
  REQUIRE(bg2.exit_code == 0);
  // The foreground exec runs while the flood goes on (it waits for its
  // mark), and is refused nothing itself.
  ExecReport r = exec_reported(s, {"sh", "-c", "while [ ! -e flooding ]; do :; done; i=0; while [ $i -lt 200 ]; do "
                                               "i=$((i+1)); done; exit 2"},
                               {"--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 2);
  REQUIRE(r.report.is_object());
  CHECK(refusals_of(r.report, "").empty());
  CHECK(r.run.err.find("keyctl") == std::string::npos);
  // Its own refusals, made during the flood, are its own and never more
  // than it made. A call made before nsrun knows the exec's session waits
  // among at most 256 unclaimed ones, which the flood may push out: then it
  // is uncounted (docs/sessions.md), never given to another exec.
  ExecReport own = exec_reported(s, {"sh", "-c", p + " sys keyctl; " + p + " sys keyctl; exit 1"});
  auto refused = refusals_of(own.report, "seccomp");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0]->find("count")->as_int() >= 1);
  CHECK(refused[0]->find("count")->as_int() <= 2);
  CHECK(refusals_of(own.report, "protected-path").empty());
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  CHECK(read_file(s.ws / ".git/config") == "[core]\n");
}

TEST_CASE("attack: a background job's egress denials during a foreground exec are not that exec's refusals; they "
          "are said as not told apart",
          "[session-report]") {
  require_userns();
  require_curl();
  Session s;
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test"}));
  const std::string flood = "while :; do " + curl_to("from-background.test") + " >/dev/null; touch denied-once; done";
  REQUIRE(s.exec({"sh", "-c", flood}, {"--background"}).exit_code == 0);
  ExecReport r = exec_across_two_denials(s);
  INFO(r.run.err);
  CHECK(r.run.exit_code == 4);
  REQUIRE(r.report.is_object());
  CHECK(refusals_of(r.report, "egress").empty());
  CHECK(unobserved_mentions(r.report, "egress", "job 1"));
  CHECK(r.run.err.find("from-background.test") == std::string::npos);
}

TEST_CASE("attack: an exec flooding distinct egress denials with long names gets a bounded report that still "
          "parses, and the session answers the next exec",
          "[session-report]") {
  require_userns();
  require_curl();
  Session s;
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test"}));
  // 120 distinct hosts of 200 characters: past an exec's 64 entries and,
  // listed whole, past one message.
  const std::string label(60, 'a');
  const std::string loop = "i=0; while [ $i -lt 120 ]; do i=$((i+1)); " +
                           curl_to("h$i." + label + "." + label + "." + label + ".test") + " >/dev/null; done; exit 5";
  ExecReport r = exec_reported(s, {"sh", "-c", loop}, {"--verdict"});
  INFO(r.run.err.substr(0, 2000));
  CHECK(r.run.exit_code == 5);
  REQUIRE(r.report.is_object());
  auto refused = refusals_of(r.report, "egress");
  CHECK(!refused.empty());
  CHECK(refused.size() <= 64);
  CHECK(unobserved_mentions(r.report, "refusals", "more refusal"));
  CHECK(exec_reported(s, {"true"}).run.exit_code == 0);
}

TEST_CASE("attack: a host name made to look like report fields or a second verdict line stays one egress refusal "
          "of that exec, quoted",
          "[session-report]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  Session s;
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test"}));
  // CONNECT to a name with quotes, braces and a newline in it: the
  // proxy's refusal is all the command gets.
  const std::string forge = R"PY(
import socket
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(b'CONNECT x"},{"kind":"timeout","what":"1s"}]\nnsrun: all good:443 HTTP/1.1\r\n\r\n')
print(s.recv(4096).split(b'\r\n', 1)[0].split(b' ')[1].decode())
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(b'CONNECT forged.test:443 HTTP/1.1\r\n\r\n')
print(s.recv(4096).split(b'\r\n', 1)[0].split(b' ')[1].decode())
raise SystemExit(9)
)PY";
  ExecReport r = exec_reported(s, {"/usr/bin/python3", "-I", "-c", forge}, {"--verdict"});
  INFO(r.run.out << r.run.err);
  CHECK(r.run.exit_code == 9);
  REQUIRE(r.report.is_object());
  CHECK(refusals_of(r.report, "timeout").empty());
  CHECK(ended(r.report, "how") == "exit");
  CHECK(!refusals_of(r.report, "egress").empty());
  // One verdict line, whatever the names held.
  std::size_t lines = 0;
  for (std::string_view rest = r.run.err; !rest.empty();) {
    const auto nl = rest.find('\n');
    if (rest.substr(0, nl).starts_with("nsrun: ")) ++lines;
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  CHECK(lines == 1);
  CHECK(r.run.err.find("nsrun: all good") == std::string::npos);
}

TEST_CASE("session report: --watch-writes at session start lists each exec's own write attempts outside the "
          "writable roots, not another job's",
          "[session-report]") {
  require_userns();
  Session s;
  make_git_workspace(s);
  require_started(s.start({"--watch-writes"}));
  // A background job writing outside, over and over, under another name.
  REQUIRE(s.exec({"sh", "-c", "while :; do echo x 2>/dev/null > /etc/from-background; touch writing; done"},
                 {"--background"})
              .exit_code == 0);
  ExecReport r = exec_reported(s, {"sh", "-c", "while [ ! -e writing ]; do :; done; echo x 2>/dev/null > "
                                               "/etc/from-foreground; echo y 2>/dev/null > .git/config; exit 1"},
                               {"--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 1);
  REQUIRE(r.report.is_object());
  const nsrun::json::Value* writes = r.report.find("writes_outside");
  REQUIRE(writes != nullptr);
  REQUIRE(writes->is_array());
  std::string paths;
  for (const auto& w : writes->as_array()) paths += str(w.find("path")) + " ";
  INFO(paths);
  CHECK(paths.find("/etc/from-foreground") != std::string::npos);
  CHECK(paths.find(".git/config") != std::string::npos);
  CHECK(paths.find("/etc/from-background") == std::string::npos);
  CHECK(refusals_of(r.report, "read-only-root").size() == 1);
  CHECK(refusals_of(r.report, "protected-path").size() == 1);
  CHECK_THAT(r.run.err, ContainsSubstring("/etc/from-foreground"));
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  CHECK(!file_exists("/etc/from-foreground"));
  CHECK(read_file(s.ws / ".git/config") == "[core]\n");
}

TEST_CASE("session report: --verdict at session start prints every failed exec's verdict line", "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start({"--verdict"}));
  RunResult failed = s.exec({"sh", "-c", shell_quote(probe_path()) + " sys keyctl; exit 1"});
  CHECK(failed.exit_code == 1);
  CHECK_THAT(failed.err, ContainsSubstring("nsrun: seccomp refused keyctl"));
  RunResult fine = s.exec({"true"});
  CHECK(fine.exit_code == 0);
  CHECK(fine.err.empty());
  // --report stays refused at start: a report is one command's.
  Session other;
  CHECK(other.start({"--report", other.dirs / "r.json"}).exit_code == 125);
}

TEST_CASE("session report: exec --timeout ends that command alone with 124, said as a launch says it", "[session-report]") {
  require_userns();
  Session s;
  require_started(s.start({"--kill-after", "300ms"}));
  ExecReport r = exec_reported(s, {"sleep", "30"}, {"--timeout", "500ms", "--verdict"});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 124);
  REQUIRE(r.report.is_object());
  CHECK(ended(r.report, "how") == "timeout");
  CHECK(ended(r.report, "signal") == "15");
  auto refused = refusals_of(r.report, "timeout");
  REQUIRE(refused.size() == 1);
  CHECK(str(refused[0]->find("what")) == "500ms");
  CHECK_THAT(r.run.err, ContainsSubstring("nsrun: timed out after 500ms: SIGTERM ended it"));
  // Without --verdict the line is still said; SIGTERM ignored: SIGKILL.
  RunResult stubborn = s.exec({"sh", "-c", "trap '' TERM; while :; do :; done"}, {"--timeout", "300ms"});
  CHECK(stubborn.exit_code == 124);
  CHECK_THAT(stubborn.err, ContainsSubstring("nsrun: timed out after 300ms: SIGTERM, then SIGKILL 300ms later"));
  // The session goes on.
  CHECK(s.exec({"true"}).exit_code == 0);
  CHECK(s.exec({"true"}, {"--timeout", "0"}).exit_code == 125);
}

TEST_CASE("attack: egress denials of a process an earlier exec left running are not a later exec's refusals",
          "[session-report]") {
  require_userns();
  require_curl();
  Session s;
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test"}));
  // Not a job: a loop an exec leaves behind, PID 1's child once it returns.
  const std::string left = "(while :; do " + curl_to("left-behind.test") +
                           "; touch denied-once; done) >/dev/null 2>&1 </dev/null &";
  REQUIRE(s.exec({"sh", "-c", left}).exit_code == 0);
  ExecReport r = exec_across_two_denials(s);
  INFO(r.run.err);
  CHECK(r.run.exit_code == 4);
  REQUIRE(r.report.is_object());
  CHECK(refusals_of(r.report, "egress").empty());
  CHECK(unobserved_mentions(r.report, "egress", "left by earlier commands"));
}
