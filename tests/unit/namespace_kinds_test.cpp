// The namespace table (src/sys/namespaces.hpp) is complete, and every use
// derived from it gives the answer its former hand-kept list gave.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>

#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "launch/ladder.hpp"
#include "mount/plan.hpp"
#include "ns/status.hpp"
#include "policy/json.hpp"
#include "policy/policy.hpp"
#include "policy/policy_json.hpp"
#include "sys/flags.hpp"
#include "sys/namespaces.hpp"

using namespace nsrun;

namespace {
constexpr uint64_t every_flag[] = {CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNS,    CLONE_NEWNET,
                                   CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP};
}  // namespace

TEST_CASE("every CLONE_NEW* flag nsrun uses has exactly one row", "[namespace-kinds]") {
  CHECK(namespace_kinds.size() == std::size(every_flag));
  uint64_t all = 0;
  for (uint64_t f : every_flag) {
    int rows = 0;
    for (const auto& k : namespace_kinds) rows += k.clone_flag == f ? 1 : 0;
    CHECK(rows == 1);
    all |= f;
  }
  CHECK(all_namespace_flags == all);
  std::set<std::string_view> names, flag_names, denied;
  for (const auto& k : namespace_kinds) {
    CHECK(std::popcount(k.clone_flag) == 1);
    names.insert(k.name);
    flag_names.insert(k.flag_name);
    denied.insert(k.denied);
    // Only the mount namespace, always made, has no Namespaces field.
    CHECK(k.in_policy == (k.clone_flag != CLONE_NEWNS));
    CHECK((namespace_field(k.clone_flag) != nullptr) == k.in_policy);
  }
  CHECK(names.size() == namespace_kinds.size());
  CHECK(flag_names.size() == namespace_kinds.size());
  CHECK(denied.size() == namespace_kinds.size());
  CHECK(namespace_kind(CLONE_NEWUTS)->name == "uts");
  CHECK(namespace_kind(CLONE_NEWTIME) == nullptr);
}

TEST_CASE("the ladder's reason codes are the table's", "[namespace-kinds]") {
  CHECK(namespace_kind(CLONE_NEWUSER)->denied == reason::userns_denied);
  CHECK(namespace_kind(CLONE_NEWPID)->denied == reason::pidns_denied);
  CHECK(namespace_kind(CLONE_NEWNS)->denied == reason::mntns_denied);
  CHECK(namespace_kind(CLONE_NEWNET)->denied == reason::netns_denied);
  CHECK(namespace_kind(CLONE_NEWIPC)->denied == reason::ipcns_denied);
  CHECK(namespace_kind(CLONE_NEWUTS)->denied == reason::utsns_denied);
  CHECK(namespace_kind(CLONE_NEWCGROUP)->denied == reason::cgroupns_denied);
}

TEST_CASE("clone flag names keep their order", "[namespace-kinds]") {
  CHECK(clone_flag_names(all_namespace_flags) ==
        "CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS|CLONE_NEWCGROUP");
  CHECK(clone_flag_names(CLONE_NEWUTS | CLONE_NEWNS) == "CLONE_NEWNS|CLONE_NEWUTS");
  CHECK(clone_flag_names(0) == "0");
  CHECK(clone_flag_names(CLONE_NEWNET | 0x1) == "CLONE_NEWNET|0x1");
}

TEST_CASE("diagnose_clone tries user, then mount, then the rest in order", "[namespace-kinds]") {
  const uint64_t all = all_namespace_flags;
  auto refusing = [](uint64_t refused) {
    return [refused](uint64_t flags) { return (flags & refused) != 0 ? 1 : 0; };
  };
  CHECK(diagnose_clone(all, refusing(CLONE_NEWUSER)) == reason::userns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWNS | CLONE_NEWPID)) == reason::mntns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWPID | CLONE_NEWCGROUP)) == reason::pidns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWNET)) == reason::netns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWIPC)) == reason::ipcns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWUTS | CLONE_NEWCGROUP)) == reason::utsns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWCGROUP)) == reason::cgroupns_denied);
  CHECK(diagnose_clone(all & ~CLONE_NEWCGROUP, refusing(CLONE_NEWCGROUP)) == reason::ns_denied);
  // Without a user namespace the others are tried alone.
  int tries = 0;
  CHECK(diagnose_clone(CLONE_NEWNS | CLONE_NEWUTS, [&](uint64_t flags) {
          ++tries;
          CHECK((flags & CLONE_NEWUSER) == 0);
          return flags == CLONE_NEWUTS ? 1 : 0;
        }) == reason::utsns_denied);
  CHECK(tries == 2);
}

TEST_CASE("the policy's namespaces object is written and read as before", "[namespace-kinds]") {
  Policy p;
  p.ns.uts = false;
  p.ns.net = true;
  const json::Value doc_out = to_json(p);
  const json::Value* ns = doc_out.find("namespaces");
  REQUIRE(ns != nullptr);
  CHECK(json::dump(*ns, false) ==
        R"({"user":true,"pid":true,"net":true,"ipc":true,"uts":false,"cgroup":true})");
  auto doc = json::parse(R"({"namespaces": {"user": false, "pid": false, "net": true, "ipc": false,
                                             "uts": false, "cgroup": false}})");
  REQUIRE(doc);
  auto read = from_json(*doc);
  REQUIRE(read);
  CHECK(read->ns == Namespaces{false, false, true, false, false, false});
  auto mnt = json::parse(R"({"namespaces": {"mnt": false}})");
  REQUIRE(mnt);
  auto refused = from_json(*mnt);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().step == "policy field 'namespaces.mnt'");
  CHECK(refused.error().detail == "unknown field");
}

TEST_CASE("a plan's clone flags follow the policy's namespaces", "[namespace-kinds]") {
  Policy p;
  p.network = Network::none;
  auto plan = make_plan(p, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->clone_flags == all_namespace_flags);
  p.ns = Namespaces{false, false, false, false, false, false};
  p.network = Network::share;
  plan = make_plan(p, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->clone_flags == CLONE_NEWNS);
  p.network = Network::none;
  p.ns.uts = true;
  plan = make_plan(p, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->clone_flags == (CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS));
}

TEST_CASE("the start status lists namespaces by link name, without the user one", "[namespace-kinds]") {
  const NamespaceIds ids = namespace_ids("self", all_namespace_flags);
  std::string names;
  for (const auto& [name, ino] : ids) names += name + " ";
  // A kernel without cgroup namespaces has no link for it.
  CHECK((names == "cgroup-namespace ipc-namespace mnt-namespace net-namespace pid-namespace uts-namespace " ||
         names == "ipc-namespace mnt-namespace net-namespace pid-namespace uts-namespace "));
}
