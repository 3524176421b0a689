// A file shown inside a hidden directory (Policy::shown_in_hidden, from
// --allow-read ~/.ssh/known_hosts): the plan's and the ruleset's part,
// pure. The attacks on the host are tests/integration/allow_read_inside_test.cpp.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"
#include "mount/plan.hpp"
#include "plan_support.hpp"
#include "policy/policy_json.hpp"
#include "policy/protect.hpp"

using namespace nsrun;
using Op = MountStep::Op;

namespace {

Policy shown_policy() {
  Policy p = plan_support::workspace_policy();
  p.home = HomeMode::ro;
  p.hidden_paths = {"/home/u/.ssh/", "/home/u/.netrc"};
  p.allow_read = {"/home/u/.ssh/known_hosts"};
  p.shown_in_hidden = {"/home/u/.ssh/known_hosts"};
  return p;
}

}  // namespace

TEST_CASE("allow-read: the hidden directory's cover is sealed, then the file bound on an empty one made in it",
          "[allow-read]") {
  auto plan = make_plan(shown_policy(), plan_support::host());
  REQUIRE(plan);
  const auto& m = plan->mounts;
  auto at = [&](Op op, std::string_view dest) {
    return std::find_if(m.begin(), m.end(), [&](const MountStep& s) { return s.op == op && s.dest == dest; });
  };
  auto cover = at(Op::tmpfs, "/home/u/.ssh");
  auto point = at(Op::write_file, "/home/u/.ssh/known_hosts");
  auto file = at(Op::bind, "/home/u/.ssh/known_hosts");
  auto seal = at(Op::set_attr, "/home/u/.ssh");
  REQUIRE(cover != m.end());
  REQUIRE(point != m.end());
  REQUIRE(file != m.end());
  REQUIRE(seal != m.end());
  CHECK(cover < point);
  CHECK(point < seal);
  CHECK(seal < file);
  CHECK(point->data.empty());
  CHECK(point->source.empty());  // made in the cover, not bound from the staging area
  CHECK((cover->attrs & attr::rdonly) == 0);
  CHECK((seal->attrs & attr::rdonly) != 0);
  CHECK((file->attrs & attr::rdonly) != 0);
  CHECK(file->source == "/home/u/.ssh/known_hosts");
  CHECK(file->no_symlinks);
  CHECK(file->one_link);
  CHECK(file->dest_is_file);
  // Nothing after the file's bind touches the directory.
  CHECK(std::none_of(file + 1, m.end(), [](const MountStep& s) { return s.dest.starts_with("/home/u/.ssh"); }));

  // Without a shown file, the cover is read-only from the start.
  Policy plain = shown_policy();
  plain.shown_in_hidden.clear();
  auto p2 = make_plan(plain, plan_support::host());
  REQUIRE(p2);
  auto c2 = std::find_if(p2->mounts.begin(), p2->mounts.end(),
                         [](const MountStep& s) { return s.op == Op::tmpfs && s.dest == "/home/u/.ssh"; });
  REQUIRE(c2 != p2->mounts.end());
  CHECK((c2->attrs & attr::rdonly) != 0);
}

TEST_CASE("allow-read: the Landlock rule is the file's alone, one link, through no symlink", "[allow-read]") {
  using namespace nsrun::landlock;
  Policy p = shown_policy();
  Inputs in;
  in.listings = {{"/", {"home/"}}, {"/home", {"u/"}}, {"/home/u", {".netrc", ".ssh/", "ws/"}}};
  auto r = make_ruleset(p, 6, in);
  REQUIRE(r);
  auto rule = [&](std::string_view path) -> const PathRule* {
    auto it = std::find_if(r->rules.begin(), r->rules.end(), [&](const PathRule& x) { return x.path == path; });
    return it == r->rules.end() ? nullptr : &*it;
  };
  REQUIRE(rule("/home/u/.ssh/known_hosts"));
  CHECK(rule("/home/u/.ssh/known_hosts")->access == fs::read_file);
  CHECK(rule("/home/u/.ssh/known_hosts")->one_link);
  CHECK(rule("/home/u/.ssh/known_hosts")->no_symlinks);
  CHECK_FALSE(rule("/home/u/.ssh"));
}

TEST_CASE("allow-read: a shown file must lie inside a hidden directory, named plainly; JSON keeps it",
          "[allow-read]") {
  Policy p = shown_policy();
  CHECK(validate_protection(p));
  auto back = from_json(to_json(p));
  REQUIRE(back);
  CHECK(back->shown_in_hidden == p.shown_in_hidden);
  for (const char* bad : {"/home/u/.netrc2", "/home/u/.ssh/", "/home/u/.ssh/../.aws/credentials", "relative",
                          "/home/u/.profile"}) {
    INFO(bad);
    Policy q = shown_policy();
    q.shown_in_hidden = {bad};
    CHECK_FALSE(validate_protection(q));
  }
  Policy dots = shown_policy();
  dots.allow_read = {"/home/u/.ssh/x/../id_rsa"};
  CHECK_FALSE(validate_protection(dots));
}
