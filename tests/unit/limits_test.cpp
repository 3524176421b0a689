// Limits without privileges: the value syntaxes, the choice of
// mechanism per limit (never claimed when not real), the Policy JSON round
// trip, the notifying filter's shape and the --verdict line.
#include <catch2/catch_test_macros.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

#include "launch/watch.hpp"
#include "policy/limits.hpp"
#include "policy/policy_json.hpp"
#include "seccomp/rules.hpp"

using namespace nsrun;

TEST_CASE("sizes, durations, cores and counts parse exactly or not at all", "[limits]") {
  CHECK(parse_size("x", "1048576").value() == 1048576);
  CHECK(parse_size("x", "512M").value() == 512ULL << 20);
  CHECK(parse_size("x", "2G").value() == 2ULL << 30);
  CHECK(parse_size("x", "64k").value() == 64ULL << 10);
  CHECK(parse_size("x", "1.5G").value() == 3ULL << 29);
  CHECK(parse_size("x", "1MiB").value() == 1ULL << 20);
  for (auto bad : {"", "0", "M", "-1", "12Q", "1.G", "1e9", "99999999999999999999", "17179869184T"})
    CHECK_FALSE(parse_size("x", bad).has_value());
  CHECK(parse_duration_ms("--timeout", "30").value() == 30000);
  CHECK(parse_duration_ms("--timeout", "30s").value() == 30000);
  CHECK(parse_duration_ms("--timeout", "500ms").value() == 500);
  CHECK(parse_duration_ms("--timeout", "1.5s").value() == 1500);
  CHECK(parse_duration_ms("--timeout", "2m").value() == 120000);
  CHECK(parse_duration_ms("--kill-after", "0").value() == 0);
  for (auto bad : {"", "0", "soon", "1y", "-1", "1.0001s", "100000h"})
    CHECK_FALSE(parse_duration_ms("--timeout", bad).has_value());
  CHECK(parse_cores("x", "0.5").value() == 500);
  CHECK(parse_cores("x", "2").value() == 2000);
  CHECK_FALSE(parse_cores("x", "0").has_value());
  CHECK_FALSE(parse_cores("x", "0.0001").has_value());
  CHECK(parse_count("x", "64").value() == 64);
  for (auto bad : {"0", "-3", "1.5", "", "99999999"}) CHECK_FALSE(parse_count("x", bad).has_value());
}

TEST_CASE("--rlimit NAME=SOFT[:HARD] in each resource's own unit", "[limits]") {
  CHECK(parse_rlimit("--rlimit", "nofile=64").value() == RlimitSetting{"nofile", 64, 64});
  CHECK(parse_rlimit("--rlimit", "nofile=64:128").value() == RlimitSetting{"nofile", 64, 128});
  CHECK(parse_rlimit("--rlimit", "as=1G").value() == RlimitSetting{"as", 1ULL << 30, 1ULL << 30});
  CHECK(parse_rlimit("--rlimit", "core=0").value() == RlimitSetting{"core", 0, 0});
  CHECK(parse_rlimit("--rlimit", "cpu=10:unlimited").value().hard == RLIM_INFINITY);
  for (auto bad : {"nofile", "bogus=1", "nofile=10:5", "nofile=x", "=1", "as=12Q"}) {
    auto r = parse_rlimit("--rlimit", bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == ErrorKind::usage);
  }
  Limits l;
  CHECK(effective_rlimits(l) == std::vector<RlimitSetting>{{"core", 0, 0}});
  l.rlimits = {{"nofile", 1, 2}, {"core", 5, 5}, {"nofile", 3, 4}};
  CHECK(effective_rlimits(l) == std::vector<RlimitSetting>{{"core", 5, 5}, {"nofile", 3, 4}});
  Limits asis;  // the bwrap dialect's: no default core=0
  asis.no_core_dumps = false;
  CHECK(effective_rlimits(asis).empty());
}

namespace {
LimitDecision decision(const LimitsPlan& p, std::string_view limit) {
  for (const auto& d : p.decisions)
    if (d.limit == limit) return d;
  return {};
}
}  // namespace

