// The report's keys are written in one place (to_json, src/launch/report.cpp)
// and declared in one other (docs/report.schema.json): these tests hold the
// two to the same set without a launch. Reports that take every branch of
// the writer conform to the schema (no key the schema lacks, none it
// requires left out), and together write every key the schema declares (no
// key the writer lost). docs/limits.md names only keys the schema has.
#include <catch2/catch_test_macros.hpp>

#include <set>
#include <string>
#include <vector>

#include "../support/report_schema.hpp"
#include "launch/report.hpp"
#include "policy/json.hpp"
#include "source_file.hpp"

using namespace nsrun;
using json::Value;

namespace {

// A command that ran, with something in every list and every optional
// section: each key the writer has.
LaunchReport everything() {
  LaunchReport r;
  r.rung = "namespaces";
  r.host_backend = "lakebox";
  r.landlock_abi = 6;
  r.landlock_enforcement = "partial";
  r.landlock_dropped = {"truncate"};
  r.landlock_refused = {"file-metadata"};
  r.rungs = {RungReport{"namespaces", true, "", ""}, RungReport{"landlock", false, "not-tried", "not needed"}};
  r.phases = {PhaseTime{"probe", 120}, PhaseTime{"exec", 80}};
  r.protected_paths = {ProtectedReport{"/ws/.git/hooks", "quarantined", "changed", "hooks.nsrun-1"}};
  r.hidden_credentials = {"/home/u/.ssh/"};
  r.exit_code = 1;
  r.error = usage_error("--report", "an error");
  Verdict& v = r.verdict;
  v.started = true;
  v.ended = Ended{"signal", 137, 9, "memory", false};
  v.usage = Usage{1000, 200, 100, 1 << 20, "memory.peak", 3};
  v.denials_observed = true;
  v.denials = {Denial{"ptrace", 101, 2, 1234, "0x10 0x0 0x0"}};
  v.limits = {LimitDecision{"memory", LimitEnforcement::cgroup, "memory.max"}};
  v.writes_watched = true;
  v.writes_observed = true;
  v.writes_outside = {WriteAttempt{"/etc/x", "openat", WritePlace::outside, 1, 1234, "", 0}};
  v.writes_outside_dropped = 4;
  v.refusals = {Refusal{"seccomp", "ptrace", "--allow-nested-userns", 2, "ptrace refused"}};
  v.unobserved = {{"read-only-root", "a write refused with EROFS is the kernel's answer"}};
  r.layers = LaunchReport::Layers{"run-1", "/runs/run-1/upper", "cow", "/layers/home/upper", {"XDG_CACHE_HOME"}};
  r.network = std::vector<egress::Decision>{
      egress::Decision{"2026-01-01T00:00:00.000Z", "http-connect", "example.com", 443, "192.0.2.1", "denied",
                       "blocked-by-allowlist", "*.example.org", {"cdn.example.net"}, 2}};
  return r;
}

// A launch refused before the command ran: the keys that are null or
// absent then.
LaunchReport refused() {
  LaunchReport r;
  r.rung = "none";
  r.rungs = {RungReport{"namespaces", false, "userns-denied", "clone: Operation not permitted"}};
  r.error = usage_error("--mode", "unknown value");
  r.seccomp_filter = false;
  return r;
}

// A run whose listeners could not be had: "unobserved" in place of lists.
LaunchReport unobserved() {
  LaunchReport r = everything();
  r.verdict.denials_observed = false;
  r.verdict.writes_observed = false;
  r.layers = {};
  r.layers.home = "ro";
  r.network.reset();
  return r;
}

// Every key path in a value: "landlock.abi", "rungs[].detail".
void written_paths(const Value& v, const std::string& at, std::set<std::string>& out) {
  if (v.is_object()) {
    for (const auto& [key, value] : v.as_object()) {
      const std::string path = at.empty() ? key : at + "." + key;
      out.insert(path);
      written_paths(value, path, out);
    }
  } else if (v.is_array()) {
    for (const Value& item : v.as_array()) written_paths(item, at + "[]", out);
  }
}

// Every key path the schema declares, in the same spelling; `maps`: the
// objects whose keys are data (a limit's name), not declared one by one.
void declared_paths(const Value& schema, const std::string& at, std::set<std::string>& out,
                    std::set<std::string>& maps) {
  if (!schema.is_object()) return;
  if (const Value* props = schema.find("properties"))
    for (const auto& [key, sub] : props->as_object()) {
      const std::string path = at.empty() ? key : at + "." + key;
      out.insert(path);
      declared_paths(sub, path, out, maps);
    }
  if (const Value* more = schema.find("additionalProperties"); more != nullptr && more->is_object())
    maps.insert(at);
  if (const Value* items = schema.find("items")) declared_paths(*items, at + "[]", out, maps);
  if (const Value* any = schema.find("anyOf"))
    for (const Value& alt : any->as_array()) declared_paths(alt, at, out, maps);
}

}  // namespace

