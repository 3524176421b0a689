// The protect guard without privileges: which calls it sends, which it
// answers EROFS (only a path a mount holds, or a directory on the way to
// one), the --unprotect entry it names, and the verdict's words.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cerrno>

#include "launch/refusals.hpp"
#include "launch/watch.hpp"
#include "policy/write_scope.hpp"
#include "seccomp/compile.hpp"
#include "seccomp/writes.hpp"

using namespace nsrun;
using Catch::Matchers::ContainsSubstring;

namespace {

WriteScope guarded() {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/home/u/ws";
  WriteScope s = write_scope(p, false);
  s.watch_all = false;
  s.held = {"/home/u/ws/.git/config", "/home/u/ws/.git/hooks", "/home/u/ws/.vscode"};
  return s;
}

}  // namespace

TEST_CASE("the guard sends renames only", "[protect-git-config]") {
  const FilterSpec g = protect_guard_spec();
  for (std::string_view call : {"rename", "renameat", "renameat2"}) CHECK(decide(g, call, {}).has_value());
  for (std::string_view call : {"unlink", "openat", "mkdir", "link"}) CHECK_FALSE(decide(g, call, {}).has_value());
  // Joined to a notifying variant, whose refusals stay refusals.
  const FilterSpec notify = notify_spec(filter_spec(FilterKey::from_index(FilterKey::variants - 1)));
  const FilterSpec joined = notify_guard_spec(notify);
  CHECK(joined.rules.size() == notify.rules.size() + 3);
  CHECK(watch_continues(notify, "renameat2", {}));
}

TEST_CASE("the guard answers EROFS only where a mount holds the path", "[protect-git-config]") {
  const WriteScope s = guarded();
  using P = std::vector<std::string>;
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/.git/config.lock", "/home/u/ws/.git/config"}) == EROFS);
  CHECK(guard_errno(s, "renameat2", P{"/home/u/ws/.git/hooks", "/home/u/ws/h"}) == EROFS);
  CHECK(guard_errno(s, "renameat", P{"/home/u/ws/.git", "/home/u/ws/g"}) == EROFS);  // pinned on the way
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/x", "/home/u/ws/.vscode"}) == EROFS);
  // Not held: the kernel decides (a protected path missing at launch is
  // said after the run, never refused on racy data).
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/x", "/home/u/ws/.envrc"}) == 0);
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/x", "/home/u/ws/.git/config.worktree"}) == 0);
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/a", "/home/u/ws/b"}) == 0);
  CHECK(guard_errno(s, "rename", P{"/home/u/ws/.git/index.lock", "/home/u/ws/.git/index"}) == 0);
  CHECK(guard_errno(s, "rename", P{"/home/u/ws", "/home/u/ws2"}) == 0);  // the root: not the guard's
  CHECK(guard_errno(s, "rename", P{"", "relative/.git/config"}) == 0);
  // Other calls, and the Landlock rung (no mounts), never.
  CHECK(guard_errno(s, "unlink", P{"/home/u/ws/.git/config"}) == 0);
  WriteScope ll = s;
  ll.landlock = true;
  CHECK(guard_errno(ll, "rename", P{"/home/u/ws/x", "/home/u/ws/.git/config"}) == 0);
}

TEST_CASE("the entry --unprotect names, case folded as the set matches", "[protect-git-config]") {
  const WriteScope s = guarded();
  CHECK(protected_entry(s, "/home/u/ws/.git/config") == ".git/config");
  CHECK(protected_entry(s, "/home/u/ws/.git/hooks/pre-commit") == ".git/hooks");
  CHECK(protected_entry(s, "/home/u/ws/.GIT/Config") == ".git/config");
  CHECK(protected_entry(s, "/home/u/ws/src/a.c") == "");
  CHECK(protected_entry(s, "/etc/passwd") == "");
}

TEST_CASE("the verdict names the path, the call, the errno and the remedy", "[protect-git-config]") {
  Verdict v;
  v.started = true;
  v.ended.how = "exit";
  v.ended.code = 4;
  v.writes_outside = {
      {"/home/u/ws/.git/config", "rename", WritePlace::protected_, 2, 10, ".git/config", EROFS},
      {"/home/u/ws/.git/hooks", "renameat2", WritePlace::protected_, 1, 10, ".git/hooks", EROFS},
  };
  RefusalFacts f;
  collect_refusals(v, f);
  REQUIRE(v.refusals.size() >= 2);
  CHECK(v.refusals[0].kind == "protected-path");
  CHECK(v.refusals[0].allow == "--unprotect .git/config");
  CHECK(v.refusals[0].count == 2);
  CHECK(v.refusals[0].words ==
        "protected path /home/u/ws/.git/config: rename refused with EROFS (read-only file system) \u00d72 (kept "
        "read-only: git or an editor runs what it says; --unprotect .git/config drops it from the set, or "
        "--workspace-mode cow lets it change for review by nsrun commit)");
  // The cow workspace is offered for the config only (its keys are reviewed).
  CHECK(v.refusals[1].allow == "--unprotect .git/hooks");
  CHECK_THAT(v.refusals[1].words, !ContainsSubstring("cow"));
  CHECK_THAT(verdict_line(v), ContainsSubstring("nsrun: protected path /home/u/ws/.git/config: rename refused"));
}
