// The Landlock rung's plan for hidden credentials, cheaper per
// launch. A listed directory (trailing '/') gets a rule opened with
// O_DIRECTORY and no fstat; anything else keeps the fstat.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"
#include "seccomp/notify.hpp"
#include "seccomp/rules.hpp"

namespace {

using namespace nsrun;
using namespace nsrun::landlock;

TEST_CASE("Landlock plan: listed directories are marked, the rest and the hidden ones are not",
          "[unit][landlock][startup]") {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/srv/ws";
  p.hidden_paths = {"/home/u/.npmrc", "/home/u/.ssh/"};
  Inputs in;
  in.listings = {{"/", {"home/", "usr/", "vmlinuz"}},
                 {"/home", {"u/", "v/"}},
                 {"/home/u", {".npmrc", ".ssh/", ".profile", ".cache/"}}};
  auto r = make_ruleset(p, 6, in);
  REQUIRE(r);
  auto rule = [&](std::string_view path) -> const PathRule* {
    auto it = std::find_if(r->rules.begin(), r->rules.end(), [&](const PathRule& x) { return x.path == path; });
    return it == r->rules.end() ? nullptr : &*it;
  };
  // The ancestors: list only, known directories.
  for (const char* dir : {"/", "/home", "/home/u"}) {
    INFO(dir);
    REQUIRE(rule(dir));
    CHECK(rule(dir)->access == fs::read_dir);
    CHECK(rule(dir)->directory);
  }
  REQUIRE(rule("/usr"));
  CHECK(rule("/usr")->directory);
  CHECK(rule("/usr")->no_symlinks);
  REQUIRE(rule("/home/u/.cache"));
  CHECK(rule("/home/u/.cache")->directory);
  REQUIRE(rule("/vmlinuz"));
  CHECK_FALSE(rule("/vmlinuz")->directory);
  REQUIRE(rule("/home/u/.profile"));
  CHECK_FALSE(rule("/home/u/.profile")->directory);
  // No rule by either spelling for what is hidden or above it.
  CHECK_FALSE(rule("/home/u/.npmrc"));
  CHECK_FALSE(rule("/home/u/.ssh"));
  CHECK_FALSE(rule("/home/u/.ssh/"));
  CHECK_FALSE(rule("/home/u/"));
  CHECK(std::none_of(r->rules.begin(), r->rules.end(), [](const PathRule& x) { return x.path.ends_with('/') && x.path != "/"; }));
  // A listed non-directory is marked a file (its rights masked
  // to the file rights, no fstat); a directory or an ancestor never is.
  CHECK(rule("/vmlinuz")->file);
  CHECK(rule("/home/u/.profile")->file);
  CHECK_FALSE(rule("/usr")->file);
  CHECK_FALSE(rule("/home/u/.cache")->file);
  for (const char* dir : {"/", "/home", "/home/u"}) CHECK_FALSE(rule(dir)->file);
  // The private TMPDIR, just made by mkdir: a directory, every handled right.
  const PathRule tmp = tmpdir_rule(*r, "/tmp/nsrun-x");
  CHECK(tmp.directory);
  CHECK_FALSE(tmp.file);
  CHECK(tmp.access == r->handled_fs);
}

// The notifying filter's rules are built at the first notification from
// the filter's key: for every variant exactly the rules built eagerly
// before (notify_spec(filter_spec(key))), so each answer's errno is the
// same; no key, no rules (EPERM for everything, as an empty spec gave).
TEST_CASE("DenialLog: the rules from the key are the eager ones, for every filter variant", "[unit][seccomp][startup]") {
  for (unsigned i = 0; i < FilterKey::variants; ++i) {
    const FilterKey key = FilterKey::from_index(i);
    INFO(i);
    const FilterSpec eager = notify_spec(filter_spec(key));
    const DenialLog lazy(std::optional<FilterKey>{key});
    const FilterSpec& built = lazy.spec();
    CHECK(built.enabled == eager.enabled);
    CHECK(built.log == eager.log);
    CHECK(built.foreign_abi_err == eager.foreign_abi_err);
    CHECK(built.foreign_abi_always == eager.foreign_abi_always);
    CHECK(built.foreign_abi_allowed == eager.foreign_abi_allowed);
    CHECK(built.rules == eager.rules);
    CHECK(&lazy.spec() == &built);  // built once
  }
  const DenialLog none(std::optional<FilterKey>{});
  CHECK(none.spec().rules.empty());
  CHECK_FALSE(none.spec().enabled);
}

}  // namespace
