// Protected paths and hidden credentials, the pure parts: the protected set
// and its matching rule (what `nsrun commit` asks), the decision for a
// missing path, the hidden credentials from a given host, the plan's steps
// and the Landlock split.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <map>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"
#include "mount/plan.hpp"
#include "policy/protect.hpp"
#include "policy/sockets.hpp"
#include "policy/validate.hpp"

using namespace nsrun;

namespace {

Policy workspace(std::string ws = "/w") {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = std::move(ws);
  return p;
}

}  // namespace

TEST_CASE("protected set: defaults with reasons, --protect, --unprotect, none", "[unit][protect]") {
  for (const auto& d : default_protected()) CHECK_FALSE(d.why.empty());
  for (const auto& d : default_credentials()) CHECK_FALSE(d.why.empty());
  Policy p = workspace();
  auto set = protected_paths(p);
  CHECK(set.front() == ".git/hooks");
  CHECK(std::find(set.begin(), set.end(), ".envrc") != set.end());
  CHECK(std::find(set.begin(), set.end(), ".gitmodules") == set.end());
  p.protect = {"./tools//run.sh/", ".vscode/tasks.json", "/w/abs/x"};
  p.unprotect = {".idea"};
  set = protected_paths(p);
  CHECK(std::find(set.begin(), set.end(), "tools/run.sh") != set.end());
  // Below a protected directory: kept by it already.
  CHECK(std::find(set.begin(), set.end(), ".vscode/tasks.json") == set.end());
  CHECK(std::find(set.begin(), set.end(), ".idea") == set.end());
  CHECK(std::find(set.begin(), set.end(), "/w/abs/x") != set.end());
  p.protect_defaults = false;
  p.unprotect.clear();
  CHECK(protected_paths(p) == std::vector<std::string>{"tools/run.sh", ".vscode/tasks.json", "/w/abs/x"});
  CHECK(protected_in_root("/w", protected_paths(p)) ==
        std::vector<std::string>{"tools/run.sh", ".vscode/tasks.json", "abs/x"});
  CHECK(protected_in_root("/other", protected_paths(p)) ==
        std::vector<std::string>{"tools/run.sh", ".vscode/tasks.json"});
}

TEST_CASE("match_protected: at, below, ancestor, none", "[unit][protect]") {
  const std::vector<std::string> set = {".git/hooks", ".git/config", ".envrc", "/abs/ignored"};
  CHECK(match_protected(".git/hooks", set) == ProtectMatch::protected_);
  CHECK(match_protected(".git/hooks/pre-commit", set) == ProtectMatch::protected_);
  CHECK(match_protected(".envrc", set) == ProtectMatch::protected_);
  CHECK(match_protected(".git", set) == ProtectMatch::ancestor);
  CHECK(match_protected("", set) == ProtectMatch::ancestor);
  CHECK(match_protected(".git/objects/ab/cd", set) == ProtectMatch::none);
  CHECK(match_protected(".envrc.bak", set) == ProtectMatch::none);
  CHECK(match_protected(".git/hooksx", set) == ProtectMatch::none);
  CHECK(normal_relative("a/./b//c/") == "a/b/c");
  CHECK_FALSE(normal_relative("a/../b"));
  CHECK_FALSE(normal_relative("/a"));
  CHECK_FALSE(normal_relative("./"));
}

TEST_CASE("a missing protected path: sealed below the root, not kept in the root or in .git", "[unit][protect]") {
  CHECK(missing_below("").state == ProtectState::not_kept);
  CHECK(missing_below(".git").state == ProtectState::not_kept);
  CHECK(missing_below(".git/info").state == ProtectState::sealed);
  CHECK(missing_below(".git/info").sealed_dir == ".git/info");
  CHECK(missing_below("conf/deep").state == ProtectState::sealed);
}

TEST_CASE("protection options are validated", "[unit][protect]") {
  Policy p = workspace();
  p.protect = {"../x"};
  CHECK_FALSE(validate_protection(p));
  p.protect = {"/elsewhere/x"};
  CHECK_FALSE(validate_protection(p));
  p.protect = {"/w/x", "a/b"};
  CHECK(validate_protection(p));
  p.unprotect = {"."};
  CHECK_FALSE(validate_protection(p));
  p.unprotect.clear();
  p.allow_read = {"relative"};
  CHECK_FALSE(validate_protection(p));
}

