// The Landlock downgrade table (ABI 1..7) and what the rung refuses to
// approximate; the ladder's reason codes from errors; the parent pid the
// rung reads from /proc/<pid>/stat. Pure: no kernel.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>

#include <algorithm>
#include <map>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"
#include "launch/ladder.hpp"
#include "launch/landlock_rung.hpp"
#include "policy/presets.hpp"

using namespace nsrun;
using namespace nsrun::landlock;

namespace {

Policy workspace_policy() {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/w";
  return p;
}

const PathRule* rule_for(const Ruleset& r, std::string_view path) {
  auto it = std::find_if(r.rules.begin(), r.rules.end(), [&](const PathRule& x) { return x.path == path; });
  return it == r.rules.end() ? nullptr : &*it;
}

constexpr auto op = mount_op;

}  // namespace

TEST_CASE("Landlock downgrade table, ABI 1 to 7", "[unit][landlock]") {
  struct Row {
    int abi;
    bool refer, truncate, ioctl, scoped;
    Enforcement enforcement;
    std::vector<std::string> dropped;
  };
  const std::vector<Row> table{
      {1, false, false, false, false, Enforcement::partial, {"truncate", "ioctl-dev", "scope-signal", "scope-abstract-unix"}},
      {2, true, false, false, false, Enforcement::partial, {"truncate", "ioctl-dev", "scope-signal", "scope-abstract-unix"}},
      {3, true, true, false, false, Enforcement::partial, {"ioctl-dev", "scope-signal", "scope-abstract-unix"}},
      {4, true, true, false, false, Enforcement::partial, {"ioctl-dev", "scope-signal", "scope-abstract-unix"}},
      {5, true, true, true, false, Enforcement::partial, {"scope-signal", "scope-abstract-unix"}},
      {6, true, true, true, true, Enforcement::full, {}},
      {7, true, true, true, true, Enforcement::full, {}},
  };
  for (const Row& row : table) {
    DYNAMIC_SECTION("ABI " << row.abi) {
      auto r = make_ruleset(workspace_policy(), row.abi, Inputs{{"/dev/pts/3"}, "/tmp/nsrun-x"});
      REQUIRE(r);
      CHECK(r->abi == row.abi);
      CHECK(((r->handled_fs & fs::refer) != 0) == row.refer);
      CHECK(((r->handled_fs & fs::truncate) != 0) == row.truncate);
      CHECK(((r->handled_fs & fs::ioctl_dev) != 0) == row.ioctl);
      CHECK((r->scoped == (scope::signal | scope::abstract_unix_socket)) == row.scoped);
      CHECK((r->scoped == 0) == !row.scoped);
      CHECK(r->handled_net == 0);  // network shared: nothing to deny
      CHECK(r->enforcement == row.enforcement);
      CHECK(r->dropped == row.dropped);
      // Every rule stays inside what the ruleset handles (else EINVAL).
      for (const auto& rule : r->rules) CHECK((rule.access & ~r->handled_fs) == 0);
      // read-only everywhere, full rights only where writes are promised
      const PathRule* root = rule_for(*r, "/");
      REQUIRE(root);
      CHECK(root->access == (fs::read_file | fs::read_dir | fs::execute));
      for (const char* w : {"/w", "/tmp/nsrun-x"}) {
        const PathRule* rule = rule_for(*r, w);
        REQUIRE(rule);
        CHECK(rule->access == r->handled_fs);
      }
      for (const char* d : {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts/3"}) {
        const PathRule* rule = rule_for(*r, d);
        REQUIRE(rule);
        CHECK((rule->access & ~fs::file_rights) == 0);
        CHECK((rule->access & fs::write_file) != 0);
      }
    }
  }
}

TEST_CASE("Landlock network none: TCP denied from ABI 4, never full", "[unit][landlock]") {
  Policy p = workspace_policy();
  p.network = Network::none;
  for (int abi = 1; abi <= 7; ++abi) {
    auto r = make_ruleset(p, abi, {});
    REQUIRE(r);
    INFO("ABI " << abi);
    CHECK(r->handled_net == (abi >= 4 ? net::bind_tcp | net::connect_tcp : 0));
    CHECK(r->enforcement == Enforcement::partial);
    CHECK(std::count(r->dropped.begin(), r->dropped.end(), "network-tcp") == (abi < 4 ? 1 : 0));
    CHECK(std::count(r->dropped.begin(), r->dropped.end(), "network-other") == 1);
  }
}

TEST_CASE("read-only mode: no writable root but the private TMPDIR", "[unit][landlock]") {
  Policy p = workspace_policy();
  p.mode = Mode::read_only;
  auto r = make_ruleset(p, 7, Inputs{{}, "/tmp/nsrun-y"});
  REQUIRE(r);
  CHECK(rule_for(*r, "/w") == nullptr);
  REQUIRE(rule_for(*r, "/tmp/nsrun-y"));
  for (const auto& rule : r->rules)
    if (rule.path != "/tmp/nsrun-y" && rule.why != "device") CHECK((rule.access & fs::write_file) == 0);
}

TEST_CASE("the rung refuses what it cannot express, naming the item", "[unit][landlock]") {
  using K = MountOp::Kind;
  CHECK(cannot_express(workspace_policy()).empty());
  Policy extra = workspace_policy();
  extra.writable = {"/data"};
  extra.mounts.push_back(op(K::ro_bind, "/etc", "/etc"));  // already read-only: expressible
  CHECK(cannot_express(extra).empty());

  const std::map<std::string, std::function<void(Policy&)>> cases{
      {"tmpfs /srv", [](Policy& p) { p.mounts.push_back(op(K::tmpfs, "", "/srv")); }},
      {"hide /home", [](Policy& p) { p.mounts.push_back(op(K::hide, "", "/home")); }},
      {"bind /a -> /b", [](Policy& p) { p.mounts.push_back(op(K::bind, "/a", "/b")); }},
      {"ro-bind /a -> /b", [](Policy& p) { p.mounts.push_back(op(K::ro_bind, "/a", "/b")); }},
      {"ro-bind /w/.git inside the writable /w", [](Policy& p) { p.mounts.push_back(op(K::ro_bind, "/w/.git", "/w/.git")); }},
      {"dev-bind /dev", [](Policy& p) { p.mounts.push_back(op(K::dev_bind, "/dev", "/dev")); }},
      {"symlink /x", [](Policy& p) { p.mounts.push_back(op(K::symlink, "/y", "/x")); }},
      {"proc /p2", [](Policy& p) { p.mounts.push_back(op(K::proc, "", "/p2")); }},
      {"dev /d2", [](Policy& p) { p.mounts.push_back(op(K::dev, "", "/d2")); }},
      {"--proc none", [](Policy& p) { p.proc = ProcMode::none; }},
      {"uid 0", [](Policy& p) { p.uid = 0; }},
      {"capabilities kept inside (--cap-add)", [](Policy& p) { p.cap_add = {"CAP_NET_ADMIN"}; }},
      {"--as-pid-1", [](Policy& p) { p.as_pid_1 = true; }},
      {"a root other than the host's / (the first mount must bind / on /)", [](Policy& p) {
         p.preset = false;
         p.mounts = {op(K::tmpfs, "", "/")};
       }},
  };
  for (const auto& [item, change] : cases) {
    DYNAMIC_SECTION(item) {
      Policy p = workspace_policy();
      change(p);
      CHECK(cannot_express(p) == item);
      auto r = make_ruleset(p, 7, {});
      REQUIRE_FALSE(r);
      CHECK(r.error().item == item);
    }
  }
}

TEST_CASE("a later writable bind over a read-only one is expressible", "[unit][landlock]") {
  Policy p = workspace_policy();
  p.mounts.push_back(op(MountOp::Kind::ro_bind, "/data/ro", "/data/ro"));
  p.mounts.push_back(op(MountOp::Kind::bind, "/data", "/data"));
  CHECK(cannot_express(p).empty());
}

TEST_CASE("reason codes from namespace-rung errors", "[unit][ladder]") {
  auto err = [](Operation op, int e, std::string_view path = {}) { return sys_error(op, path, e); };
  for (int e : {EPERM, EINVAL, ENOSPC, EUSERS})
    CHECK(classify_namespace_failure(err(Operation::clone, e, "CLONE_NEWUSER"), ProcMode::fresh) == clone_refused);
  CHECK(classify_namespace_failure(err(Operation::clone, ENOMEM), ProcMode::fresh).empty());
  CHECK(classify_namespace_failure(err(Operation::write_uid_map, EPERM, "/proc/self/uid_map"), ProcMode::fresh) ==
        reason::idmap_denied);
  CHECK(classify_namespace_failure(err(Operation::write_setgroups, EACCES, "/proc/self/setgroups"), ProcMode::fresh) ==
        reason::idmap_denied);
  CHECK(classify_namespace_failure(err(Operation::mount_proc, EPERM, "/proc"), ProcMode::fresh) == reason::proc_masked);
  // Not the host's refusal: never a reason to move.
  CHECK(classify_namespace_failure(err(Operation::mount_proc, EPERM, "/proc"), ProcMode::host_bind).empty());
  CHECK(classify_namespace_failure(err(Operation::mount_proc, ENODEV, "/proc"), ProcMode::fresh).empty());
  CHECK(classify_namespace_failure(err(Operation::bind, ENOENT, "/no/such"), ProcMode::fresh).empty());
  CHECK(classify_namespace_failure(err(Operation::chdir, ENOENT, "/x"), ProcMode::fresh).empty());
}

TEST_CASE("which namespace the host refused", "[unit][ladder]") {
  const uint64_t all = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  auto refusing = [](uint64_t bad) {
    return [bad](uint64_t flags) { return (flags & bad) != 0 ? EPERM : 0; };
  };
  CHECK(diagnose_clone(all, refusing(CLONE_NEWUSER)) == reason::userns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWPID)) == reason::pidns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWNS)) == reason::mntns_denied);
  CHECK(diagnose_clone(all | CLONE_NEWNET, refusing(CLONE_NEWNET)) == reason::netns_denied);
  CHECK(diagnose_clone(all, refusing(CLONE_NEWCGROUP)) == reason::cgroupns_denied);
  CHECK(diagnose_clone(all, [](uint64_t) { return 0; }) == reason::ns_denied);
}

