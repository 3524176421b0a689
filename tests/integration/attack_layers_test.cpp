// Attacks on the copy-on-write layers: what a hostile command leaves in its
// upper layer must never make `nsrun changes` / `commit` / `discard` follow a
// link on the host, touch a file the command did not change, or fall over;
// and the layer commands take no path from their arguments.
#include "cow_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// A state home, run dir and $HOME of the test's own.
struct Layers {
  TempDir state{"atk-layers-state"};
  RunOptions in(const TempDir& ws) const {
    RunOptions o = at(ws);
    o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
    return o;
  }
  // Runs `script` in a cow workspace and returns the run id. First waits
  // until the coarse clock run start times come from is past every file
  // the test just wrote, so commit sees none as changed by the host.
  std::string run_cow(const TempDir& ws, const std::string& script) const {
    cow::settle_clock();
    RunResult r = nsrun({"--workspace-mode", "cow", "--", "sh", "-c", script}, in(ws));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const std::string mark = "nsrun: run ";
    const std::size_t at = r.err.find(mark);
    REQUIRE(at != std::string::npos);
    return r.err.substr(at + mark.size(), 12);
  }
};

mode_t mode_of(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool python() { return file_exists("/usr/bin/python3"); }

}  // namespace

TEST_CASE("attack: overlay xattrs written by the command never make commit delete host files", "[attack][cow]") {
  require_userns();
  if (!python()) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-xattr");
  make_dir(ws / "keep");
  write_file(ws / "keep/a", "a\n");
  make_dir(ws / "other");
  write_file(ws / "other/b", "b\n");
  write_file(ws / "file", "f\n");
  Layers l;
  // opaque on an existing directory (replace it, dropping its host entries),
  // whiteout on a new empty file over an existing name, redirect on a new
  // directory (to rename another one), through the overlay; and the names
  // overlayfs escapes (user.overlay.overlay.*).
  const std::string id = l.run_cow(ws, "/usr/bin/python3 -c '\n"
                                       "import os\n"
                                       "def tryset(p, k, v):\n"
                                       "    try: os.setxattr(p, k, v, follow_symlinks=False)\n"
                                       "    except OSError: pass\n"
                                       "os.mkdir(\"keep/new\")\n"
                                       "for k in [\"user.overlay.opaque\", \"user.overlay.overlay.opaque\"]:\n"
                                       "    tryset(\"keep\", k, b\"y\")\n"
                                       "open(\"empty\", \"w\").close()\n"
                                       "for k in [\"user.overlay.whiteout\", \"user.overlay.overlay.whiteout\"]:\n"
                                       "    tryset(\"empty\", k, b\"y\")\n"
                                       "    tryset(\"file\", k, b\"y\")\n"
                                       "os.mkdir(\"moved\")\n"
                                       "for k in [\"user.overlay.redirect\", \"user.overlay.overlay.redirect\"]:\n"
                                       "    tryset(\"moved\", k, b\"/other\")\n"
                                       "'");
  RunResult changes = nsrun({"changes", id}, l.in(ws));
  INFO(changes.out << changes.err);
  CHECK(changes.exit_code == 0);
  CHECK(changes.out.find("keep/\n") == std::string::npos);  // not replaced: only keep/new added
  CHECK(changes.out.find("A keep/new/\n") != std::string::npos);
  CHECK(changes.out.find("D ") == std::string::npos);
  RunResult commit = nsrun({"commit", id}, l.in(ws));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  CHECK(read_file(ws / "keep/a") == "a\n");
  CHECK(read_file(ws / "other/b") == "b\n");
  CHECK(read_file(ws / "file") == "f\n");
  CHECK(file_exists(ws / "keep/new"));
  CHECK(file_exists(ws / "empty"));
}

TEST_CASE("attack: run ids and layer names that are paths are refused, nothing removed", "[attack][cow]") {
  TempDir ws("atk-ids");
  Layers l;
  make_dir(l.state / "victim");
  write_file(l.state / "victim/keep", "k\n");
  for (const std::string id : {"../victim", "..", "../../..", "/etc", "aaaaaaaaaaa/", "AAAAAAAAAAAA", "",
                               "aaaaaaaaaaaa/../../victim", "-x"}) {
    for (const std::string verb : {"changes", "commit", "discard"}) {
      DYNAMIC_SECTION(verb << " '" << id << "'") {
        RunResult r = nsrun({verb, "--", id}, l.in(ws));
        CHECK(r.exit_code == 125);
        CHECK(count_lines(r.err) == 1);
      }
    }
  }
  for (const std::string name : {"../victim", "..", "/etc", "a/b"}) {
    RunResult r = nsrun({"home", "reset", name}, l.in(ws));
    CHECK(r.exit_code == 125);
  }
  CHECK(read_file(l.state / "victim/keep") == "k\n");
}

TEST_CASE("attack: a cow dir that is a symlink is refused before anything runs", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-cowlink"), elsewhere("atk-cowlink-target");
  Layers l;
  REQUIRE(::symlink(elsewhere.path().c_str(), (l.state / "link").c_str()) == 0);
  for (const std::string dir : {l.state / "link", l.state / "link/runs"}) {
    RunResult r = nsrun({"--workspace-mode", "cow", "--cow-dir", dir, "--", "touch", ws / "ran"}, l.in(ws));
    INFO(r.err);
    CHECK(r.exit_code == 125);
    CHECK_FALSE(file_exists(ws / "ran"));
  }
  RunResult list = run({"ls", "-A", elsewhere.path()});
  CHECK(list.out == "");
}

