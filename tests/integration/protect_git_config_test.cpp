// Ordinary git in a workspace whose git configuration is protected gets a
// clear refusal, never a riddle: on the namespace rung a rename onto (or
// of) a protected path that a mount holds reads EROFS ("Read-only file
// system"), not the mount point's EBUSY, the report lists it as a
// `protected-path` refusal and the verdict names the path and the option
// that allows it. Nothing of the protected set changes on the host.
#include "cow_support.hpp"
#include "git_support.hpp"
#include "harness.hpp"
#include "report_schema.hpp"
#include "reported.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

// A repository made on the host, as the user has it before the run.
void host_repo(const TempDir& ws) {
  REQUIRE(git_in(ws.path(), {"init", "-q", "."}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "user.email", "owner@example.invalid"}).exit_code == 0);
}

std::vector<const nsrun::json::Value*> protected_refusals(const nsrun::json::Value& report) {
  for (const auto& e : report_schema_errors(report)) FAIL_CHECK(e);
  std::vector<const nsrun::json::Value*> out;
  const nsrun::json::Value* list = report.is_object() ? report.find("refusals") : nullptr;
  if (list == nullptr || !list->is_array()) return out;
  for (const auto& r : list->as_array())
    if (str(r.find("kind")) == "protected-path") out.push_back(&r);
  return out;
}

}  // namespace

TEST_CASE("git config and git remote add inside read EROFS, named in the verdict and the report",
          "[protect-git-config]") {
  require_userns();
  if (!git_installed()) SKIP("git is not installed");
  TempDir ws;
  host_repo(ws);
  const std::string before = read_file(ws / ".git/config");
  auto r = run_reported(ws, {"--verdict", "--", "sh", "-c",
                             "git config user.name intruder; echo config=$?; "
                             "git remote add origin https://example.invalid/x; echo remote=$?; exit 7"});
  INFO(r.run.out << r.run.err);
  CHECK(r.run.exit_code == 7);
  // git's own words: the errno is one it explains.
  CHECK_THAT(r.run.out, ContainsSubstring("config=4"));
  CHECK_THAT(r.run.out, ContainsSubstring("remote=128"));
  CHECK_THAT(r.run.err, ContainsSubstring("could not write config file .git/config: Read-only file system"));
  CHECK_THAT(r.run.err, !ContainsSubstring("Device or resource busy"));
  // The verdict: the path, the call, the option.
  CHECK_THAT(r.run.err, ContainsSubstring("nsrun: protected path " + ws / ".git/config" +
                                          ": rename refused with EROFS (read-only file system) \u00d72"));
  CHECK_THAT(r.run.err, ContainsSubstring("--unprotect .git/config drops it from the set"));
  CHECK_THAT(r.run.err, ContainsSubstring("--workspace-mode cow"));
  auto found = protected_refusals(r.report);
  REQUIRE(found.size() == 1);
  CHECK(str(found[0]->find("what")) == ws / ".git/config");
  CHECK(str(found[0]->find("allow")) == "--unprotect .git/config");
  CHECK(found[0]->find("count")->as_int() == 2);
  // The host's file: the same bytes.
  CHECK(read_file(ws / ".git/config") == before);
}

TEST_CASE("without a report the refusal still reads EROFS", "[protect-git-config]") {
  require_userns();
  if (!git_installed()) SKIP("git is not installed");
  TempDir ws;
  host_repo(ws);
  const std::string before = read_file(ws / ".git/config");
  auto r = nsrun_test::nsrun({"--", "git", "config", "user.name", "intruder"}, at(ws));
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.err, ContainsSubstring("could not write config file .git/config: Read-only file system"));
  CHECK(read_file(ws / ".git/config") == before);
}

