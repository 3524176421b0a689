// nsrun's own work before the clone and after the command. Each call saved
// rests on an assumption; each test here fails when that assumption no longer
// holds.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "policy/cow.hpp"
#include "policy/policy.hpp"
#include "policy/protect.hpp"
#include "scratch.hpp"
#include "seccomp/precompiled.hpp"
#include "sys/fd.hpp"

using namespace nsrun;

namespace {

using nsrun_unit::Scratch;

Policy workspace_policy(const std::string& ws) {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = ws;
  return p;
}

const ProtectedPathState* find_state(const std::vector<ProtectedPathState>& states, const std::string& rel) {
  auto it = std::find_if(states.begin(), states.end(), [&](const ProtectedPathState& s) { return s.path == rel; });
  return it == states.end() ? nullptr : &*it;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Counts the directories a walk pins (the executor binds each on itself).
struct CountingPinner : DirPinner {
  int pins = 0;
  Result<void> pin(int, const std::string&, Fd&) override {
    ++pins;
    return {};
  }
};

}  // namespace

TEST_CASE("ProtectWalker: a scan goes into .git once; the walks below it see that directory", "[unit][edges]") {
  Scratch s("edges");
  s.mkdir(".git");
  s.mkdir(".git/hooks");
  s.write(".git/config", "[core]\n");
  ProtectWalker walker;
  auto hooks = walker.walk(s.fd.get(), ".git/hooks", nullptr);
  REQUIRE(hooks);
  CHECK(hooks->decision.state == ProtectState::read_only);
  // The host swaps .git for an empty one now: the pass goes on in the
  // .git its first walk went into (as if every walk had run then) ...
  REQUIRE(::rename(s.at(".git").c_str(), s.at("old-git").c_str()) == 0);
  s.mkdir(".git");
  auto config = walker.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(config);
  CHECK(config->decision.state == ProtectState::read_only);
  // ... and a missing name there is decided as below .git (not kept), not
  // as below the root.
  auto commondir = walker.walk(s.fd.get(), ".git/commondir", nullptr);
  REQUIRE(commondir);
  CHECK(commondir->decision.state == missing_below(".git").state);
  CHECK_FALSE(commondir->missing_at_root);
  // A new pass (the next scan, the next launch) sees the new .git.
  ProtectWalker next;
  auto again = next.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(again);
  CHECK(again->decision.state == ProtectState::not_kept);
}

TEST_CASE("ProtectWalker: a sealed directory below a shared one is handed over as its own fd", "[unit][edges]") {
  Scratch s("edges");
  s.mkdir("conf");
  s.mkdir("conf/deep");
  ProtectWalker walker;
  auto first = walker.walk(s.fd.get(), "conf/deep/run.sh", nullptr);
  REQUIRE(first);
  CHECK(first->decision.state == ProtectState::sealed);
  CHECK(first->decision.sealed_dir == "conf/deep");
  // Missing directly in the shared directory: sealed there, and the fd
  // handed over is a duplicate the caller owns (the walker's stays open).
  auto second = walker.walk(s.fd.get(), "conf/run.sh", nullptr);
  REQUIRE(second);
  CHECK(second->decision.state == ProtectState::sealed);
  CHECK(second->decision.sealed_dir == "conf");
  REQUIRE(second->at);
  struct stat a{}, b{};
  REQUIRE(::fstat(second->at.get(), &a) == 0);
  REQUIRE(::stat(s.at("conf").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  second->at.reset();
  auto third = walker.walk(s.fd.get(), "conf/other.sh", nullptr);
  REQUIRE(third);
  REQUIRE(third->at);
  CHECK(::fstat(third->at.get(), &a) == 0);
}

TEST_CASE("ProtectWalker: the executor's walks (with a pinner) each go into .git themselves", "[unit][edges]") {
  // The executor binds each directory on itself as it goes in and reopens
  // it: a shared fd would skip that pin for every later path below it.
  Scratch s("edges");
  s.mkdir(".git");
  s.mkdir(".git/hooks");
  s.write(".git/config", "[core]\n");
  ProtectWalker walker;
  CountingPinner pinner;
  REQUIRE(walker.walk(s.fd.get(), ".git/hooks", &pinner));
  REQUIRE(walker.walk(s.fd.get(), ".git/config", &pinner));
  CHECK(pinner.pins == 2);
}

TEST_CASE("rescan_not_kept: looks again at what was not kept, and sees what the run created", "[unit][edges]") {
  Scratch s("edges");
  s.mkdir(".git");
  s.write(".git/config", "[core]\n");
  const Policy p = workspace_policy(s.path);
  const auto before = scan_protected(p);
  REQUIRE(find_state(before, ".git/config"));
  CHECK(find_state(before, ".git/config")->decision.state == ProtectState::read_only);
  REQUIRE(find_state(before, ".envrc"));
  CHECK(find_state(before, ".envrc")->decision.state == ProtectState::not_kept);
  CHECK(find_state(before, ".git/commondir")->decision.state == ProtectState::not_kept);
  // During the run: the not-kept paths are created (by the command or the
  // host), and a kept one changes too.
  s.write(".envrc", "eval evil\n");
  s.write(".git/commondir", "elsewhere\n");
  REQUIRE(::unlink(s.at(".git/config").c_str()) == 0);
  const auto after = rescan_not_kept(before);
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO(after[i].path);
    CHECK(after[i].root == before[i].root);
    CHECK(after[i].path == before[i].path);
  }
  CHECK(find_state(after, ".envrc")->decision.state == ProtectState::read_only);
  CHECK(find_state(after, ".git/commondir")->decision.state == ProtectState::read_only);
  // Not looked at again: it was held by a mount during the run, and only
  // a not-kept path is ever reported as created.
  CHECK(find_state(after, ".git/config")->decision.state == ProtectState::read_only);
  // For every path that was not kept, the answer a whole new scan gives.
  const auto fresh = scan_protected(p);
  REQUIRE(fresh.size() == after.size());
  for (std::size_t i = 0; i < after.size(); ++i)
    if (before[i].decision.state == ProtectState::not_kept) {
      INFO(after[i].path);
      CHECK(after[i].decision.state == fresh[i].decision.state);
    }
}

TEST_CASE("rescan_not_kept: a root gone since is unreachable, as a new scan says", "[unit][edges]") {
  Scratch s("edges");
  s.mkdir("ws");
  const Policy p = workspace_policy(s.at("ws"));
  const auto before = scan_protected(p);
  REQUIRE_FALSE(before.empty());
  REQUIRE(::rmdir(s.at("ws").c_str()) == 0);
  const auto after = rescan_not_kept(before);
  REQUIRE(after.size() == before.size());
  for (const auto& st : after) CHECK(st.decision.state == ProtectState::unreachable);
}

TEST_CASE("git_protected_paths: .git opened once still tells a directory, a gitdir file and nothing", "[unit][edges]") {
  Scratch s("edges");
  s.mkdir("plain");
  CHECK(git_protected_paths({s.at("plain")}, "").value().empty());
  // A .git directory whose commondir points inside the root.
  s.mkdir("repo");
  s.mkdir("repo/.git");
  s.mkdir("repo/common");
  s.write("repo/.git/commondir", "../common\n");
  auto repo = git_protected_paths({s.at("repo")}, "").value();
  CHECK(has(repo, s.at("repo/common/hooks")));
  CHECK(has(repo, s.at("repo/common/config")));
  // The same .git searchable but not readable (an unprivileged caller
  // cannot open it O_RDONLY): still a directory, still followed.
  REQUIRE(::chmod(s.at("repo/.git").c_str(), 0111) == 0);
  auto hidden = git_protected_paths({s.at("repo")}, "").value();
  CHECK(has(hidden, s.at("repo/common/hooks")));
  REQUIRE(::chmod(s.at("repo/.git").c_str(), 0755) == 0);
  // A .git file naming the git directory (git init --separate-git-dir).
  s.mkdir("sep");
  s.mkdir("sep/gd");
  s.mkdir("sep/gd/hooks");
  s.write("sep/.git", "gitdir: gd\n");
  auto sep = git_protected_paths({s.at("sep")}, "").value();
  CHECK(has(sep, s.at("sep/gd/hooks")));
  // A .git that is neither: nothing.
  s.mkdir("odd");
  s.write("odd/.git", "not a gitdir line\n");
  CHECK(git_protected_paths({s.at("odd")}, "").value().empty());
}

TEST_CASE("existing_home_base: missing, a file, and a directory named through a symlink", "[unit][edges]") {
  Scratch s("edges");
  Policy p = workspace_policy(s.path);
  p.layers.home_base = s.at("state/nsrun/home");
  CHECK(existing_home_base(p).empty());
  s.mkdir("state");
  s.mkdir("state/nsrun");
  s.write("state/nsrun/home", "");
  CHECK(existing_home_base(p).empty());
  REQUIRE(::unlink(s.at("state/nsrun/home").c_str()) == 0);
  s.mkdir("real-home");
  REQUIRE(::symlink(s.at("real-home").c_str(), s.at("state/nsrun/home").c_str()) == 0);
  char real[PATH_MAX];
  REQUIRE(::realpath(s.at("real-home").c_str(), real) != nullptr);
  CHECK(existing_home_base(p) == real);
  // --allow-read of it shows it.
  p.allow_read.push_back(s.at("state/nsrun/home"));
  CHECK(existing_home_base(p).empty());
}

TEST_CASE("precompiled_syscall_name: the table made at compile time names the calls", "[unit][edges]") {
  // The generated table is constexpr now (no constructor runs before
  // main); it must still answer as it did.
  CHECK(precompiled_syscall_name(2) == "open");
  CHECK(precompiled_syscall_name(435) == "clone3");
  CHECK(precompiled_syscall_name(437) == "openat2");
  CHECK(precompiled_syscall_name(-1).empty());
  CHECK(precompiled_syscall_name(100000).empty());
}

TEST_CASE("git_protected_paths: the user's git config is read once a root has a git directory, for every such root",
          "[unit][edges]") {
  // The global configs are read only when the first root with a git
  // directory is met; the roots before it (none) and after it (the same
  // text) must get what they got when the configs were read up front.
  Scratch s("edges");
  // Only this test's HOME: an XDG_CONFIG_HOME of the caller's would be read too.
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = xdg != nullptr ? xdg : "";
  ::unsetenv("XDG_CONFIG_HOME");
  s.mkdir("home");
  s.write("home/.gitconfig", "[core]\n\thooksPath = .githooks\n");
  s.mkdir("plain");
  for (const char* repo : {"repo1", "repo2"}) {
    s.mkdir(repo);
    s.mkdir(std::string(repo) + "/.git");
  }
  const auto out = git_protected_paths({s.at("plain"), s.at("repo1"), s.at("repo2")}, s.at("home")).value();
  CHECK(has(out, s.at("repo1/.githooks")));
  CHECK(has(out, s.at("repo2/.githooks")));
  CHECK_FALSE(has(out, s.at("plain/.githooks")));
  // The repository's own config still wins over the user's.
  s.write("repo2/.git/config", "[core]\n\thooksPath = own-hooks\n");
  const auto again = git_protected_paths({s.at("repo1"), s.at("repo2")}, s.at("home")).value();
  CHECK(has(again, s.at("repo1/.githooks")));
  CHECK(has(again, s.at("repo2/own-hooks")));
  if (xdg != nullptr) ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
}
