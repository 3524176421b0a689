// A spec made for the Landlock rung alone (SpecFor::landlock_only) unpacks
// none of the namespace rung's programs. The promise behind it: what the
// command loads on the Landlock rung (its rung spec's notifying, watching
// and extra programs; the rung's own filter comes from landlock::assess(),
// not from the spec) is the same, program for program, as from every
// rung's spec, protect guard armed or not; and the report's
// `seccomp_filter` says what it said when it was read from the unpacked
// program.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "launch/landlock_rung.hpp"
#include "launch/spec.hpp"
#include "policy/policy.hpp"
#include "seccomp/filter.hpp"
#include "seccomp/precompiled.hpp"
#include "scratch.hpp"
#include "unit_support.hpp"

using namespace nsrun;
using nsrun_unit::same_program;

namespace {

std::vector<Policy> policies(const std::string& ws) {
  std::vector<Policy> out;
  Policy base;
  base.mode = Mode::workspace_write;
  base.workspace = ws;
  out.push_back(base);
  Policy report = base;
  report.report_fd = 3;
  out.push_back(report);
  Policy verdict = base;
  verdict.verdict = true;
  verdict.network = Network::none;
  out.push_back(verdict);
  Policy watch = report;
  watch.watch_writes = true;
  out.push_back(watch);
  Policy watch_log = watch;
  watch_log.seccomp = SeccompMode::log;
  out.push_back(watch_log);
  Policy none = report;
  none.seccomp = SeccompMode::none;
  out.push_back(none);
  Policy proxy = report;
  proxy.network = Network::proxy;
  out.push_back(proxy);
  Policy userns = report;
  userns.disable_userns = true;
  userns.assert_userns_disabled = true;
  out.push_back(userns);
  Policy unix_none = base;
  unix_none.unix_sockets = UnixSockets::none;
  unix_none.verdict = true;
  out.push_back(unix_none);
  return out;
}

}  // namespace

TEST_CASE("the Landlock rung loads the same programs from a spec made for it alone as from every rung's spec",
          "[unit][landlock][spec-for]") {
  nsrun_unit::Scratch s("landlock-programs");
  s.mkdir("ws");
  // A protected path that mounts hold: the namespace rung's guard is armed
  // on every rung's spec, never on the Landlock rung's.
  const std::vector<std::string> held{s.at("ws") + "/.git"};
  for (const Policy& p : policies(s.at("ws"))) {
    auto full = prepare(p, SpecFor::every_rung);
    auto lean = prepare(p, SpecFor::landlock_only);
    REQUIRE(full);
    REQUIRE(lean);
    REQUIRE(arm_protect_guard(*full, p, held));
    REQUIRE(arm_protect_guard(*lean, p, held));
    // The report's seccomp_filter, read from the key where it was read
    // from the unpacked program.
    CHECK(filter_loads(lean->filter) == !full->seccomp.empty());
    CHECK(filter_loads(full->filter) == !full->seccomp.empty());
    for (const std::optional<uint16_t> port : {std::optional<uint16_t>(), std::optional<uint16_t>(3128)}) {
      auto limits_full = rung_limits(p, FilterRung::landlock);
      auto limits_lean = rung_limits(p, FilterRung::landlock);
      REQUIRE(limits_full);
      REQUIRE(limits_lean);
      const LaunchSpec a = landlock::rung_spec(*full, std::move(*limits_full), "", port);
      const LaunchSpec b = landlock::rung_spec(*lean, std::move(*limits_lean), "", port);
      CHECK(b.observe == a.observe);
      CHECK(same_program(b.seccomp_notify, a.seccomp_notify));
      REQUIRE(b.seccomp_notify_key.has_value() == a.seccomp_notify_key.has_value());
      if (a.seccomp_notify_key) CHECK(b.seccomp_notify_key->index() == a.seccomp_notify_key->index());
      CHECK(same_program(b.watch_writes, a.watch_writes));
      REQUIRE(b.extra_seccomp.size() == a.extra_seccomp.size());
      for (std::size_t i = 0; i < a.extra_seccomp.size(); ++i) CHECK(same_program(b.extra_seccomp[i], a.extra_seccomp[i]));
      REQUIRE(b.write_scope.has_value() == a.write_scope.has_value());
      if (a.write_scope) {
        CHECK(b.write_scope->landlock == a.write_scope->landlock);
        CHECK(b.write_scope->watch_all == a.write_scope->watch_all);
        CHECK(b.write_scope->writable == a.write_scope->writable);
        CHECK(b.write_scope->held == a.write_scope->held);
      }
      CHECK(b.require_listener == a.require_listener);
      CHECK(b.limits.use_cgroup == a.limits.use_cgroup);
      CHECK(b.env == a.env);
      // The rung's own filter (Readiness::seccomp) does not come from the
      // spec, and the spec's namespace program is never loaded there.
      CHECK(b.seccomp.empty());
    }
  }
}

TEST_CASE("filter_loads() and the filter's size read from the table agree with the unpacked program, every key",
          "[unit][landlock][spec-for]") {
  for (unsigned i = 0; i < FilterKey::variants; ++i) {
    const FilterKey key = FilterKey::from_index(i);
    auto program = precompiled_filter(key);
    REQUIRE(program);
    CHECK(precompiled_filter_size(key) == program->size());
    CHECK(filter_loads(key) == !program->empty());
  }
}
