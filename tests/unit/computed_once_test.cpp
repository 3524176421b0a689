// What a launch computes once and keeps (the protected set, the writable
// roots, the scan of both) is what a fresh computation gives: the launch
// reads the kept value where it would have computed it again.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "launch/protect_watch.hpp"
#include "policy/policy.hpp"
#include "policy/protect.hpp"
#include "scratch.hpp"

using namespace nsrun;

namespace {

void check_same_scan(const std::vector<ProtectedPathState>& kept, const std::vector<ProtectedPathState>& fresh) {
  REQUIRE(kept.size() == fresh.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    INFO(fresh[i].root << " " << fresh[i].path);
    CHECK(kept[i].root == fresh[i].root);
    CHECK(kept[i].path == fresh[i].path);
    CHECK(kept[i].decision.state == fresh[i].decision.state);
    CHECK(kept[i].decision.sealed_dir == fresh[i].decision.sealed_dir);
  }
}

}  // namespace

TEST_CASE("watch_protected: its roots, set and scan are each a fresh computation's", "[unit][protect][computed-once]") {
  nsrun_unit::Scratch s("computed-once");
  s.mkdir("ws");
  s.mkdir("ws/.git");
  s.write("ws/.git/config", "[core]\n");
  s.mkdir("extra");
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = s.at("ws");
  p.writable.push_back(s.at("extra"));
  p.protect.push_back("notes/secret");
  p.unprotect.push_back(".envrc");
  const ProtectWatch w = watch_protected(p);
  CHECK(w.roots == writable_roots(p));
  CHECK(w.set == protected_paths(p));
  REQUIRE_FALSE(w.before.empty());
  check_same_scan(w.before, scan_protected(p));
  // The overload with the caller's roots and set is the one-argument scan.
  check_same_scan(scan_protected(p, writable_roots(p), protected_paths(p)), scan_protected(p));
}

TEST_CASE("scan_protected: an empty protected set scans nothing, either way", "[unit][protect][computed-once]") {
  nsrun_unit::Scratch s("computed-once");
  s.mkdir("ws");
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = s.at("ws");
  p.protect_defaults = false;
  REQUIRE(protected_paths(p).empty());
  CHECK(scan_protected(p).empty());
  CHECK(scan_protected(p, writable_roots(p), protected_paths(p)).empty());
  CHECK(watch_protected(p).before.empty());
}

TEST_CASE("protected_paths: the defaults alone are what the general loop makes of them", "[unit][protect][computed-once]") {
  // The usual launch takes the defaults as they stand; a caller's path
  // (here one the defaults hold already, so the set is the same) sends the
  // computation through the loop that drops repeats and paths below others.
  Policy plain;
  Policy looped;
  looped.protect.push_back(".git/hooks");
  const auto kept = protected_paths(plain);
  CHECK(kept == protected_paths(looped));
  REQUIRE(kept.size() == default_protected().size());
  for (std::size_t i = 0; i < kept.size(); ++i) CHECK(kept[i] == default_protected()[i].path);
  Policy none;
  none.protect_defaults = false;
  CHECK(protected_paths(none).empty());
  Policy none_looped = none;
  none_looped.unprotect.push_back(".envrc");
  CHECK(protected_paths(none_looped).empty());
}