TEST_CASE("each limit gets the strongest mechanism the host offers, and none is never silent", "[limits]") {
  Limits l;
  l.memory = 64ULL << 20;
  l.pids = 10;
  l.timeout_ms = 1000;
  LimitFacts user;  // namespaces rung, own user namespace, not root, no cgroup
  SECTION("without a cgroup, strict refuses memory: RLIMIT_AS is not the sandbox's memory") {
    auto p = plan_limits(l, user);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().kind == ErrorKind::usage);
    CHECK(p.error().message().find("memory (only a cgroup limits the sandbox's memory") != std::string::npos);
    CHECK(p.error().message().find("RLIMIT_AS") != std::string::npos);
  }
  SECTION("unprivileged on the namespace rung: rlimits keep pids; memory as RLIMIT_AS only when best effort") {
    l.mode = LimitsMode::best_effort;
    auto p = plan_limits(l, user);
    REQUIRE(p.has_value());
    CHECK(decision(*p, "memory").how == LimitEnforcement::rlimit);
    CHECK(decision(*p, "memory").detail.find("best-effort") != std::string::npos);
    CHECK(decision(*p, "pids").how == LimitEnforcement::rlimit);
    CHECK(decision(*p, "timeout").how == LimitEnforcement::timer);
    // PID 1 counts in the user namespace's process count.
    CHECK(std::ranges::count(p->rlimits, RlimitSetting{"nproc", 11, 11}) == 1);
    CHECK(std::ranges::count(p->rlimits, RlimitSetting{"as", 64ULL << 20, 64ULL << 20}) == 1);
    CHECK_FALSE(p->use_cgroup);
  }
  SECTION("root: RLIMIT_NPROC does not bind uid 0, so pids is refused") {
    LimitFacts root = user;
    root.kernel_root = true;
    auto p = plan_limits(l, root);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().kind == ErrorKind::usage);
    CHECK(p.error().message().find("pids") != std::string::npos);
    l.mode = LimitsMode::best_effort;
    auto b = plan_limits(l, root);
    REQUIRE(b.has_value());
    CHECK(decision(*b, "pids").how == LimitEnforcement::none);
    CHECK(std::ranges::none_of(b->rlimits, [](const RlimitSetting& r) { return r.name == "nproc"; }));
  }
  SECTION("the Landlock rung: no user namespace, no tmpfs") {
    LimitFacts ll = user;
    ll.namespaces_rung = false;
    ll.new_user_ns = false;
    CHECK_FALSE(plan_limits(l, ll).has_value());
    Limits t;
    t.tmpfs_size = 1 << 20;
    CHECK_FALSE(plan_limits(t, ll).has_value());
    CHECK(decision(plan_limits(t, user).value(), "tmpfs").how == LimitEnforcement::mount);
  }
  SECTION("a rung that cannot end the sandbox at once refuses --timeout unless best-effort") {
    Limits t;
    t.timeout_ms = 5000;
    LimitFacts ll = user;
    ll.namespaces_rung = false;
    ll.new_user_ns = false;
    CHECK(plan_limits(t, ll).has_value());
    ll.ends_all_at_once = false;
    auto strict = plan_limits(t, ll);
    REQUIRE_FALSE(strict.has_value());
    CHECK(strict.error().message().find("timeout") != std::string::npos);
    CHECK(strict.error().message().find("fork bomb") != std::string::npos);
    t.mode = LimitsMode::best_effort;
    auto b = plan_limits(t, ll);
    REQUIRE(b.has_value());
    CHECK(decision(*b, "timeout").how == LimitEnforcement::timer);
    CHECK(decision(*b, "timeout").detail.find("one process at a time") != std::string::npos);
  }
  SECTION("a cgroup with the controllers wins, for the whole sandbox") {
    LimitFacts cg = user;
    cg.kernel_root = true;
    cg.cgroup = cg.cgroup_memory = cg.cgroup_pids = cg.cgroup_cpu = true;
    l.cpu_millis = 500;
    auto p = plan_limits(l, cg);
    REQUIRE(p.has_value());
    CHECK(p->use_cgroup);
    CHECK(decision(*p, "memory").how == LimitEnforcement::cgroup);
    CHECK(decision(*p, "pids").how == LimitEnforcement::cgroup);
    CHECK(decision(*p, "cpu").how == LimitEnforcement::cgroup);
    CHECK(p->cgroup_pids == 11u);
    CHECK(std::ranges::none_of(p->rlimits, [](const RlimitSetting& r) { return r.name == "as" || r.name == "nproc"; }));
  }
  SECTION("cpu has no rlimit: refused without a cgroup") {
    Limits c;
    c.cpu_millis = 500;
    CHECK_FALSE(plan_limits(c, user).has_value());
  }
  SECTION("require-cgroup refuses without one, whatever was asked") {
    Limits r;
    r.mode = LimitsMode::require_cgroup;
    auto p = plan_limits(r, user);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().message().find("require-cgroup") != std::string::npos);
  }
}