TEST_CASE("renames of the protected set and the directories on its way read EROFS; others run",
          "[protect-git-config]") {
  require_userns();
  TempDir ws;
  make_dir(ws / ".git");
  make_dir(ws / ".git/hooks");
  write_file(ws / ".git/config", "[core]\n");
  write_file(ws / ".git/hooks/pre-commit", "#!/bin/sh\n", 0755);
  write_file(ws / "a", "a\n");
  // Each line: a rename and what it must read. The renames that do not
  // touch the protected set run as they would have (the guard continues
  // them), among them one over a symlink to .git/config: rename replaces
  // the link, never what it names.
  const std::string script = R"SH(
try() { if out=$(mv "$1" "$2" 2>&1); then echo "$1 -> $2: ok"; else echo "$1 -> $2: $out"; fi; }
echo x > new
try new .git/config
try .git/config moved
try .git/hooks hooks2
try .git git2
ln -s .git/config link
echo y > over
try over link
try a b
exit 0
)SH";
  auto r = run_reported(ws, {"--", "sh", "-c", script});
  INFO(r.run.out << r.run.err);
  REQUIRE(r.run.exit_code == 0);
  CHECK_THAT(r.run.out, ContainsSubstring("new -> .git/config: mv: cannot move 'new' to '.git/config': Read-only file "
                                          "system"));
  CHECK_THAT(r.run.out, ContainsSubstring(".git/config -> moved: mv: cannot move '.git/config' to 'moved': Read-only "
                                          "file system"));
  CHECK_THAT(r.run.out, ContainsSubstring(".git/hooks -> hooks2: mv: cannot move '.git/hooks' to 'hooks2': Read-only "
                                          "file system"));
  CHECK_THAT(r.run.out, ContainsSubstring(".git -> git2: mv: cannot move '.git' to 'git2': Read-only file system"));
  CHECK_THAT(r.run.out, ContainsSubstring("over -> link: ok"));
  CHECK_THAT(r.run.out, ContainsSubstring("a -> b: ok"));
  CHECK_THAT(r.run.out, !ContainsSubstring("Device or resource busy"));
  CHECK(read_file(ws / ".git/config") == "[core]\n");
  CHECK(read_file(ws / ".git/hooks/pre-commit") == "#!/bin/sh\n");
  CHECK(read_link(ws / "link").empty());  // replaced by the file "over"
  CHECK(read_file(ws / "link") == "y\n");
  CHECK(read_file(ws / "b") == "a\n");
  auto found = protected_refusals(r.report);
  CHECK(found.size() >= 3);
}

