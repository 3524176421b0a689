// An exec's report is made from what the session's nsrun attributed to it
// (session/ledger.hpp, session/exec_report.hpp): the caller's session id
// read from hostile-looking /proc text, refusals kept per exec and
// bounded, and a report that fits one control-socket message whatever it
// was fed.
#include <catch2/catch_test_macros.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include <cstdlib>
#include <string>

#include "launch/report.hpp"
#include "policy/json.hpp"
#include "session/exec_report.hpp"
#include "session/ledger.hpp"
#include "session/wire.hpp"

using namespace nsrun;
using namespace nsrun::session;

TEST_CASE("the session id is read at the session's level of NSsid, and nothing else is taken for one",
          "[session-report]") {
  const std::string status = "Name:\tsh\nNSpid:\t4242\t7\nNSpgid:\t4240\t5\nNSsid:\t4240\t5\nVmPeak:\t1 kB\n";
  CHECK(Ledger::session_id(status, 1) == 5);
  CHECK(Ledger::session_id(status, 0) == 4240);
  CHECK(Ledger::session_id(status, 2) == 0);  // not in a namespace that deep
  CHECK(Ledger::session_id("Name:\tsh\nNSsid:\t12\tx9\n", 1) == 0);
  CHECK(Ledger::session_id("Name:\tsh\nNSsid:\t12\t0\n", 1) == 0);
  CHECK(Ledger::session_id("Name:\tsh\nNSpid:\t5\n", 0) == 0);
  CHECK(Ledger::session_id("", 0) == 0);
  CHECK(Ledger::session_id("Name:\tsh\nNSsid:\t99999999999999999999999\t3\n", 0) == 0);
}

namespace {

seccomp_notif call_of(int nr) {
  seccomp_notif n{};
  n.pid = 100;
  n.data.nr = nr;
  return n;
}

}  // namespace

TEST_CASE("refusals go to the exec whose session asked, only after its request; others' are never its own",
          "[session-report]") {
  Ledger ledger;
  ledger.set_depth(1);
  CHECK(ledger.identify(1) == 0);  // no exec asked for a report: /proc is not read
  ledger.expect(7);
  Denial keyctl{"keyctl", 250, 1, 0, ""};
  // Before the exec's pid is known: kept aside, claimed by its id.
  ledger.denial(40, call_of(250), keyctl);
  ledger.denial(41, call_of(250), keyctl);  // another session's
  ledger.open(7, 40);
  ledger.denial(40, call_of(250), keyctl);
  ledger.denial(41, call_of(250), keyctl);
  WriteAttempt w{"/ws/.git/config", "rename", WritePlace::protected_, 1, 100, ".git/config", 30};
  ledger.write(41, w);
  ExecObservations obs = ledger.close(7);
  REQUIRE(obs.denials.size() == 1);
  CHECK(obs.denials[0].count == 2);
  CHECK(obs.writes.empty());
  // Closed: nothing more is kept for it.
  ledger.denial(40, call_of(250), keyctl);
  CHECK(ledger.close(7).denials.empty());
}

TEST_CASE("an exec flooded with distinct refusals keeps a bounded list and a count", "[session-report]") {
  Ledger ledger;
  ledger.expect(1);
  ledger.open(1, 9);
  for (int i = 0; i < 1000; ++i) {
    egress::Decision d;
    d.host = "h" + std::to_string(i) + std::string(900, 'a');
    d.port = 80;
    d.decision = "denied";
    d.reason = "blocked-by-allowlist";
    ledger.decision(d);
    WriteAttempt w{"/ws/p" + std::to_string(i), "rename", WritePlace::protected_, 1, 1, "", 30};
    ledger.write(9, w);
  }
  ExecObservations obs = ledger.close(1);
  CHECK(obs.egress.size() == max_exec_entries);
  CHECK(obs.writes.size() == max_exec_entries);
  CHECK(obs.dropped == 2 * (1000 - max_exec_entries));

  SessionReportBase base;
  base.report.rung = "namespaces";
  base.report.hidden_credentials.assign(200, std::string(300, 'c'));
  ExecEnd end;
  end.code = 1;
  end.wait_status = 1 << 8;
  LaunchReport report = exec_report(base, end, obs);
  const std::size_t bound = max_message - 8 * 1024;
  json::Value j = bounded_json(report, bound);
  const std::string text = json::dump(j, false);
  CHECK(text.size() <= bound);
  CHECK(text.find("left out") != std::string::npos);
  CHECK(json::parse(text).has_value());
}

TEST_CASE("an exec's end: a signal is told from an exit, the session's limit is a timeout", "[session-report]") {
  SessionReportBase base;
  ExecEnd end;
  end.wait_status = SIGTERM;
  end.code = 128 + SIGTERM;
  LaunchReport r = exec_report(base, end, {});
  CHECK(r.verdict.ended.how == "signal");
  CHECK(r.verdict.ended.signal == SIGTERM);
  ExecEnd limit;
  limit.how = ExecEnd::How::session_ended;
  limit.session_timeout = true;
  limit.code = 124;
  base.facts.timeout_ms = 2000;
  LaunchReport t = exec_report(base, limit, {});
  CHECK(t.verdict.ended.how == "timeout");
  REQUIRE(!t.verdict.refusals.empty());
  CHECK(t.verdict.refusals[0].kind == "timeout");
  CHECK(verdict_line(t.verdict) == "nsrun: the session's time limit (--timeout 2s) ended it, and every process of the "
                                   "session");
  // Egress denials while another job ran: said, not listed.
  ExecObservations obs;
  egress::Decision d;
  d.host = "x.test";
  d.port = 443;
  d.decision = "denied";
  obs.egress.push_back(d);
  ExecEnd beside;
  beside.wait_status = 0;
  beside.code = 0;
  beside.beside = {3};
  LaunchReport b = exec_report(base, beside, obs);
  for (const auto& refusal : b.verdict.refusals) CHECK(refusal.kind != "egress");
  bool said = false;
  for (const auto& [kind, why] : b.verdict.unobserved) said = said || (kind == "egress" && why.find("job 3") != std::string::npos);
  CHECK(said);
}

TEST_CASE("an exec's report file is refused inside a directory the session's commands write, and nowhere else",
          "[session-report]") {
  char tmpl[] = "/tmp/nsrun-sr-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  REQUIRE(::mkdir((root + "/ws").c_str(), 0700) == 0);
  REQUIRE(::mkdir((root + "/ws/sub").c_str(), 0700) == 0);
  REQUIRE(::mkdir((root + "/out").c_str(), 0700) == 0);
  Policy where;
  where.mode = Mode::read_only;
  where.preset = false;
  where.writable = {root + "/ws"};
  for (const char* inside : {"/ws/r.json", "/ws/sub/r.json"}) {
    where.report_path = root + inside;
    auto sink = ReportSink::open_outside_writable(where);
    REQUIRE(!sink);
    CHECK(sink.error().message().find("may write") != std::string::npos);
    CHECK(::access(where.report_path.c_str(), F_OK) != 0);  // nothing made
  }
  where.report_path = root + "/out/r.json";
  auto sink = ReportSink::open_outside_writable(where);
  REQUIRE(sink);
  json::Value report = json::Value::object();
  report.set("schema_version", 1);
  REQUIRE(sink->write(report));
  for (const char* f : {"/out/r.json"}) ::unlink((root + f).c_str());
  for (const char* d : {"/out", "/ws/sub", "/ws", ""}) ::rmdir((root + d).c_str());
}