TEST_CASE("limits round-trip through the Policy JSON", "[limits][policy]") {
  Policy p;
  p.limits.memory = 1ULL << 30;
  p.limits.pids = 64;
  p.limits.cpu_millis = 1500;
  p.limits.timeout_ms = 2500;
  p.limits.kill_after_ms = 100;
  p.limits.rlimits = {{"nofile", 64, 128}, {"cpu", 5, RLIM_INFINITY}};
  p.limits.tmpfs_size = 1 << 20;
  p.limits.mode = LimitsMode::best_effort;
  p.verdict = true;
  auto back = from_json(to_json(p), Policy{});
  REQUIRE(back.has_value());
  CHECK(back->limits == p.limits);
  CHECK(back->verdict);
  auto doc = json::parse(R"({"limits": {"memory": "512M", "pids": 10, "cpu": 2, "timeout": "30s"}})");
  REQUIRE(doc.has_value());
  auto q = from_json(*doc, Policy{});
  REQUIRE(q.has_value());
  CHECK(q->limits.memory == 512ULL << 20);
  CHECK(q->limits.cpu_millis == 2000u);
  CHECK(q->limits.timeout_ms == 30000u);
  for (auto bad : {R"({"limits": {"memory": 0}})", R"({"limits": {"memory": "lots"}})", R"({"limits": {"nope": 1}})",
                   R"({"limits": {"rlimits": ["x=1"]}})", R"({"limits": {"timeout": 5}})", R"({"limits": []})"}) {
    auto d = json::parse(bad);
    REQUIRE(d.has_value());
    auto r = from_json(*d, Policy{});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == ErrorKind::usage);
  }
}

TEST_CASE("the notifying filter refuses listeners of the command's own and leaves clone3 alone", "[limits][seccomp]") {
  for (unsigned i = 0; i < FilterKey::variants; ++i) {
    const FilterKey key = FilterKey::from_index(i);
    const FilterSpec plain = filter_spec(key);
    const FilterSpec n = notify_spec(plain);
    // --network proxy on the Landlock rung: connect() and listen() notify
    // in log mode too (nsrun answers them; net/connector.hpp).
    const bool answered = key.proxy && key.landlock && !key.deny_inet;
    if (!plain.enabled || (plain.log && !answered)) {
      CHECK_FALSE(n.enabled);
      continue;
    }
    REQUIRE(n.enabled);
    // Same answers as the plain filter for every rule it has...
    for (const Rule& r : plain.rules) {
      std::array<uint64_t, 6> args{};
      if (r.arg && !r.arg->greater) args[r.arg->index] = r.arg->value;
      CHECK(decide(n, r.syscall, args) == decide(plain, r.syscall, args));
    }
    // ... and one more: no SECCOMP_FILTER_FLAG_NEW_LISTENER (8) for the command.
    CHECK(decide(n, "seccomp", {1, 8, 0, 0, 0, 0}) == EPERM);
    CHECK(decide(n, "seccomp", {1, 0, 0, 0, 0, 0}) == std::nullopt);
    for (const Rule& r : n.rules)
      CHECK(r.notify == (plain.log ? r.syscall == "connect" || r.syscall == "listen"
                                   : r.err != ENOSYS && r.syscall != "seccomp"));
  }
}

