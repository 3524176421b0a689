// The review loop as a machine drives it: a run id of its choosing, `nsrun
// runs --json` to see what layers exist (workspace, age, size, state),
// `nsrun runs prune` to remove the ended ones and never a running one,
// `nsrun changes` that sums git's own files up instead of listing each
// object, commit's exit statuses, and no layer left behind by a launch
// that was refused. Every check reads the host: the layers on disk and
// the JSON read back.
#include "cow_support.hpp"
#include "harness.hpp"
#include "reported.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using namespace nsrun_test::cow;
using Catch::Matchers::ContainsSubstring;

namespace {

// The entries of a host directory (none when it does not exist).
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") out.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// A harness's set-up: a workspace, a home and state of the test's own, and
// a run base (--cow-dir) it reads on the host.
struct Loop {
  TempDir ws{"ws"};
  TempDir state{"state"};
  TempDir home{"home"};
  TempDir cow{"cow"};
  std::string runs() const { return cow / "runs"; }
  std::vector<std::string> env() const { return layer_env(state, home.path()); }
  RunResult launch(const std::vector<std::string>& options, const std::string& script) const {
    std::vector<std::string> args = {"--workspace-mode", "cow", "--cow-dir", runs()};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return nsrun_test::nsrun(args, in(ws, env()));
  }
  RunResult layers(std::vector<std::string> args) const {
    args.insert(args.end(), {"--cow-dir", runs()});
    return nsrun_test::nsrun(args, in(ws, env()));
  }
  nsrun::json::Value json(const std::vector<std::string>& args) const {
    RunResult r = layers(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    auto doc = nsrun::json::parse(r.out);
    REQUIRE(doc);
    return std::move(*doc);
  }
};

const nsrun::json::Value* run_in(const nsrun::json::Value& doc, std::string_view list, std::string_view id) {
  const nsrun::json::Value* runs = doc.find(list);
  if (runs == nullptr || !runs->is_array()) return nullptr;
  for (const auto& r : runs->as_array())
    if (str(r.find("id")) == id) return &r;
  return nullptr;
}

int64_t num(const nsrun::json::Value* v) { return v != nullptr && v->is_int() ? v->as_int() : -1; }

}  // namespace

TEST_CASE("runs: --run-id names the layer; a bad name or one in use is refused and makes nothing", "[runs]") {
  require_userns();
  Loop l;
  RunResult r = l.launch({"--run-id", "fix-login.2"}, "echo one > a.txt");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, ContainsSubstring("nsrun: run fix-login.2:"));
  CHECK(read_file(l.runs() + "/fix-login.2/upper/a.txt") == "one\n");
  CHECK_FALSE(file_exists(l.ws / "a.txt"));

  // The same name again: refused, the first run's layer untouched.
  RunResult again = l.launch({"--run-id", "fix-login.2"}, "echo two > a.txt; echo ran > /dev/stderr");
  CHECK(again.exit_code == 125);
  CHECK(count_lines(again.err) == 1);
  CHECK_THAT(again.err, ContainsSubstring("in use"));
  CHECK_THAT(again.err, !ContainsSubstring("ran"));
  CHECK(read_file(l.runs() + "/fix-login.2/upper/a.txt") == "one\n");
  CHECK(entries(l.runs()) == std::vector<std::string>{"fix-login.2"});

  // Names that are not one directory name of ours, each refused before
  // anything is made.
  for (const std::string& bad : std::vector<std::string>{"../escape", ".hidden", "-rf", "a/b", "a b", "x\ny", "_x", std::string(65, 'a'),
                                std::string()}) {
    INFO(bad);
    RunResult b = l.launch({"--run-id", bad}, "echo x > bad.txt");
    CHECK(b.exit_code == 125);
    CHECK(count_lines(b.err) == 1);
    CHECK(b.err.starts_with("nsrun: "));
    CHECK(entries(l.runs()) == std::vector<std::string>{"fix-login.2"});
  }
  CHECK_FALSE(file_exists(l.cow / "escape"));
  // A run id names a run layer: without one, nothing to name.
  RunResult direct = nsrun_test::nsrun({"--run-id", "x1", "--", "true"}, in(l.ws, l.env()));
  CHECK(direct.exit_code == 125);
  CHECK_THAT(direct.err, ContainsSubstring("--workspace-mode cow"));

  // The layer commands take the chosen name.
  RunResult changes = l.layers({"changes", "fix-login.2"});
  CHECK(changes.out == "A a.txt\n");
  RunResult commit = l.layers({"commit", "fix-login.2"});
  CHECK(commit.exit_code == 0);
  CHECK(read_file(l.ws / "a.txt") == "one\n");
  RunResult discard = l.layers({"discard", "fix-login.2"});
  CHECK(discard.exit_code == 0);
  CHECK(entries(l.runs()).empty());
}