TEST_CASE("the parent pid of a /proc/<pid>/stat line", "[unit][landlock]") {
  CHECK(parent_in_stat("4242 (sleep) S 17 4242 17 0 -1 4194560 95 0 0 0\n") == 17);
  CHECK(parent_in_stat("1 (init) S 0 1 1 0 -1") == 0);
  // A command name may hold spaces and parentheses: "a) R 99 (b" must not
  // be taken for the fields.
  CHECK(parent_in_stat("77 (a) R 99 (b) Z 1234 77 77 0\n") == 1234);
  CHECK(parent_in_stat("78 ( x ) ) S 5") == 5);
  CHECK(parent_in_stat("79 ()) S 6 79") == 6);

  CHECK(parent_in_stat("") == -1);
  CHECK(parent_in_stat("garbage") == -1);
  CHECK(parent_in_stat("80 (cut") == -1);
  CHECK(parent_in_stat("81 (x)") == -1);
  CHECK(parent_in_stat("82 (x) S") == -1);
  CHECK(parent_in_stat("83 (x) S ") == -1);
  CHECK(parent_in_stat("84 (x) S abc 1") == -1);
  CHECK(parent_in_stat("85 (x) S 12abc 1") == -1);
  CHECK(parent_in_stat("86 (x) S -3 1") == -1);
  CHECK(parent_in_stat("87 (x)  S 1 1") == -1);
}

TEST_CASE("a writable / is refused: no private /proc, /dev or /sys to keep out of it", "[unit][landlock]") {
  Policy p = workspace_policy();
  p.workspace = "/";
  CHECK(cannot_express(p).starts_with("a writable /"));
  p = workspace_policy();
  p.writable = {"/"};
  CHECK(cannot_express(p).starts_with("a writable /"));
  p.mode = Mode::read_only;
  p.writable = {};
  p.workspace = "/";
  CHECK(cannot_express(p).empty());
}

TEST_CASE("a writable / from the mount list (bwrap's --bind / /) is refused too", "[unit][landlock]") {
  Policy p;
  p.preset = false;
  p.mounts = {op(MountOp::Kind::bind, "/", "/"), op(MountOp::Kind::proc, "", "/proc"), op(MountOp::Kind::dev, "", "/dev")};
  CHECK(cannot_express(p).starts_with("a writable /"));
  p.mounts[0] = op(MountOp::Kind::ro_bind, "/", "/");
  CHECK(cannot_express(p).empty());
}
