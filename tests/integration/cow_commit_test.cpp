// The copy-on-write workspace's review: `nsrun commit` refuses exactly the
// run's own protected set (recorded in run.json at launch), a run.json nsrun
// did not write refuses the commit, the command cannot reach any run layer,
// `nsrun changes --patch` gives binary files as git binary patches, and
// killing nsrun at any moment leaves the workspace as it was. Every test
// looks at the host's files.
#include "cow_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace nsrun_test;
using namespace nsrun_test::cow;

namespace {

// The run layers' directory the layer commands use with layer_env().
std::string run_base(const TempDir& state) { return state / "nsrun/runs"; }

bool have_git() { return ::access("/usr/bin/git", X_OK) == 0 || run({"sh", "-c", "command -v git"}).exit_code == 0; }

}  // namespace

TEST_CASE("cow commit: refuses exactly the run's own protected set", "[cow][protect]") {
  require_userns();
  TempDir ws("cowc-ws"), state("cowc-state"), home("cowc-home");
  make_dir(ws / ".git");
  write_file(ws / ".git/HEAD", "ref: refs/heads/main\n");
  const auto env = layer_env(state, home.path());
  // Missing names directly in the workspace (or in .git) are ones the
  // protection inside the sandbox does not keep: the command can make them
  // in its layer, and the commit is what must refuse them.
  const std::string writes =
      "echo n > notes.cfg && echo a > abs.cfg && echo e > .envrc && mkdir .git/hooks && "
      "echo h > .git/hooks/pre-commit && echo ok > ok.txt";

  SECTION("--protect adds (relative and absolute), --unprotect removes") {
    const std::string id =
        cow_run(ws, env, writes, {"--protect", "notes.cfg", "--protect", ws / "abs.cfg", "--unprotect", ".envrc"});
    RunResult c = nsrun({"commit", id}, in(ws, env));
    INFO(c.out << c.err);
    CHECK(c.exit_code == 4);
    for (const char* p : {"notes.cfg", "abs.cfg", ".git/hooks"})
      CHECK(c.err.find(std::string("nsrun: protected path ") + p + ": not committed") != std::string::npos);
    CHECK(c.err.find(".envrc") == std::string::npos);
    CHECK_FALSE(file_exists(ws / "notes.cfg"));
    CHECK_FALSE(file_exists(ws / "abs.cfg"));
    CHECK_FALSE(file_exists(ws / ".git/hooks"));
    CHECK(read_file(ws / ".envrc") == "e\n");
    CHECK(read_file(ws / "ok.txt") == "ok\n");
    // What was refused stays in the layer, for review.
    RunResult left = nsrun({"changes", id}, in(ws, env));
    CHECK(left.out == "A .git/hooks/\nA abs.cfg\nA notes.cfg\n");
    CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
  }
  SECTION("--protect-defaults none drops the default set, and only it") {
    const std::string id = cow_run(ws, env, writes, {"--protect-defaults", "none", "--protect", "notes.cfg"});
    RunResult c = nsrun({"commit", id}, in(ws, env));
    INFO(c.out << c.err);
    CHECK(c.exit_code == 4);
    CHECK(c.err.find("nsrun: protected path notes.cfg: not committed") != std::string::npos);
    CHECK(c.err.find("1 protected") != std::string::npos);
    CHECK_FALSE(file_exists(ws / "notes.cfg"));
    CHECK(read_file(ws / ".git/hooks/pre-commit") == "h\n");
    CHECK(read_file(ws / ".envrc") == "e\n");
    CHECK(read_file(ws / "abs.cfg") == "a\n");
    CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
  }
}

