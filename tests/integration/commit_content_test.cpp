// What `nsrun commit` installs in the workspace is the command's file
// content and no more: no setuid or setgid bit, no overlay xattr, no file
// capability, no way in for a process the sandbox left behind, no write
// through a link the host swaps in, and any depth of tree ends cleanly.
// Each test looks at the host afterwards, as root and as the unprivileged
// user (tools/run-tests.sh runs both).
#include "harness.hpp"
#include "python3.hpp"
#include "manifest.hpp"
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// `nsrun commit` of the run whose launch gave `r`, in the run directory
// `runs`; it must succeed.
void commit_run(const RunResult& r, const TempDir& runs, const RunOptions& o) {
  RunResult commit = nsrun_test::nsrun({"commit", "--cow-dir", runs.path(), nsrun_test::cow::run_id_of(r.err)}, o);
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
}

}  // namespace

// A hostile command makes setuid and setgid files in its upper layer: as
// root (or as the user), `nsrun commit` would install them owned by the
// caller, so anyone who runs the file gets the caller's uid (as root: a
// setuid-root binary in the workspace). commit installs no such bit, on a
// new file or over an existing one; a directory keeps its setgid bit
// (group inheritance, nothing runs as anyone).
TEST_CASE("commit installs no setuid or setgid file the command made", "[commit-content][cow]") {
  require_userns();
  TempDir ws("commit-content-suid"), state("commit-content-suid-state");
  write_file(ws / "tool", "#!/bin/sh\necho old\n", 0755);
  nsrun_test::cow::settle_clock();
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
  RunResult r = nsrun_test::nsrun({"--workspace-mode", "cow", "--", "sh", "-c",
                       "printf '#!/bin/sh\\nid\\n' > suid && chmod 4755 suid && "
                       "printf x > sgid && chmod 2755 sgid && printf y > both && chmod 6711 both && "
                       "printf '#!/bin/sh\\necho new\\n' > tool && chmod 4755 tool && "
                       "mkdir sd && chmod 2775 sd && printf z > sd/in && chmod 4700 sd/in && "
                       "stat -c '%a %n' suid sgid both tool sd sd/in"},
                      o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // The command did set the bits in its layer (else the test shows nothing).
  CHECK_THAT(r.out, ContainsSubstring("4755 suid"));
  const std::string mark = "nsrun: run ";
  const std::size_t at = r.err.find(mark);
  REQUIRE(at != std::string::npos);
  const std::string id = r.err.substr(at + mark.size(), 12);
  RunResult commit = nsrun_test::nsrun({"commit", id}, o);
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  CHECK(read_file(ws / "suid") == "#!/bin/sh\nid\n");
  CHECK(read_file(ws / "tool") == "#!/bin/sh\necho new\n");
  CHECK(mode_of(ws / "suid") == 0755);
  CHECK(mode_of(ws / "sgid") == 0755);
  CHECK(mode_of(ws / "both") == 0711);
  CHECK(mode_of(ws / "tool") == 0755);
  CHECK(mode_of(ws / "sd/in") == 0700);
  CHECK((mode_of(ws / "sd") & 0777) == 0775);
}

// A sandbox without a PID namespace (a Policy's "namespaces": {"pid":
// false}) can leave a process behind when nsrun exits, and nsrun's work
// lock on the run layer goes with nsrun. That process holds the layer's
// file open for writing: after `nsrun commit`, whatever it writes must not
// reach the workspace (the user reviewed and committed "new", nothing
// more). A commit that moves the layer's file into the workspace instead
// of copying it gives that process the workspace's file (commit-speed's
// exchange-and-unlink: the workspace ended "new\nINJECT"). Fifos in a
// writable root order the steps, no sleep (one in the workspace would be
// the overlay's own pipe inside, another outside).
TEST_CASE("a process the sandbox left behind cannot write into a committed file", "[commit-content][cow]") {
  require_userns();
  TempDir ws("commit-content-left"), runs("commit-content-left-runs"), cfg("commit-content-left-cfg"), sync("commit-content-left-sync");
  write_file(ws / "f", "orig\n");
  const std::string go = sync / "go", back = sync / "back";
  REQUIRE(::mkfifo(go.c_str(), 0600) == 0);
  REQUIRE(::mkfifo(back.c_str(), 0600) == 0);
  write_file(cfg / "policy.json", "{\"namespaces\": {\"pid\": false}}\n");
  nsrun_test::cow::settle_clock();
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + cfg.path(), "HOME=" + cfg.path(), "XDG_RUNTIME_DIR="};
  RunResult r = nsrun_test::nsrun(
      {"--policy", cfg / "policy.json", "--workspace-mode", "cow", "--cow-dir", runs.path(), "--proc", "host-bind",
       "--writable", sync.path(), "--", "sh", "-c",
       "echo new > f && setsid timeout 60 sh -c 'exec 3>>f; read x < " + go + "; echo INJECT >&3; echo wrote > " + back +
           "' </dev/null >/dev/null 2>&1 & echo left"},
      o);
  INFO(r.out << r.err);
  if (r.err.find("no sandbox available") != std::string::npos)
    unavailable("a cow run without a PID namespace", "the namespace rung refused it: " + r.err);
  REQUIRE(r.exit_code == 0);
  commit_run(r, runs, o);
  CHECK(read_file(ws / "f") == "new\n");
  // Lets the left process write, and waits until it has (or is gone).
  RunResult release = run({"/usr/bin/timeout", "30", "sh", "-c", "echo go > \"$0\"; cat \"$1\"", go, back});
  INFO(release.out << release.err);
  CHECK(release.out == "wrote\n");  // it was there and wrote (else the test shows nothing)
  CHECK(read_file(ws / "f") == "new\n");
}