TEST_CASE("runs: --json lists each layer's workspace, age, size and state; prune never touches a running one",
          "[runs]") {
  require_userns();
  Loop l;
  REQUIRE(l.launch({"--run-id", "small"}, "echo hi > s.txt").exit_code == 0);
  REQUIRE(l.launch({"--run-id", "big"}, "head -c 5000 /dev/zero > b.bin; mkdir d; echo x > d/y").exit_code == 0);
  // One that runs while the list is taken and the prune happens.
  std::vector<std::string> args = {nsrun_path(), "--workspace-mode", "cow", "--cow-dir", l.runs(), "--run-id", "live",
                                   "--", "sh", "-c", "echo w > w.txt; echo ready; exec sleep 600"};
  Process live(args, in(l.ws, l.env()));
  live.wait_for_line("ready");

  nsrun::json::Value doc = l.json({"runs", "--json"});
  CHECK(str(doc.find("run_base")) == l.runs());
  const auto* small = run_in(doc, "runs", "small");
  const auto* big = run_in(doc, "runs", "big");
  const auto* running = run_in(doc, "runs", "live");
  REQUIRE(small != nullptr);
  REQUIRE(big != nullptr);
  REQUIRE(running != nullptr);
  for (const auto* r : {small, big, running}) {
    CHECK(str(r->find("workspace")) == l.ws.path());
    CHECK(num(r->find("age_sec")) >= 0);
    CHECK(num(r->find("age_sec")) < 600);
  }
  CHECK(str(small->find("state")) == "ended");
  CHECK(str(big->find("state")) == "ended");
  CHECK(str(running->find("state")) == "running");
  CHECK(num(small->find("files")) == 1);
  CHECK(num(small->find("bytes")) == 3);
  CHECK(num(big->find("files")) == 2);
  CHECK(num(big->find("bytes")) == 5002);

  // The text form: one line a run, its id first.
  RunResult text = l.layers({"runs"});
  CHECK(count_lines(text.out) == 3);
  const std::size_t at = text.out.find("\nlive ");
  REQUIRE(at != std::string::npos);
  const std::string line = text.out.substr(at + 1, text.out.find('\n', at + 1) - at - 1);
  CHECK_THAT(line, ContainsSubstring(" running "));
  CHECK_THAT(line, ContainsSubstring(l.ws.path()));

  // prune: an age that none has reached removes nothing.
  nsrun::json::Value kept = l.json({"runs", "prune", "--older-than", "1h", "--json"});
  CHECK(kept.find("pruned")->as_array().empty());
  CHECK(entries(l.runs()) == std::vector<std::string>{"big", "live", "small"});
  // --all removes the ended ones, never the running one.
  nsrun::json::Value all = l.json({"runs", "prune", "--all", "--json"});
  CHECK(all.find("pruned")->as_array().size() == 2);
  CHECK(str(run_in(all, "kept", "live")->find("state")) == "running");
  CHECK(entries(l.runs()) == std::vector<std::string>{"live"});
  CHECK(read_file(l.runs() + "/live/upper/w.txt") == "w\n");
  live.signal(SIGTERM);
  live.wait();
  // Ended now, it goes with an age of zero.
  nsrun::json::Value last = l.json({"runs", "prune", "--older-than", "0s", "--json"});
  CHECK(last.find("pruned")->as_array().size() == 1);
  CHECK(entries(l.runs()).empty());

  // prune wants to be told what; a bad age is bad input.
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"runs", "prune"}, {"runs", "prune", "--all", "--older-than", "1h"}, {"runs", "prune", "--older-than", "soon"},
           {"runs", "prune", "--older-than", "-1d"}, {"runs", "--bogus"}}) {
    RunResult r = l.layers(bad);
    INFO(join(bad));
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
  }
}

TEST_CASE("runs: a run base that does not exist yet lists nothing", "[runs]") {
  Loop l;
  nsrun::json::Value doc = l.json({"runs", "--json"});
  REQUIRE(doc.find("runs") != nullptr);
  CHECK(doc.find("runs")->as_array().empty());
  CHECK_FALSE(file_exists(l.runs()));
}