TEST_CASE("cow commit: a run.json that is missing or not nsrun's refuses the commit", "[cow]") {
  require_userns();
  TempDir ws("cowj-ws"), state("cowj-state"), home("cowj-home");
  write_file(ws / "kept.txt", "host\n");
  const auto env = layer_env(state, home.path());
  const std::string id = cow_run(ws, env, "echo added > added.txt && echo x > kept.txt");
  const std::string file = run_base(state) + "/" + id + "/run.json";
  const std::string good = read_file(file);
  REQUIRE(good.find("\"protected\": [") != std::string::npos);
  const auto before = manifest(ws.path());

  // A copy of run.json with `from` replaced by `to`, written as nsrun
  // would (0600, one link), so only the content is wrong.
  auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    REQUIRE(::unlink(file.c_str()) == 0);
    write_file(file, text, 0600);
    REQUIRE(::chmod(file.c_str(), 0600) == 0);
  };
  std::string expect = "run.json";
  SECTION("missing") {
    REQUIRE(::unlink(file.c_str()) == 0);
  }
  SECTION("readable by others (mode 0644)") {
    REQUIRE(::chmod(file.c_str(), 0644) == 0);
  }
  SECTION("a second hard link") {
    REQUIRE(::link(file.c_str(), (state / "other-name").c_str()) == 0);
  }
  SECTION("a symlink to a copy") {
    write_file(state / "copy.json", good, 0600);
    REQUIRE(::chmod((state / "copy.json").c_str(), 0600) == 0);
    REQUIRE(::unlink(file.c_str()) == 0);
    REQUIRE(::symlink((state / "copy.json").c_str(), file.c_str()) == 0);
  }
  SECTION("no protected set") {
    rewrite("\"protected\": [", "\"ignored\": [");
  }
  SECTION("the protected set dropped") {
    const std::string head = good.substr(0, good.find(",\n  \"protected\""));
    REQUIRE(head.size() < good.size());
    REQUIRE(::unlink(file.c_str()) == 0);
    write_file(file, head + "\n}\n", 0600);
    REQUIRE(::chmod(file.c_str(), 0600) == 0);
    expect = "records no protected set";
  }
  SECTION("a protected entry that climbs out") {
    rewrite("\"protected\": [", "\"protected\": [\"../x\", ");
  }
  SECTION("a protected entry that is not a string") {
    rewrite("\"protected\": [", "\"protected\": [7, ");
  }
  SECTION("another run's id") {
    rewrite("\"id\": \"" + id + "\"", "\"id\": \"000000000000\"");
  }
  SECTION("a relative workspace") {
    rewrite("\"workspace\": \"/", "\"workspace\": \"");
  }
  SECTION("not JSON") {
    rewrite("{", "[");
  }
  RunResult c = nsrun({"commit", id}, in(ws, env));
  INFO(c.out << c.err);
  CHECK(c.exit_code == 125);
  CHECK(count_lines(c.err) == 1);
  CHECK(c.err.find(expect) != std::string::npos);
  CHECK(manifest(ws.path()) == before);
  CHECK_FALSE(file_exists(ws / "added.txt"));
  // The layer can still be dropped.
  CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
  CHECK_FALSE(file_exists(run_base(state) + "/" + id));
}