TEST_CASE("git init in a workspace without .git works, and no missing path is called created",
          "[protect-git-config]") {
  require_userns();
  if (!git_installed()) SKIP("git is not installed");
  TempDir ws;
  auto r = nsrun_test::nsrun({"--", "sh", "-c", "git init -q . && git config user.name x && echo done"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "done\n");
  // .git/info exists now, .git/info/attributes does not: not "created".
  CHECK_FALSE(file_exists(ws / ".git/info/attributes"));
  CHECK_THAT(r.err, !ContainsSubstring(".git/info/attributes: created during the run"));
  // What was made is said (direct mode cannot keep it), as before.
  CHECK_THAT(r.err, ContainsSubstring(".git/config: created during the run"));
}

// The copy-on-write workspace: .git/config changes inside, `nsrun changes`
// shows them as keys, `nsrun commit` applies the ones that run nothing and
// refuses the others, naming them (exit 4, "protected"). Afterwards git on
// the host runs with the committed file and must not run anything planted.
TEST_CASE("cow: git config changes are reviewed as keys; the ones that run something are refused",
          "[protect-git-config][cow]") {
  require_userns();
  if (!git_installed()) SKIP("git is not installed");
  TempDir ws("gcfg-ws"), state("gcfg-state"), home("gcfg-home"), marks("gcfg-marks");
  host_repo(ws);
  const auto env = cow::layer_env(state, home.path());
  cow::settle_clock();
  const std::string m = marks.path();
  // Every shape of planting: keys through git, and text appended by hand
  // (mixed case, subsections, quotes and escapes, continuation lines).
  const std::string script =
      "git config user.name agent && git remote add origin https://example.invalid/r && "
      "git config core.fsmonitor 'touch " + m + "/fsmonitor; false' && "
      "git config alias.x '!touch " + m + "/alias' && "
      "git config include.path ../evil.cfg && "
      "git config 'includeIf.gitdir:/.path' ../evil.cfg && "
      "printf '[Core]\\n\\tPager = \"touch " + m + "/pager\\\\\n; cat\"\\n[filter \"x\"] clean = touch " + m +
      "/filter\\n[diff \"d\"]\\n\\ttextconv = touch " + m + "/textconv\\n' >> .git/config && "
      "git config --list >/dev/null";
  const std::string id = cow::cow_run(ws, env, script);
  auto changes = nsrun_test::nsrun({"changes", id}, cow::in(ws, env));
  INFO(changes.err);
  REQUIRE(changes.exit_code == 0);
  CHECK_THAT(changes.out, ContainsSubstring("M .git/config\n"));
  CHECK_THAT(changes.out, ContainsSubstring("  config + user.name = \"agent\"\n"));
  CHECK_THAT(changes.out, ContainsSubstring("  config + remote.origin.url = \"https://example.invalid/r\"\n"));
  CHECK_THAT(changes.out, ContainsSubstring("  config + core.fsmonitor = "));
  CHECK_THAT(changes.out, ContainsSubstring("(commit refuses it: runs the named program on every status)"));
  auto json = nsrun_test::nsrun({"changes", id, "--json"}, cow::in(ws, env));
  CHECK_THAT(json.out, ContainsSubstring("\"git_config\":{\"keys\":["));

  auto commit = nsrun_test::nsrun({"commit", id}, cow::in(ws, env));
  INFO(commit.err);
  CHECK(commit.exit_code == 4);
  for (std::string_view key : {"core.fsmonitor", "alias.x", "include.path", "includeif.gitdir:/.path", "core.pager",
                               "filter.x.clean", "diff.d.textconv"})
    CHECK_THAT(commit.err, ContainsSubstring("nsrun: .git/config: " + std::string(key) + " added not committed: "));
  CHECK_THAT(commit.err, ContainsSubstring("nsrun: .git/config: user.name added: applied"));
  CHECK_THAT(commit.err, ContainsSubstring("nsrun: .git/config: remote.origin.url added: applied"));
  // Host git reads the committed file and runs nothing planted.
  CHECK(chomp(run({"git", "config", "--file", ws / ".git/config", "user.name"}).out) == "agent");
  CHECK(chomp(run({"git", "config", "--file", ws / ".git/config", "remote.origin.url"}).out) ==
        "https://example.invalid/r");
  write_file(ws / "f.txt", "f\n");
  CHECK(git_in(ws.path(), {"status"}).exit_code == 0);
  CHECK(git_in(ws.path(), {"add", "f.txt"}).exit_code == 0);
  CHECK(git_in(ws.path(), {"diff", "--cached"}).exit_code == 0);
  (void)git_in(ws.path(), {"x"});
  for (std::string_view mark : {"fsmonitor", "alias", "pager", "filter", "textconv"}) {
    INFO(mark);
    CHECK_FALSE(file_exists(marks / std::string(mark)));
  }
  const std::string after = read_file(ws / ".git/config");
  CHECK_THAT(after, !ContainsSubstring("fsmonitor"));
  CHECK_THAT(after, !ContainsSubstring("evil"));
  // What was refused stays in the layer, and only that.
  auto left = nsrun_test::nsrun({"changes", id}, cow::in(ws, env));
  CHECK_THAT(left.out, !ContainsSubstring("user.name"));
  CHECK_THAT(left.out, ContainsSubstring("core.fsmonitor"));
}

TEST_CASE("cow: a .git/config the parser cannot be sure of is refused whole", "[protect-git-config][cow]") {
  require_userns();
  if (!git_installed()) SKIP("git is not installed");
  TempDir ws("gcfg-ws"), state("gcfg-state"), home("gcfg-home");
  host_repo(ws);
  const std::string before = read_file(ws / ".git/config");
  const auto env = cow::layer_env(state, home.path());
  cow::settle_clock();
  for (const std::string& script : {
           std::string("printf '[user]\\n\\tname = a\\0b\\n' >> .git/config"),          // a NUL byte
           std::string("printf '[user]\\n\\tname = \"open\\n' >> .git/config"),         // a quote left open
           std::string("head -c 1100000 /dev/zero | tr '\\\\0' '#' >> .git/config"),    // larger than 1 MiB
           std::string("mv .git/config .git/real && ln -s real .git/config"),         // a symlink in the layer
       }) {
    DYNAMIC_SECTION(script) {
      const std::string id = cow::cow_run(ws, env, script);
      auto commit = nsrun_test::nsrun({"commit", id, "--json"}, cow::in(ws, env));
      INFO(commit.out << commit.err);
      CHECK(commit.exit_code == 4);
      CHECK_THAT(commit.err, ContainsSubstring("nsrun: .git/config: not committed: "));
      CHECK_THAT(commit.out, ContainsSubstring("\"protected\":[{\"kind\":\"modified\",\"path\":\".git/config\""));
      CHECK(read_file(ws / ".git/config") == before);
    }
  }
}