TEST_CASE("every report the writer makes conforms to docs/report.schema.json", "[report-fields]") {
  for (const LaunchReport& r : {everything(), refused(), unobserved()}) {
    const Value doc = to_json(r);
    INFO(json::dump(doc));
    for (const auto& e : nsrun_test::report_schema_errors(doc)) FAIL_CHECK(e);
  }
}

TEST_CASE("every key docs/report.schema.json declares is one the writer writes", "[report-fields]") {
  std::set<std::string> declared, maps, written;
  declared_paths(nsrun_test::report_schema(), "", declared, maps);
  REQUIRE(declared.size() > 50);
  for (const LaunchReport& r : {everything(), refused(), unobserved()}) written_paths(to_json(r), "", written);
  for (const std::string& path : declared) {
    INFO("docs/report.schema.json declares " << path << ", which no report here has (gone from to_json, or a "
         "new section this test does not fill yet)");
    CHECK(written.count(path) == 1);
  }
  // The other way round is the schema's additionalProperties: false,
  // checked above; it holds for every object the schema declares.
  for (const std::string& path : written) {
    if (maps.count(path.substr(0, path.rfind('.'))) == 1) continue;
    INFO(path);
    CHECK(declared.count(path) == 1);
  }
}

TEST_CASE("docs/limits.md names only report keys the schema declares", "[report-fields]") {
  const std::string text = source_file("docs/limits.md");
  const std::size_t begin = text.find("\n## The verdict in the report\n");
  REQUIRE(begin != std::string::npos);
  const std::size_t end = text.find("\n## ", begin + 1);
  const std::string section = text.substr(begin, end - begin);
  const Value* top = nsrun_test::report_schema().find("properties");
  REQUIRE(top != nullptr);
  std::size_t named = 0;
  // Each "- `key`: ..." item, and the "{a, b, c}" of its item objects.
  for (std::size_t at = section.find("\n- `"); at != std::string::npos; at = section.find("\n- `", at + 1)) {
    const std::size_t close = section.find('`', at + 4);
    const std::string key = section.substr(at + 4, close - at - 4);
    INFO("docs/limits.md describes the report key `" << key << "`");
    const Value* schema = top->find(key);
    REQUIRE(schema != nullptr);
    ++named;
    const std::size_t brace = section.find("`{", close);
    if (brace == std::string::npos || brace > section.find("\n- ", close)) continue;
    // An object, or a list of objects (either alternative of an anyOf).
    std::vector<const Value*> objects{schema};
    if (const Value* any = schema->find("anyOf"))
      for (const Value& alt : any->as_array()) objects.push_back(&alt);
    std::set<std::string> keys;
    for (const Value* o : objects) {
      const Value* props = o->find("items") ? o->find("items")->find("properties") : o->find("properties");
      if (props != nullptr)
        for (const auto& [k, unused] : props->as_object()) keys.insert(k);
    }
    std::string list = section.substr(brace + 2, section.find('}', brace) - brace - 2);
    for (std::size_t from = 0; from <= list.size();) {
      std::size_t comma = list.find(',', from);
      if (comma == std::string::npos) comma = list.size();
      std::string k = list.substr(from, comma - from);
      while (!k.empty() && (k.front() == ' ' || k.front() == '\n')) k.erase(0, 1);
      INFO("its object's key `" << k << "`");
      CHECK(keys.count(k) == 1);
      from = comma + 1;
    }
  }
  CHECK(named >= 6);
}