TEST_CASE("hidden credentials: existing, canonical, minus --allow-read", "[unit][credentials]") {
  const std::map<std::string, FoundPath> host = {
      {"/h/.npmrc", {"/h/.npmrc", false}},
      {"/h/.ssh", {"/h/.ssh", true}},
      {"/h/.aws", {"/data/aws", true}},  // a symlinked ~/.aws: hidden where it leads
      {"/h/.docker/config.json", {"/h/.docker/config.json", false}},
  };
  PathLookup lookup = [&](const std::string& p) -> std::optional<FoundPath> {
    auto it = host.find(p);
    if (it == host.end()) return std::nullopt;
    return it->second;
  };
  auto hidden = credentials_to_hide(std::vector<std::string>{"/h/"}, true, {}, lookup);
  REQUIRE(hidden);
  CHECK(*hidden == std::vector<std::string>{"/h/.npmrc", "/h/.ssh/", "/data/aws/", "/h/.docker/config.json"});
  auto allowed = credentials_to_hide(std::vector<std::string>{"/h"}, true, {"/h/.npmrc", "/data/aws"}, lookup);
  REQUIRE(allowed);
  CHECK(*allowed == std::vector<std::string>{"/h/.ssh/", "/h/.docker/config.json"});
  CHECK(credentials_to_hide(std::vector<std::string>{"/h"}, true, {"/h"}, lookup)->empty());
  CHECK(credentials_to_hide(std::vector<std::string>{"/h"}, false, {}, lookup)->empty());
  CHECK(credentials_to_hide(std::vector<std::string>{""}, true, {}, lookup)->empty());
  // Inside a hidden directory: the cover is the directory.
  CHECK_FALSE(credentials_to_hide(std::vector<std::string>{"/h"}, true, {"/h/.ssh/known_hosts"}, lookup));
}

TEST_CASE("hidden credentials: under $HOME and the account's home, whatever $HOME says", "[unit][credentials]") {
  // $HOME unset, `/`, `/tmp`, relative: the account's home still counts.
  CHECK(credential_homes("", std::string("/home/u")) == std::vector<std::string>{"/home/u"});
  CHECK(credential_homes("/", std::string("/home/u")) == std::vector<std::string>{"/", "/home/u"});
  CHECK(credential_homes("/tmp/", std::string("/home/u/")) == std::vector<std::string>{"/tmp", "/home/u"});
  CHECK(credential_homes("home/u", std::string("/home/u")) == std::vector<std::string>{"/home/u"});
  CHECK(credential_homes("/home/u/", std::string("/home/u")) == std::vector<std::string>{"/home/u"});
  CHECK(credential_homes("/home/u", std::nullopt) == std::vector<std::string>{"/home/u"});
  // Neither: nothing (the front end refuses).
  CHECK(credential_homes("", std::nullopt).empty());
  CHECK(credential_homes("rel", std::string("rel")).empty());

  const std::map<std::string, FoundPath> host = {
      {"/home/u/.ssh", {"/home/u/.ssh", true}},
      {"/home/u/.config/gh", {"/home/u/.config/gh", true}},
      {"/home/u/.pypirc", {"/home/u/.pypirc", false}},
      {"/other/.npmrc", {"/other/.npmrc", false}},
      {"/.netrc", {"/.netrc", false}},
  };
  PathLookup lookup = [&](const std::string& p) -> std::optional<FoundPath> {
    auto it = host.find(p);
    if (it == host.end()) return std::nullopt;
    return it->second;
  };
  auto both = credentials_to_hide(credential_homes("/other", std::string("/home/u")), true, {}, lookup);
  REQUIRE(both);
  CHECK(*both == std::vector<std::string>{"/other/.npmrc", "/home/u/.ssh/", "/home/u/.config/gh/", "/home/u/.pypirc"});
  // HOME=/: its candidates are /.ssh, /.netrc..., spelt without a double slash.
  auto root = credentials_to_hide(credential_homes("/", std::nullopt), true, {"/.netrc"}, lookup);
  REQUIRE(root);
  CHECK(root->empty());
  // Every default is relative and plain: no '..', no leading '/'.
  for (const auto& d : default_credentials()) CHECK(normal_relative(d.path) == std::string(d.path));
}