TEST_CASE("cow run layers: the command cannot reach its own run layer or any other", "[cow]") {
  require_userns();
  TempDir ws("cowr-ws"), state("cowr-state"), home("cowr-home"), writable("cowr-writable");
  const auto env = layer_env(state, home.path());
  std::string base;
  std::vector<std::string> extra;
  SECTION("the default run directory") {
    base = run_base(state);
  }
  SECTION("--cow-dir inside a --writable directory") {
    base = writable / "cow";
    extra = {"--writable", writable.path(), "--cow-dir", base};
  }
  SECTION("--cow-dir inside the workspace") {
    base = ws / ".cow";
    extra = {"--cow-dir", base};
  }
  auto launch = [&](const std::string& script) {
    std::vector<std::string> args = {"--workspace-mode", "cow"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return nsrun(args, in(ws, env));
  };
  auto layer_cmd = [&](const std::string& verb, const std::string& id) {
    return nsrun({verb, id, "--cow-dir", base}, in(ws, env));
  };

  // An earlier run, the victim.
  RunResult first = launch("echo one > one.txt");
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const std::string victim = run_id_of(first.err);
  const std::string victim_json = read_file(base + "/" + victim + "/run.json");
  const auto victim_layer = manifest(base + "/" + victim);
  const auto workspace = manifest(ws.path(), ws / ".cow");

  // The attack: every spelling of the layers' paths it can know, its own
  // upper directory from mountinfo included.
  const std::string b = shell_quote(base);
  const std::string attack =
      "up=$(sed -n 's/.*upperdir=\\([^,]*\\).*/\\1/p' /proc/self/mountinfo | head -n 1)\n"
      "[ -n \"$up\" ] && echo found-upper\n"
      "for t in \"$up\" \"$up/..\" " + b + " " + b + "/" + victim + " " + b + "/" + victim + "/upper " +
      "/proc/self/root" + b + "/" + victim + "; do\n"
      "  cat \"$t/run.json\" 2>/dev/null && echo read-run-json\n"
      "  ls \"$t\" 2>/dev/null | grep -q . && echo listed\n"
      "  echo '{}' > \"$t/run.json\" 2>/dev/null && echo wrote-run-json\n"
      "  echo evil > \"$t/evil\" 2>/dev/null && echo wrote-file\n"
      "  mkdir \"$t/made\" 2>/dev/null && echo made-dir\n"
      "  rm -rf \"$t\"/* 2>/dev/null; mv \"$t\" \"$t.away\" 2>/dev/null && echo moved\n"
      "done\n"
      "true\n";
  RunResult r = launch(attack);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "found-upper\n");
  const std::string own = run_id_of(r.err);
  // The host: the victim's layer and run.json as they were, the run
  // directory holding the two runs and nothing else, the workspace as it was.
  CHECK(read_file(base + "/" + victim + "/run.json") == victim_json);
  CHECK(manifest(base + "/" + victim) == victim_layer);
  CHECK(names_in(base) == (victim < own ? std::vector<std::string>{victim, own} : std::vector<std::string>{own, victim}));
  CHECK(manifest(ws.path(), ws / ".cow") == workspace);
  // Its own layer holds nothing it wrote, and its run.json still reads.
  RunResult changes = layer_cmd("changes", own);
  INFO(changes.err);
  CHECK(changes.exit_code == 0);
  CHECK(changes.out.empty());
  RunResult victim_changes = layer_cmd("changes", victim);
  CHECK(victim_changes.out == "A one.txt\n");
  CHECK(layer_cmd("discard", own).exit_code == 0);
  CHECK(layer_cmd("discard", victim).exit_code == 0);
}