TEST_CASE("runs: a launch refused before its command ran leaves no layer behind", "[runs]") {
  require_userns();
  Loop l;
  const std::string marker = l.ws / "ran";
  // Refused on the rung, after the layer was made: a working directory
  // the sandbox does not show.
  RunResult hidden = l.launch({"--chdir", "/nonexistent-" + unique_token("d")}, "echo > " + marker);
  INFO(hidden.err);
  CHECK(hidden.exit_code == 125);
  // One line for the refusal after the run id (which names a run that is
  // gone by the time nsrun returns).
  CHECK(count_lines(hidden.err) <= 2);
  CHECK(entries(l.runs()).empty());
  // Refused as bad input (a bind source that is not there).
  RunResult rung = l.launch({"--backend", "namespaces", "--ro", "/nonexistent-" + unique_token("src")},
                            "echo > " + marker);
  INFO(rung.err);
  CHECK(rung.exit_code == 125);
  CHECK(count_lines(rung.err) == 1);
  CHECK_FALSE(file_exists(marker));
  CHECK(entries(l.runs()).empty());
  // A run id chosen for a refused launch is free again.
  RunResult named = l.launch({"--run-id", "retry", "--chdir", "/nonexistent-" + unique_token("d")}, "true");
  CHECK(named.exit_code == 125);
  CHECK(entries(l.runs()).empty());
  RunResult ok = l.launch({"--run-id", "retry"}, "echo ok > ok.txt");
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(entries(l.runs()) == std::vector<std::string>{"retry"});
  // A command that fails is not a refusal: its layer stays for review.
  RunResult failed = l.launch({"--run-id", "failed"}, "echo partial > p.txt; exit 3");
  CHECK(failed.exit_code == 3);
  CHECK(read_file(l.runs() + "/failed/upper/p.txt") == "partial\n");
}

TEST_CASE("runs: changes sums git's objects and index up, in text and JSON", "[runs][git]") {
  require_userns();
  if (::access("/usr/bin/git", X_OK) != 0) unavailable("git", "/usr/bin/git is missing");
  Loop l;
  const std::string git = "git -c user.name=t -c user.email=t@example.invalid -c init.defaultBranch=main";
  RunResult init = run({"sh", "-c", git + " init -q && echo base > base.txt && " + git + " add . && " + git +
                                        " commit -qm base"},
                       at(l.ws));
  REQUIRE(init.exit_code == 0);
  settle_clock();
  RunResult r = l.launch({"--run-id", "gitwork"},
                         "for i in 1 2 3 4 5 6 7 8; do echo $i > f$i.txt; done; " + git + " add . && " + git +
                             " commit -qm work");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  RunResult text = l.layers({"changes", "gitwork"});
  INFO(text.out);
  CHECK(text.exit_code == 0);
  CHECK_THAT(text.out, ContainsSubstring("A f1.txt\n"));
  CHECK_THAT(text.out, ContainsSubstring("G git objects: "));
  CHECK_THAT(text.out, !ContainsSubstring(".git/objects/"));
  CHECK_THAT(text.out, !ContainsSubstring("M .git/index"));
  // refs and logs are git's too, but short and telling: they stay listed.
  CHECK_THAT(text.out, ContainsSubstring(".git/refs/heads/main"));

  nsrun::json::Value doc = l.json({"changes", "gitwork", "--json"});
  const auto& list = doc.find("changes")->as_array();
  int summaries = 0;
  for (const auto& c : list) {
    CHECK_FALSE(str(c.find("path")).starts_with(".git/objects"));
    CHECK(str(c.find("path")) != ".git/index");
    if (str(c.find("kind")) != "git-internals") continue;
    ++summaries;
    CHECK(str(c.find("path")) == ".git");
    // 8 blobs, a tree and a commit at least, and the index.
    CHECK(num(c.find("files")) >= 11);
    CHECK(num(c.find("bytes")) > 0);
    CHECK(num(c.find("entries")) >= 2);
  }
  CHECK(summaries == 1);
  // The patch still carries everything (git apply needs the whole).
  RunResult patch = l.layers({"changes", "gitwork", "--patch"});
  CHECK_THAT(patch.out, ContainsSubstring(".git/index"));
  // And commit applies git's files as any other.
  RunResult commit = l.layers({"commit", "gitwork"});
  INFO(commit.err);
  CHECK(commit.exit_code == 0);
  RunResult log = run({"git", "log", "--oneline"}, at(l.ws));
  CHECK(count_lines(log.out) == 2);
}

TEST_CASE("runs: commit's exit status tells conflicts (3) and failed (5) apart (protected, 4: cow_commit_test)", "[runs]") {
  require_userns();
  Loop l;
  write_file(l.ws / "shared.txt", "host\n");
  settle_clock();
  // conflict: the host changes a file the run changed.
  REQUIRE(l.launch({"--run-id", "conflict"}, "echo run > shared.txt").exit_code == 0);
  write_file(l.ws / "shared.txt", "host changed\n");
  RunResult c = l.layers({"commit", "conflict", "--json"});
  CHECK(c.exit_code == 3);
  CHECK(read_file(l.ws / "shared.txt") == "host changed\n");
  // failed: a socket cannot be committed.
  REQUIRE(l.launch({"--run-id", "sock"}, fmt::format("{} bind-unix {}/s.sock", probe_path(), l.ws.path())).exit_code ==
          0);
  RunResult f = l.layers({"commit", "sock", "--json"});
  INFO(f.out << f.err);
  CHECK(f.exit_code == 5);
  auto doc = nsrun::json::parse(f.out);
  REQUIRE(doc);
  CHECK(doc->find("failed")->as_array().size() == 1);
  CHECK_FALSE(file_exists(l.ws / "s.sock"));
}