TEST_CASE("plan: one protect step per protected path and writable root, after the covers", "[unit][protect]") {
  Policy p = workspace();
  p.writable = {"/srv/out"};
  p.hidden_paths = {"/h/.npmrc", "/h/.ssh/"};
  auto plan = make_plan(p, HostFacts{1000, 1000, "/w"});
  REQUIRE(plan);
  const auto& m = plan->mounts;
  auto first_protect = std::find_if(m.begin(), m.end(), [](const MountStep& s) { return s.op == MountStep::Op::protect; });
  REQUIRE(first_protect != m.end());
  CHECK(std::all_of(first_protect, m.end(), [](const MountStep& s) { return s.op == MountStep::Op::protect; }));
  const std::size_t per_root = protected_paths(p).size();
  CHECK(static_cast<std::size_t>(m.end() - first_protect) == 2 * per_root);
  CHECK(first_protect->dest == "/w/.git/hooks");
  CHECK(first_protect->source == "/w");
  CHECK(first_protect->data == ".git/hooks");
  // The credentials: /dev/null over a file, an empty read-only tmpfs over a
  // directory, never made when missing (cover).
  auto npmrc = std::find_if(m.begin(), m.end(), [](const MountStep& s) { return s.dest == "/h/.npmrc"; });
  auto ssh = std::find_if(m.begin(), m.end(), [](const MountStep& s) { return s.dest == "/h/.ssh"; });
  REQUIRE(npmrc != m.end());
  REQUIRE(ssh != m.end());
  CHECK(npmrc->source == "/dev/null");
  CHECK(npmrc->cover);
  CHECK(ssh->op == MountStep::Op::tmpfs);
  CHECK(ssh->cover);
  // Read-only mode and the bwrap dialect have no writable roots to protect.
  Policy ro = workspace();
  ro.mode = Mode::read_only;
  auto ro_plan = make_plan(ro, HostFacts{});
  REQUIRE(ro_plan);
  CHECK(std::none_of(ro_plan->mounts.begin(), ro_plan->mounts.end(),
                     [](const MountStep& s) { return s.op == MountStep::Op::protect; }));
}

TEST_CASE("Landlock: hidden credentials by reading everything beside them; protected paths refused",
          "[unit][credentials][landlock]") {
  using namespace nsrun::landlock;
  Policy p = workspace("/srv/ws");
  p.hidden_paths = {"/home/u/.npmrc", "/home/u/.ssh/"};
  CHECK(hidden_ancestors(p.hidden_paths) == std::vector<std::string>{"/", "/home", "/home/u"});
  Inputs in;
  in.listings = {{"/", {"home", "usr", "srv"}}, {"/home", {"u", "v"}}, {"/home/u", {".npmrc", ".ssh", ".profile"}}};
  auto r = make_ruleset(p, 6, in);
  REQUIRE(r);
  auto rule = [&](std::string_view path) -> const PathRule* {
    auto it = std::find_if(r->rules.begin(), r->rules.end(), [&](const PathRule& x) { return x.path == path; });
    return it == r->rules.end() ? nullptr : &*it;
  };
  REQUIRE(rule("/"));
  CHECK(rule("/")->access == fs::read_dir);
  CHECK(rule("/home")->access == fs::read_dir);
  CHECK(rule("/home/u")->access == fs::read_dir);
  CHECK(rule("/usr")->access == (fs::read_file | fs::read_dir | fs::execute));
  CHECK(rule("/home/v"));
  CHECK(rule("/home/u/.profile"));
  // Opened through no symlink: one swapped in after the listing fails the
  // launch instead of granting its target.
  CHECK(rule("/home/u/.profile")->no_symlinks);
  CHECK_FALSE(rule("/home/u/.npmrc"));
  CHECK_FALSE(rule("/home/u/.ssh"));
  // A directory that could not be listed: the rung cannot keep them hidden.
  in.listings.erase("/home");
  CHECK_FALSE(make_ruleset(p, 6, in));
  // A writable root above a credential would grant reading it.
  Policy home = workspace("/home/u");
  home.hidden_paths = p.hidden_paths;
  Inputs all;
  all.listings = {{"/", {"home"}}, {"/home", {"u"}}, {"/home/u", {}}};
  auto refused = make_ruleset(home, 6, all);
  REQUIRE_FALSE(refused);
  INFO(refused.error().item);
  CHECK(refused.error().item.starts_with("hidden credential /home/u/.npmrc inside the writable root /home/u"));
  // Protected paths the namespace rung keeps with mounts.
  Inputs present;
  present.protected_present = {"/srv/ws/.git/config"};
  auto prot = make_ruleset(workspace("/srv/ws"), 6, present);
  REQUIRE_FALSE(prot);
  CHECK(prot.error().item.starts_with("protected path /srv/ws/.git/config"));
}

// A workspace on a case-insensitive file system reaches
// .git/hooks through any spelling; commit must refuse them all.
TEST_CASE("match_protected: any case spelling of a protected path", "[unit][protect][attack]") {
  const std::vector<std::string> set = {".git/hooks", ".envrc"};
  CHECK(match_protected(".GIT/Hooks/pre-commit", set) == ProtectMatch::protected_);
  CHECK(match_protected(".EnvRC", set) == ProtectMatch::protected_);
  CHECK(match_protected(".Git", set) == ProtectMatch::ancestor);
  CHECK(match_protected(".GIT/objects", set) == ProtectMatch::none);
}