TEST_CASE("cow changes --patch: binary files come as git binary patches git apply takes", "[cow]") {
  require_userns();
  if (!have_git()) unavailable("git", "git is not installed: git apply of binary patches not checked");
  TempDir ws("cowb-ws"), state("cowb-state"), home("cowb-home"), copy("cowb-copy"), scratch("cowb-patch");
  // Every byte value, and more than one stored deflate block (65535 bytes).
  std::string big;
  uint32_t x = 12345;
  for (int i = 0; i < 150000; ++i) big += static_cast<char>((x = x * 1103515245 + 12345) >> 16);
  for (int c = 0; c < 256; ++c) big += static_cast<char>(c);
  write_file(ws / "big.bin", big);
  write_file(ws / "mod.bin", std::string("a\0b\0c", 5));
  write_file(ws / "del.bin", std::string("\0\0\0", 3));
  write_file(ws / "was text.txt", "plain\n");
  write_file(ws / "mode.bin", std::string("\0x", 2));
  write_file(ws / "same.txt", "unchanged\n");
  // The conflict check counts a file changed in the run's start tick as
  // changed on the host: start the run in a later tick than the last write.
  wait_for_next_tick(ws / "same.txt");
  const auto before = manifest(ws.path());
  const auto env = layer_env(state, home.path());
  const std::string script =
      "set -e; printf 'x\\0y' > mod.bin; rm del.bin; printf '\\0new\\0' > 'added bin'; : > empty.bin; "
      "printf 'tail\\0' >> big.bin; printf 'now\\0binary' > 'was text.txt'; chmod +x mode.bin; "
      "printf '\\0' > \"$(printf 'nl\\nname.bin')\"";
  const std::string id = cow_run(ws, env, script);
  CHECK(manifest(ws.path()) == before);

  RunResult patch = nsrun({"changes", id, "--patch"}, in(ws, env));
  INFO(patch.err);
  REQUIRE(patch.exit_code == 0);
  CHECK(patch.out.find("# nsrun:") == std::string::npos);
  CHECK(patch.out.find("GIT binary patch\nliteral ") != std::string::npos);
  write_file(scratch / "the.patch", patch.out);
  REQUIRE(run({"cp", "-a", ws.path() + "/.", copy.path()}).exit_code == 0);
  RunResult check = run({"git", "apply", "--check", scratch / "the.patch"}, at(copy));
  INFO(check.err);
  CHECK(check.exit_code == 0);
  RunResult applied = run({"git", "apply", scratch / "the.patch"}, at(copy));
  INFO(applied.err);
  CHECK(applied.exit_code == 0);

  RunResult committed = nsrun({"commit", id}, in(ws, env));
  INFO(committed.err);
  REQUIRE(committed.exit_code == 0);
  CHECK(read_file(ws / "mod.bin") == std::string("x\0y", 3));
  CHECK(read_file(ws / "big.bin") == big + std::string("tail\0", 5));
  CHECK_FALSE(file_exists(ws / "del.bin"));
  // The patch and the commit agree, byte for byte and mode for mode.
  CHECK(manifest(copy.path()) == manifest(ws.path()));
  // The reverse hunks take the copy back to where it started.
  RunResult reverse = run({"git", "apply", "-R", scratch / "the.patch"}, at(copy));
  INFO(reverse.err);
  CHECK(reverse.exit_code == 0);
  CHECK(manifest(copy.path()) == before);
  // A binary patch applies to the bytes it was made from or not at all.
  write_file(copy / "mod.bin", std::string("a\0b\0C", 5));
  CHECK(run({"git", "apply", "--check", scratch / "the.patch"}, at(copy)).exit_code != 0);
  CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
}

TEST_CASE("cow workspace: nsrun or PID 1 killed at any moment leaves the workspace as it was", "[cow]") {
  require_userns();
  TempDir ws("cowk-ws"), state("cowk-state"), home("cowk-home");
  make_dir(ws / ".git");
  write_file(ws / "f", "host\n");
  const auto before = manifest(ws.path());
  const auto env = layer_env(state, home.path());
  for (int i = 0; i < 60; ++i) {
    Process p({nsrun_path(), "--workspace-mode", "cow", "--", "sh", "-c",
               "echo sandbox > f; echo x > .envrc; mkdir -p .git/hooks; echo ready; exec sleep 60"},
              in(ws, env));
    // A third while the layer and the sandbox are made, a third once the
    // command runs, a third by SIGKILL of PID 1 (nsrun's child).
    if (i % 3 == 0) {
      p.signal(SIGKILL);
    } else {
      p.wait_for_line("ready");
      const std::string children =
          read_file("/proc/" + std::to_string(p.pid()) + "/task/" + std::to_string(p.pid()) + "/children");
      const pid_t pid1 = i % 3 == 2 && !children.empty() ? std::stoi(children) : p.pid();
      ::kill(pid1, SIGKILL);
    }
    p.wait();
  }
  CHECK(manifest(ws.path()) == before);
  // Every run a killed nsrun left can be dropped; then nothing is left.
  for (const auto& id : names_in(run_base(state))) {
    RunResult d = nsrun({"discard", id}, in(ws, env));
    INFO(id << d.err);
    CHECK(d.exit_code == 0);
  }
  CHECK(names_in(run_base(state)).empty());
}