// overlayfs (kernel 6.7+) lets the command set "user.overlay.*" xattrs
// through the overlay: they land escaped ("user.overlay.overlay.*") on
// the upper file. A file of the workspace carrying one would be read as
// overlayfs's own (an origin, a whiteout, a redirect) by a later overlay
// that stacks on the workspace. Whether commit copies the file or moves
// it (commit-speed), none reaches the workspace.
TEST_CASE("commit carries no overlay xattr the command set into the workspace", "[commit-content][cow]") {
  require_userns();
  require_python3();
  TempDir ws("commit-content-ovx"), runs("commit-content-ovx-runs"), state("commit-content-ovx-state");
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
  RunResult r = nsrun_test::nsrun(
      {"--workspace-mode", "cow", "--cow-dir", runs.path(), "--", "/usr/bin/python3", "-c",
       "import os\nopen('g', 'w').write('x')\nn = 0\n"
       "for x in ['user.overlay.origin', 'user.overlay.whiteout', 'user.overlay.opaque', 'user.overlay.overlay.origin']:\n"
       "    try:\n        os.setxattr('g', x, b'y'); n += 1\n    except OSError:\n        pass\n"
       "print('set', n)\n"},
      o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  commit_run(r, runs, o);
  CHECK(read_file(ws / "g") == "x");
  char names[4096];
  const ssize_t n = ::llistxattr((ws / "g").c_str(), names, sizeof names);
  REQUIRE(n >= 0);
  CHECK(std::string(names, static_cast<std::size_t>(n)).find("overlay") == std::string::npos);
}

// The commit of a layer whose files carry security.capability: commit
// copies bytes and mode, never xattrs, so no file capability reaches the
// workspace. (A root command can set a namespaced capability in its layer.)
TEST_CASE("commit carries no file capability into the workspace", "[commit-content][cow]") {
  require_userns();
  if (!file_exists("/usr/sbin/setcap") && !file_exists("/sbin/setcap")) unavailable("setcap", "setcap is not installed");
  TempDir ws("commit-content-cap"), state("commit-content-cap-state");
  nsrun_test::cow::settle_clock();
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
  RunResult r = nsrun_test::nsrun({"--workspace-mode", "cow", "--", "sh", "-c",
                       "cp /bin/true capped && (PATH=$PATH:/usr/sbin:/sbin setcap cap_net_raw+ep capped 2>&1; "
                       "getfattr -n security.capability capped >/dev/null 2>&1 && echo set-in-layer; true)"},
                      o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::size_t at = r.err.find("nsrun: run ");
  REQUIRE(at != std::string::npos);
  RunResult commit = nsrun_test::nsrun({"commit", r.err.substr(at + 11, 12)}, o);
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
  REQUIRE(file_exists(ws / "capped"));
  char buf[64];
  CHECK(::lgetxattr((ws / "capped").c_str(), "security.capability", buf, sizeof buf) < 0);
}

// commit over an existing file exchanges the names and unlinks the old one
// (RENAME_EXCHANGE). The host puts a symlink to a file and to a directory
// outside where the files were, and a thread keeps swapping symlinks in
// while `commit --force` (no conflict check) runs: the exchange and the
// unlink act on names in the workspace only, so the files outside are as
// they were and nothing is made there.
TEST_CASE("commit's exchange never writes through a symlink the host swaps in", "[commit-content][cow]") {
  require_userns();
  TempDir ws("commit-content-xchg"), state("commit-content-xchg-state"), outside("commit-content-xchg-out");
  write_file(outside / "victim", "VICTIM\n");
  make_dir(outside / "dir");
  write_file(outside / "dir/keep", "KEEP\n");
  const auto outside_before = manifest(outside.path());
  constexpr int files = 400;
  for (int i = 0; i < files; ++i) write_file(ws / ("f" + std::to_string(i)), "old\n");
  nsrun_test::cow::settle_clock();
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
  RunResult r = nsrun_test::nsrun({"--workspace-mode", "cow", "--", "sh", "-c",
                                   "for i in $(seq 0 " + std::to_string(files - 1) + "); do echo new > f$i; done"},
                                  o);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::size_t at = r.err.find("nsrun: run ");
  REQUIRE(at != std::string::npos);
  const std::string id = r.err.substr(at + 11, 12);
  // Before the commit: two of the files are links out.
  REQUIRE(::unlink((ws / "f0").c_str()) == 0);
  REQUIRE(::symlink((outside / "victim").c_str(), (ws / "f0").c_str()) == 0);
  REQUIRE(::unlink((ws / "f1").c_str()) == 0);
  REQUIRE(::symlink((outside / "dir").c_str(), (ws / "f1").c_str()) == 0);
  // During it: a host process swaps links in over the others, by rename.
  Process swapper({"sh", "-c",
                   "cd " + shell_quote(ws.path()) + " && echo ready && i=2; while :; do ln -sfn " +
                       shell_quote(outside / "victim") + " .l$i 2>/dev/null && mv -f .l$i f$i 2>/dev/null; "
                       "i=$(( (i + 7) % " + std::to_string(files) + " )); [ $i -lt 2 ] && i=2; done"});
  swapper.wait_for_line("ready");
  RunResult commit = nsrun_test::nsrun({"commit", id, "--force"}, o);
  swapper.signal(SIGKILL);
  (void)swapper.wait();
  INFO(commit.out << commit.err);
  CHECK(manifest(outside.path()) == outside_before);
  CHECK(read_file(ws / "f0") == "new\n");
  CHECK(read_link(ws / "f0").empty());
  CHECK(read_file(ws / "f1") == "new\n");
  // No temporary name is left behind in the workspace.
  for (const auto& [path, what] : manifest(ws.path())) CHECK(path.find(".nsrun-commit-") == std::string::npos);
}

// The command builds its layer's trees to any depth (mkdir and chdir, one
// level at a time). A walk on the host that recursed a level a frame would
// overflow nsrun's stack at 30,000 levels and die half-way through
// `nsrun commit` or `discard` (with run.json gone, the run neither listed
// nor removable). The walks stop at a depth with an error, and
// remove_tree (discard, home reset) removes any depth.
TEST_CASE("a 30000-deep tree in a layer: changes, commit, discard and home reset end cleanly (slow)",
          "[commit-content][cow][home]") {
  require_userns();
  require_python3();
  // 30,000: the depth that crashed nsrun (in the workspace); the home's
  // tree needs only to be deeper than the walks' limits (the same code).
  const std::string deep = "import os, sys\nfor i in range(int(sys.argv[1])):\n    os.mkdir('d'); os.chdir('d')\n"
                           "open('f', 'w').write('x')\nprint('deep')\n";
  TempDir ws("commit-content-deep"), state("commit-content-deep-state"), home("commit-content-deep-home");
  write_file(ws / "deep.py", deep);
  nsrun_test::cow::settle_clock();
  RunOptions o = at(ws);
  o.env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + home.path(), "XDG_RUNTIME_DIR="};
  o.timeout = 240s;
  RunResult r = nsrun_test::nsrun({"--workspace-mode", "cow", "--home", "ro", "--", "/usr/bin/python3", "deep.py", "30000"}, o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::size_t at = r.err.find("nsrun: run ");
  REQUIRE(at != std::string::npos);
  const std::string id = r.err.substr(at + 11, 12);
  RunResult changes = nsrun_test::nsrun({"changes", id}, o);
  CHECK(changes.exit_code == 0);
  CHECK(changes.out == "A d/\n");
  RunResult patch = nsrun_test::nsrun({"changes", id, "--patch"}, o);
  CHECK(patch.exit_code == 125);
  CHECK_THAT(patch.err, ContainsSubstring("directories deep"));
  RunResult commit = nsrun_test::nsrun({"commit", id}, o);
  // A tree the commit cannot look into may hold git material: refused as
  // protected (4), with why.
  CHECK(commit.exit_code == 4);
  CHECK_THAT(commit.err, ContainsSubstring("directories deep"));
  RunResult discard = nsrun_test::nsrun({"discard", id}, o);
  CHECK(discard.exit_code == 0);
  CHECK_FALSE(file_exists(state / ("nsrun/runs/" + id)));

  // The same tree in the cow home's layer.
  RunResult h = nsrun_test::nsrun({"--backend", "namespaces", "--", "sh", "-c", "cd ~ && /usr/bin/python3 " +
                                                                                    shell_quote(ws / "deep.py") + " 2000"},
                                  o);
  INFO(h.out << h.err);
  REQUIRE(h.exit_code == 0);
  RunResult diff = nsrun_test::nsrun({"home", "diff"}, o);
  CHECK(diff.exit_code == 0);
  RunResult reset = nsrun_test::nsrun({"home", "reset"}, o);
  CHECK(reset.exit_code == 0);
  CHECK(manifest(state / "nsrun/home").size() == 1);  // the base alone
}