TEST_CASE("attack: a huge sparse file does not make changes --patch read it all", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-huge");
  write_file(ws / "small", "one\n");
  Layers l;
  const std::string id = l.run_cow(ws, "truncate -s 64G huge && echo two >> small");
  RunResult patch = nsrun({"changes", id, "--patch"}, l.in(ws));
  INFO(patch.err);
  CHECK(patch.exit_code == 0);
  CHECK(patch.out.find("+two\n") != std::string::npos);
  CHECK(patch.out.find("# nsrun: huge is ") != std::string::npos);
  CHECK(patch.out.size() < 4096);
  RunResult discard = nsrun({"discard", id}, l.in(ws));
  CHECK(discard.exit_code == 0);
}

// The host changes a directory into a symlink after the run; `commit
// --force` (which skips the conflict check) must still never follow it.
TEST_CASE("attack: commit --force never follows a symlink the host put where a directory was", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-force"), outside("atk-force-out");
  make_dir(ws / "d", 0755);
  write_file(ws / "d/f", "f\n");
  REQUIRE(::chmod(outside.path().c_str(), 0755) == 0);
  Layers l;
  const std::string id = l.run_cow(ws, "chmod 0700 d && echo new > d/g && ln -s /etc/passwd pw && "
                                       "ln -s ../../../../../../../.. up");
  REQUIRE(::rename((ws / "d").c_str(), (ws / "d.orig").c_str()) == 0);
  REQUIRE(::symlink(outside.path().c_str(), (ws / "d").c_str()) == 0);
  RunResult commit = nsrun({"commit", id, "--force"}, l.in(ws));
  INFO(commit.out << commit.err);
  CHECK(mode_of(outside.path()) == 0755);
  CHECK_FALSE(file_exists(outside / "g"));
  // --force: the run's directory replaces the host's link (removed, never followed).
  CHECK(read_link(ws / "d").empty());
  CHECK(read_file(ws / "d/g") == "new\n");
  // The links the command made are links on the host, nothing more.
  CHECK(read_link(ws / "pw") == "/etc/passwd");
  CHECK(read_link(ws / "up") == "../../../../../../../..");
}

TEST_CASE("attack: replaced types, hard links and odd names commit as what the command made", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-types");
  write_file(ws / "was-file", "x\n");
  make_dir(ws / "was-dir");
  write_file(ws / "was-dir/in", "in\n");
  write_file(ws / "shared", "s\n");
  Layers l;
  const std::string id =
      l.run_cow(ws, "rm was-file && mkdir was-file && echo inner > was-file/x && rm -r was-dir && echo f > was-dir && "
                    "ln shared hard && echo more >> hard && printf a > '...' && printf b > '..x' && "
                    "printf c > \"$(printf 'a\\nb')\" && printf d > ' -rf '");
  RunResult commit = nsrun({"commit", id}, l.in(ws));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  CHECK(read_file(ws / "was-file/x") == "inner\n");
  CHECK(read_file(ws / "was-dir") == "f\n");
  CHECK(read_file(ws / "shared") == "s\nmore\n");
  CHECK(read_file(ws / "hard") == "s\nmore\n");
  struct stat a{}, b{};
  REQUIRE(::stat((ws / "shared").c_str(), &a) == 0);
  REQUIRE(::stat((ws / "hard").c_str(), &b) == 0);
  CHECK(a.st_nlink == 1);  // copies, never a link into the layer
  CHECK(read_file(ws / "...") == "a");
  CHECK(read_file(ws / "..x") == "b");
  CHECK(read_file(ws / "a\nb") == "c");
  CHECK(read_file(ws / " -rf ") == "d");
}

// A cow dir inside a --writable root: the command must not reach its own
// upper layer directly (where it could forge whiteouts and opaque
// directories that commit obeys).
TEST_CASE("attack: a cow dir inside a writable root is out of the command's reach", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-reach"), writable("atk-reach-w");
  write_file(ws / "keep", "k\n");
  Layers l;
  const std::string runs = writable / "runs";
  RunResult r = nsrun({"--workspace-mode", "cow", "--writable", writable.path(), "--cow-dir", runs, "--", "sh", "-c",
                       "for d in " + shell_quote(runs) + "/*/upper; do mknod \"$d/keep\" c 0 0 2>/dev/null && "
                       "echo forged; true > \"$d/keep\" 2>/dev/null && echo wrote; done; "
                       "touch " + shell_quote(runs) + "/x 2>/dev/null && echo wrote-base; true"},
                      l.in(ws));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "");
  const std::size_t at = r.err.find("nsrun: run ");
  REQUIRE(at != std::string::npos);
  RunResult commit = nsrun({"commit", r.err.substr(at + 11, 12), "--cow-dir", runs}, l.in(ws));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  CHECK(read_file(ws / "keep") == "k\n");
}

// nsrun killed at any moment of a cow launch: the workspace is the lower
// layer and is never written, so nothing appears in it, and the next
// launch still works.
TEST_CASE("attack: nsrun killed at random moments of cow launches leaves the workspace as it was", "[attack][cow]") {
  require_userns();
  TempDir ws("atk-cow-kill");
  write_file(ws / "keep", "k\n");
  Layers l;
  for (int i = 0; i < 40; ++i) {
    Process p({nsrun_path(), "--workspace-mode", "cow", "--", "sh", "-c", "echo x > new; echo ready; exec sleep 60"},
              l.in(ws));
    if (i % 2 == 1) p.wait_for_line("ready");
    p.signal(SIGKILL);
    p.wait();
  }
  RunResult list = run({"ls", "-A", ws.path()});
  CHECK(list.out == "keep\n");
  CHECK(read_file(ws / "keep") == "k\n");
  RunResult again = nsrun({"--workspace-mode", "cow", "--", "cat", "keep"}, l.in(ws));
  CHECK(again.exit_code == 0);
  CHECK(again.out == "k\n");
}
