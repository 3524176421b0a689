// The attack review of the third pass: the features that landed last
// (the Landlock rung's connect() answers, --watch-writes, the cow home as
// the default, commit's exchange-and-unlink) against a hostile command, as
// root and as the unprivileged user (tools/run-tests.sh runs both), on
// both rungs where the feature has both. Each test asserts what is on the
// host afterwards, not only what the command printed.
#include "harness.hpp"
#include "manifest.hpp"
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

bool python() { return file_exists("/usr/bin/python3"); }

mode_t mode_of(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A state home and $HOME of the test's own, with default credentials.
struct Home {
  TempDir ws{"atk3-ws"};
  TempDir state{"atk3-state"};
  TempDir home{"atk3-home"};
  Home() {
    write_file(home / ".bashrc", "# real\n");
    make_dir(home / ".ssh", 0700);
    write_file(home / ".ssh/id_ed25519", "SECRET-SSH\n", 0600);
    make_dir(home / ".config");
    make_dir(home / ".config/gcloud");
    write_file(home / ".config/gcloud/credentials.db", "SECRET-GCLOUD\n");
    write_file(home / ".netrc", "SECRET-NETRC\n", 0600);
  }
  RunOptions opts() const {
    RunOptions o = at(ws);
    o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path(), "XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
    return o;
  }
  std::string layer_base() const { return state / "nsrun/home"; }
};

// Reads every hidden credential through each spelling the command has.
const std::string credential_reads =
    "for f in .ssh/id_ed25519 .config/gcloud/credentials.db .netrc; do "
    "cat \"$HOME/$f\" \"$HOME/.ssh/../$f\" \"$HOME/./$f\" \"/proc/self/root$HOME/$f\" \"/proc/1/root$HOME/$f\" "
    "\"/proc/$$/root$HOME/$f\" \"/proc/self/cwd/../../../../../../../../..$HOME/$f\"; done 2>/dev/null; "
    "(cd \"$HOME/.ssh\" 2>/dev/null && cat id_ed25519 ./id_ed25519 2>/dev/null); "
    "ls -a \"$HOME/.ssh\" 2>/dev/null | grep -v '^\\.*$'; "
    "find \"$HOME\" -name 'id_*' 2>/dev/null | grep -q . && echo found-by-find; "
    "grep -rs SECRET \"$HOME\" /proc/1/root\"$HOME\" 2>/dev/null; true";

// `nsrun commit` of the run whose launch gave `r`, in the run directory
// `runs`; it must succeed.
void commit_run(const RunResult& r, const TempDir& runs, const RunOptions& o) {
  RunResult commit = nsrun_test::nsrun({"commit", "--cow-dir", runs.path(), nsrun_test::cow::run_id_of(r.err)}, o);
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 0);
}

// Another workspace's cow home layer, with what its run wrote into its
// home: a key and a token.
void secrets_in_other_layer(Home& h, const TempDir& other) {
  RunOptions in_other = h.opts();
  in_other.cwd = other.path();
  RunResult made = nsrun_test::nsrun({"--backend", "namespaces", "--", "sh", "-c",
                                      "mkdir -p ~/.aws && echo LAYER-KEY > ~/.aws/credentials && echo LAYER-TOKEN > ~/.npmrc"},
                                     in_other);
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);
}

// No file of the home layers holds any of `contents`, and no path in them
// contains any of `names` (nothing copied up that should not be).
void layer_holds_none(const Home& h, std::initializer_list<std::string_view> contents,
                      std::initializer_list<std::string_view> names) {
  if (!file_exists(h.layer_base())) return;
  for (const auto& [path, what] : manifest(h.layer_base())) {
    INFO(path);
    for (std::string_view c : contents) CHECK(what.find(c) == std::string::npos);
    for (std::string_view n : names) CHECK(path.find(n) == std::string::npos);
  }
}

// A shell command that prints whatever of those it can read below `base`.
std::string read_layers(const std::string& base) {
  return "cat " + shell_quote(base) + "/*/upper/.aws/credentials " + shell_quote(base) +
         "/*/upper/.npmrc 2>/dev/null; grep -rs LAYER " + shell_quote(base);
}

}  // namespace

// ---------------------------------------------------------------- commit

// A hostile command makes setuid and setgid files in its upper layer: as
// root (or as the user), `nsrun commit` would install them owned by the
// caller, so anyone who runs the file gets the caller's uid (as root: a
// setuid-root binary in the workspace). commit installs no such bit, on a
// new file or over an existing one; a directory keeps its setgid bit
// (group inheritance, nothing runs as anyone).
TEST_CASE("attack3: commit installs no setuid or setgid file the command made", "[attack3][cow]") {
  require_userns();
  TempDir ws("atk3-suid"), state("atk3-suid-state");
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
TEST_CASE("attack3: a process the sandbox left behind cannot write into a committed file", "[attack3][cow]") {
  require_userns();
  TempDir ws("atk3-left"), runs("atk3-left-runs"), cfg("atk3-left-cfg"), sync("atk3-left-sync");
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
TEST_CASE("attack3: commit carries no overlay xattr the command set into the workspace", "[attack3][cow]") {
  require_userns();
  if (!python()) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk3-ovx"), runs("atk3-ovx-runs"), state("atk3-ovx-state");
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
TEST_CASE("attack3: commit carries no file capability into the workspace", "[attack3][cow]") {
  require_userns();
  if (!file_exists("/usr/sbin/setcap") && !file_exists("/sbin/setcap")) unavailable("setcap", "setcap is not installed");
  TempDir ws("atk3-cap"), state("atk3-cap-state");
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

// ---------------------------------------------------------------- cow home

TEST_CASE("attack3: hidden credentials stay hidden through every spelling, metadata calls and links the command "
          "made in an earlier run",
          "[attack3][home]") {
  require_userns();
  Home h;
  const auto before = manifest(h.home.path());
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      // Run 1: metadata calls on the covers, links into them, a rename of a
      // hidden directory's parent; run 2 reads through all of it.
      std::vector<std::string> first = args;
      first.insert(first.end(),
                   {"--", "sh", "-c",
                    "chmod 777 ~/.ssh ~/.config/gcloud 2>/dev/null; touch ~/.ssh ~/.netrc ~/.config/gcloud 2>/dev/null; "
                    "touch -h -d 2001-01-01 ~/.ssh 2>/dev/null; "
                    "ln -s .ssh ~/sshlink; ln -s .ssh/id_ed25519 ~/keylink; ln -s /proc/self/root$HOME/.netrc ~/netlink; "
                    "ln ~/.netrc ~/hard 2>/dev/null; mkdir -p ~/x && ln -s ../.config ~/x/cfg; "
                    "mv ~/.config ~/.cfg 2>/dev/null; cat ~/.cfg/gcloud/credentials.db 2>/dev/null; "
                    "mv ~/.cfg ~/.config 2>/dev/null; " + credential_reads});
      RunResult one = nsrun_test::nsrun(first, h.opts());
      INFO(one.out << one.err);
      CHECK(one.exit_code == 0);
      CHECK(one.out.find("SECRET") == std::string::npos);
      // Names too, where a cover hides them (the Landlock rung lists the
      // names in a hidden directory, by design: docs/hardening.md).
      if (rung == Rung::namespaces) CHECK(one.out.find("found-by-find") == std::string::npos);
      std::vector<std::string> second = args;
      second.insert(second.end(), {"--", "sh", "-c",
                                   "cat ~/sshlink/id_ed25519 ~/keylink ~/netlink ~/hard ~/x/cfg/gcloud/credentials.db "
                                   "2>/dev/null; " + credential_reads});
      RunResult two = nsrun_test::nsrun(second, h.opts());
      INFO(two.out << two.err);
      CHECK(two.exit_code == 0);
      CHECK(two.out.find("SECRET") == std::string::npos);
      // The real home is as it was: no link, no mode, no time changed.
      CHECK(manifest(h.home.path()) == before);
      // No layer holds a copy of a hidden path (nothing copied up by the
      // metadata calls).
      layer_holds_none(h, {"SECRET"}, {"/upper/.ssh", "/upper/.netrc", "credentials.db"});
    }
  }
}

// --allow-read re-exposes one path read-only: nothing written through it
// reaches the real home or the layer (a copy-up would let a later run read
// the command's version instead of the real one).
TEST_CASE("attack3: --allow-read re-exposes exactly one path, read-only, on both rungs", "[attack3][home]") {
  require_userns();
  Home h;
  const auto before = manifest(h.home.path());
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(),
                  {"--allow-read", h.home / ".ssh", "--", "sh", "-c",
                   "cat ~/.ssh/id_ed25519; cat ~/.netrc ~/.config/gcloud/credentials.db 2>/dev/null; "
                   "echo evil >> ~/.ssh/id_ed25519 2>/dev/null && echo wrote; "
                   "echo evil > ~/.ssh/new 2>/dev/null && echo made; chmod 644 ~/.ssh/id_ed25519 2>/dev/null && echo chmod; "
                   "touch ~/.ssh/id_ed25519 2>/dev/null && echo touched; rm -f ~/.ssh/id_ed25519 2>/dev/null; "
                   "test -e ~/.ssh/id_ed25519 || echo removed; mv ~/.ssh ~/.ssh2 2>/dev/null && echo moved; true"});
      RunResult r = nsrun_test::nsrun(args, h.opts());
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "SECRET-SSH\n");
      CHECK(manifest(h.home.path()) == before);
      layer_holds_none(h, {"evil"}, {"/upper/.ssh"});
    }
  }
}

// The layer is the command's: `nsrun home diff` and `home reset` on the
// host walk it and must follow none of its links (one named like a
// directory, pointing at a victim directory outside; one at /).
TEST_CASE("attack3: home diff and reset follow no link the command left in the home layer", "[attack3][home]") {
  require_userns();
  Home h;
  TempDir victim("atk3-victim");
  write_file(victim / "keep", "KEEP-ME\n");
  make_dir(victim / "sub");
  write_file(victim / "sub/deep", "DEEP\n");
  const auto victim_before = manifest(victim.path());
  RunResult r = nsrun_test::nsrun({"--backend", "namespaces", "--", "sh", "-c",
                       "mkdir -p ~/d && ln -s " + shell_quote(victim.path()) + " ~/etc && ln -s " +
                           shell_quote(victim.path()) + " ~/d/sub && ln -s / ~/root && ln -s /etc ~/d/etc && "
                           "echo mine > ~/d/file && ls ~/etc/keep"},
                      h.opts());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  RunResult diff = nsrun_test::nsrun({"home", "diff"}, h.opts());
  INFO(diff.out << diff.err);
  CHECK(diff.exit_code == 0);
  CHECK_THAT(diff.out, ContainsSubstring("etc"));
  CHECK(diff.out.find("keep") == std::string::npos);
  CHECK(diff.out.find("deep") == std::string::npos);
  CHECK(diff.out.find("passwd") == std::string::npos);
  RunResult reset = nsrun_test::nsrun({"home", "reset"}, h.opts());
  INFO(reset.out << reset.err);
  CHECK(reset.exit_code == 0);
  CHECK(manifest(victim.path()) == victim_before);
  CHECK(file_exists("/etc/passwd"));
}


// What a run wrote into its own cow home (an ssh key made there, a token
// from `npm login`) is in that workspace's layer on the host. The cow home
// hides the layers; the Landlock rung (no overlay: the home read-only, the
// caches redirected) showed every workspace's layer to every other's
// command. Now the layers' base is hidden there too, and the caches still
// go to this workspace's redirect directory.
TEST_CASE("attack3: another workspace's home layer is not readable from a Landlock rung launch", "[attack3][home]") {
  require_userns();
  rung_options(Rung::landlock);
  Home h;
  TempDir other("atk3-other-ws");
  secrets_in_other_layer(h, other);
  const std::string base = h.layer_base();
  RunResult r = nsrun_test::nsrun(
      {"--backend", "landlock", "--", "sh", "-c",
       read_layers(base) + "; mkdir -p \"$XDG_CACHE_HOME\" && echo cache > \"$XDG_CACHE_HOME/x\" && echo cache-ok"},
      h.opts());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("LAYER") == std::string::npos);
  CHECK_THAT(r.out, ContainsSubstring("cache-ok"));
  // --home ro, both rungs: the home as it is, the layers not.
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION("--home ro " << (rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--home", "ro", "--", "sh", "-c",
                               "cat ~/.bashrc; " + read_layers(base) + "; true"});
      RunResult ro = nsrun_test::nsrun(args, h.opts());
      INFO(ro.out << ro.err);
      CHECK(ro.exit_code == 0);
      CHECK(ro.out == "# real\n");
    }
  }
}

// A cow home whose own layer cannot be made (here a file where this
// workspace's layer directory would be) runs with the home read-only, as
// the root shows it: that showed the other workspaces' layers, what their
// runs wrote into their homes. Hidden now as for --home ro, both rungs.
TEST_CASE("attack3: another workspace's home layer is not readable when this workspace's layer cannot be made",
          "[attack3][home]") {
  require_userns();
  Home h;
  TempDir other("atk3-other-ws");
  secrets_in_other_layer(h, other);
  const std::string base = h.layer_base();
  const auto before = manifest(base);
  RunResult mine = nsrun_test::nsrun({"--backend", "namespaces", "--", "true"}, h.opts());
  INFO(mine.out << mine.err);
  REQUIRE(mine.exit_code == 0);
  // This workspace's layer: the one directory of the base the run made.
  std::string layer;
  for (const auto& [path, what] : manifest(base))
    if (!before.contains(path) && path.find('/', 1) == std::string::npos) layer = base + path;
  REQUIRE(!layer.empty());
  REQUIRE(run({"/bin/rm", "-rf", "--", layer}).exit_code == 0);
  write_file(layer, "not a directory\n", 0600);
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--", "sh", "-c",
                               "cat ~/.bashrc; " + read_layers(base) + "; true"});
      RunResult r = nsrun_test::nsrun(args, h.opts());
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK_THAT(r.err, ContainsSubstring("no home layer"));
      CHECK(r.out == "# real\n");
    }
  }
  CHECK(read_file(layer) == "not a directory\n");
}

// The same on the namespace rung where the host refuses the home's
// overlay (the home on a stacked overlay, as home_default_test makes it):
// the fallback shows the home read-only and showed the layers with it.
TEST_CASE("attack3: another workspace's home layer is not readable in the namespace rung's fallback",
          "[attack3][home][fallback]") {
  require_userns();
  if (::access("/usr/bin/unshare", X_OK) != 0) unavailable("unshare", "/usr/bin/unshare (util-linux) is not installed");
  TempDir t("atk3-stack"), ws("atk3-stack-ws");
  for (const char* d : {"l1", "u1", "w1", "m1", "u2", "w2", "home", "state"}) make_dir(t / d);
  // Another workspace's layer, as its run left it.
  const std::string other = t / "state/nsrun/home/other-ws-0123abcd/upper/.aws";
  for (const char* d : {"state/nsrun", "state/nsrun/home", "state/nsrun/home/other-ws-0123abcd",
                        "state/nsrun/home/other-ws-0123abcd/upper", "state/nsrun/home/other-ws-0123abcd/upper/.aws"})
    make_dir(t / d, 0700);
  write_file(other + "/credentials", "LAYER-KEY\n", 0600);
  const std::string inside =
      "cat \"$XDG_STATE_HOME\"/nsrun/home/*/upper/.aws/credentials 2>/dev/null; grep -rs LAYER \"$XDG_STATE_HOME\"; "
      "ls \"$XDG_STATE_HOME/nsrun/home\"; "
      "mkdir -p \"$npm_config_cache\" && echo warm > \"$npm_config_cache/entry\" && echo cache=ok";
  const std::string script =
      "set -e; T=" + shell_quote(t.path()) +
      "; mount -t overlay o -o lowerdir=$T/l1,upperdir=$T/u1,workdir=$T/w1 $T/m1; mkdir $T/m1/l; "
      "mount -t overlay o -o lowerdir=$T/m1/l,upperdir=$T/u2,workdir=$T/w2 $T/home; "
      "export HOME=$T/home XDG_STATE_HOME=$T/state; " + shell_quote(nsrun_path()) + " -- sh -c " + shell_quote(inside);
  RunOptions o = at(ws);
  o.env = {"XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
  RunResult r = run({"/usr/bin/unshare", "-Urm", "sh", "-c", script}, o);
  INFO(r.out << r.err);
  if (r.err.find("unshare:") != std::string::npos || r.err.find("mount:") != std::string::npos)
    unavailable("overlay in a user namespace", "the test could not stack its own overlays: " + r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("LAYER") == std::string::npos);
  CHECK(r.out.find("other-ws") == std::string::npos);
  CHECK_THAT(r.out, ContainsSubstring("cache=ok"));
  // The cache is on the host, in this workspace's layer.
  bool warm = false;
  for (const auto& [path, what] : manifest(t / "state"))
    if (path.ends_with("/redirect/npm/entry")) warm = what.ends_with("warm\n");
  CHECK(warm);
  CHECK(read_file(other + "/credentials") == "LAYER-KEY\n");
}

// ---------------------------------------------------------------- --watch-writes

// Hostile arguments to the watched calls: a pointer to nothing, a path
// with no NUL for 64 KiB, one that ends at the edge of its mapping, one
// that is terminal control bytes. nsrun neither crashes nor hangs, the
// command gets the kernel's own answers, and what nsrun prints on the
// caller's terminal carries no control byte of the command's.
TEST_CASE("attack3: --watch-writes on garbage pointers, unterminated and control-byte paths", "[attack3][watch-writes]") {
  if (!python()) unavailable("python3", "python3 is not installed");
  constexpr std::string_view script = R"PY(
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_openat, SYS_mkdirat, SYS_renameat2 = 257, 258, 316
AT_FDCWD = -100
def call(name, *args):
    rc = libc.syscall(*args)
    print('%s=%s' % (name, 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())), flush=True)
call('null', SYS_openat, AT_FDCWD, ctypes.c_void_p(0), os.O_WRONLY | os.O_CREAT, 0o644)
call('wild', SYS_openat, AT_FDCWD, ctypes.c_void_p(0xdead0000000), os.O_WRONLY | os.O_CREAT, 0o644)
call('kernel', SYS_openat, AT_FDCWD, ctypes.c_void_p(0xffffffffff600000), os.O_WRONLY | os.O_CREAT, 0o644)
# 64 KiB of 'A' with no NUL, followed by an unmapped page.
m = mmap.mmap(-1, 65536 + 4096)
m.write(b'/' + b'A' * 65535)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
libc.munmap(ctypes.c_void_p(base + 65536), 4096)
call('unterminated', SYS_openat, AT_FDCWD, ctypes.c_void_p(base), os.O_WRONLY | os.O_CREAT, 0o644)
call('unterminated_mkdir', SYS_mkdirat, AT_FDCWD, ctypes.c_void_p(base), 0o755)
call('unterminated_rename', SYS_renameat2, AT_FDCWD, ctypes.c_void_p(base), AT_FDCWD, ctypes.c_void_p(base), 0)
# A bad dirfd and a relative name.
call('baddirfd', SYS_openat, 999, b'x', os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(300):
    try: open('/etc/\x1b]0;PWNED\x07\x1b[2J%d' % i, 'w')
    except OSError: pass
call('after', SYS_openat, AT_FDCWD, b'/etc/nsrun-atk3-after', os.O_WRONLY | os.O_CREAT, 0o644)
sys.exit(3)
)PY";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      TempDir ws("atk3-ww"), out("atk3-ww-out");
      write_file(ws / "w.py", script);
      std::vector<std::string> args = rung_options(rung);
      const std::string report = out / "r.json";
      args.insert(args.end(), {"--verdict", "--watch-writes", "--report", report, "--timeout", "60", "--", "/usr/bin/python3", "w.py"});
      RunResult r = nsrun_test::nsrun(args, at(ws));
      INFO(r.out << r.err);
      CHECK(r.exit_code == 3);
      CHECK_THAT(r.out, ContainsSubstring("null=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("wild=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("kernel=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("unterminated=File name too long"));
      CHECK_THAT(r.out, ContainsSubstring("baddirfd=Bad file descriptor"));
      CHECK_THAT(r.out, ContainsSubstring("after="));
      CHECK_FALSE(file_exists("/etc/nsrun-atk3-after"));
      // The verdict names the writes, with no control byte of the command's.
      CHECK_THAT(r.err, ContainsSubstring("outside the writable roots"));
      for (char c : r.err) {
        INFO(static_cast<int>(static_cast<unsigned char>(c)));
        CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
      }
      // The report is JSON and lists the attempts, capped.
      auto doc = ::nsrun::json::parse(read_file(report));
      REQUIRE(doc);
      const auto* w = doc->find("writes_outside");
      REQUIRE(w != nullptr);
      REQUIRE(w->is_array());
      CHECK(w->as_array().size() <= 256);
      // A relative name under a dirfd that is no file is nowhere: not "/x".
      for (const auto& item : w->as_array()) {
        const auto* path = item.find("path");
        REQUIRE(path != nullptr);
        CHECK(path->as_string() != "/x");
      }
    }
  }
}

// ---------------------------------------------------------------- the Landlock rung's connect()

// What connect() and its neighbours do with odd fds and racing threads on
// the Landlock rung (--network proxy): only the proxy is ever reached. The
// test's own listener on 127.0.0.1 stands for any other host; nothing may
// arrive there. And an fd the caller left open is not the command's.
TEST_CASE("attack3: Landlock rung connect() on odd fds, racing dup2, non-dumpable, vfork children, io_uring",
          "[attack3][egress][landlock]") {
  if (!python()) unavailable("python3", "python3 is not installed");
  rung_options(Rung::landlock);
  constexpr std::string_view script = R"PY(
import ctypes, os, socket, struct, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
P = int(os.environ['http_proxy'].rsplit(':', 1)[1])
A = int(sys.argv[1])
def out(k, v): print('%s=%s' % (k, v), flush=True)
def res(rc): return 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())
def sin(a, p): return struct.pack('=H', socket.AF_INET) + struct.pack('!H', p) + socket.inet_aton(a) + bytes(8)
proxy = ctypes.create_string_buffer(sin('127.0.0.1', P), 16)
atk = ctypes.create_string_buffer(sin('127.0.0.1', A), 16)
out('fds', ','.join(sorted(os.listdir('/proc/self/fd'), key=int)))
out('io_uring', res(libc.syscall(425, 8, ctypes.create_string_buffer(120))))
r, w = os.pipe()
out('pipe', res(libc.connect(r, proxy, 16)))
out('closed', res(libc.connect(999, proxy, 16)))
s = socket.socket()
out('unspec', res(libc.connect(s.fileno(), ctypes.create_string_buffer(bytes(16), 16), 16)))
out('sendto', res(libc.sendto(s.fileno(), b'x', 1, 0x4000, atk, 16)))
f = os.open('/dev/null', os.O_RDONLY)
seen = {}
for _ in range(100):
    t = socket.socket(); fd = t.fileno(); stop = []
    def swap():
        while not stop:
            try: os.dup2(f, fd)
            except OSError: pass
    th = threading.Thread(target=swap); th.start()
    rc = libc.connect(fd, atk if _ % 2 else proxy, 16); e = ctypes.get_errno()
    stop.append(1); th.join()
    k = 'ok' if rc == 0 else os.strerror(e)
    seen[k] = seen.get(k, 0) + 1
    try: t.close()
    except OSError: pass
out('swap', ' '.join('%s:%d' % kv for kv in sorted(seen.items())))
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
n = socket.socket(); out('nondumpable_atk', res(libc.connect(n.fileno(), atk, 16)))
libc.prctl(4, 1, 0, 0, 0)
pid = os.posix_spawn(sys.executable, [sys.executable, '-c',
    'import socket\ntry:\n socket.create_connection(("127.0.0.1", %d), timeout=5); print("child_atk=connected")\n'
    'except OSError as e: print("child_atk=" + e.strerror)' % A], os.environ)
os.waitpid(pid, 0)
)PY";
  TempDir ws("atk3-eg"), home("atk3-eg-home");
  write_file(ws / "e.py", script);
  // The attacker's listener, and a connection to it left open (not
  // close-on-exec) as an fd the caller forgot.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  REQUIRE(listener >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 64) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int left_open = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(left_open >= 0);
  REQUIRE(::connect(left_open, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(accepted >= 0);
  RunOptions o = at(ws);
  o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + home.path(), "XDG_RUNTIME_DIR="};
  o.timeout = 120s;
  RunResult r = nsrun_test::nsrun({"--backend", "landlock", "--network", "proxy", "--allow-host", "example.invalid", "--",
                                   "/usr/bin/python3", "e.py", std::to_string(ntohs(a.sin_port))},
                                  o);
  ::close(left_open);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("fds=0,1,2,3\n") != std::string::npos);  // 3: listdir's own
  CHECK_THAT(r.out, ContainsSubstring("io_uring=Operation not permitted"));
  CHECK_THAT(r.out, ContainsSubstring("pipe=Socket operation on non-socket"));
  CHECK_THAT(r.out, ContainsSubstring("closed=Bad file descriptor"));
  CHECK_THAT(r.out, ContainsSubstring("unspec=ok"));
  CHECK_THAT(r.out, ContainsSubstring("sendto=Broken pipe"));
  CHECK_THAT(r.out, ContainsSubstring("swap="));
  CHECK_THAT(r.out, ContainsSubstring("nondumpable_atk=Permission denied"));
  CHECK_THAT(r.out, ContainsSubstring("child_atk=Permission denied"));
  // Nothing of the command's reached the listener, and the connection the
  // caller left open got no byte.
  CHECK(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) < 0);
  CHECK(errno == EAGAIN);
  char buf[16];
  CHECK(::recv(accepted, buf, sizeof buf, MSG_DONTWAIT) <= 0);  // EOF (closed above): no byte came
  ::close(accepted);
  ::close(listener);
}

// A path in a page registered with userfaultfd: nsrun's read of it (and
// the kernel's) must not wait on a fault handler the command controls,
// which would leave the call unanswered for ever. With --seccomp none the
// command may make a userfaultfd; without privilege only one for
// user-mode faults (UFFD_USER_MODE_ONLY), so the kernel's reads and
// nsrun's process_vm_readv fault plainly (EFAULT), nothing waits.
TEST_CASE("attack3: --watch-writes on a path in a userfaultfd page answers, never waits", "[attack3][watch-writes]") {
  if (!python()) unavailable("python3", "python3 is not installed");
  constexpr std::string_view script = R"PY(
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
fd = -1
for flags in (os.O_CLOEXEC, os.O_CLOEXEC | 1):  # then UFFD_USER_MODE_ONLY
    fd = libc.syscall(323, flags)
    if fd >= 0: break
if fd < 0: print('uffd=none'); sys.exit(0)
libc.ioctl(fd, 0xc018aa3f, ctypes.create_string_buffer(struct.pack('QQQ', 0xAA, 0, 0), 24))  # UFFDIO_API
page = libc.mmap(None, 4096, 3, 0x22, -1, 0)
rc = libc.ioctl(fd, 0xc020aa00, ctypes.create_string_buffer(struct.pack('QQQQ', page, 4096, 1, 0), 32))  # REGISTER
print('registered=%s' % (rc == 0), flush=True)
rc = libc.syscall(257, -100, ctypes.c_void_p(page), os.O_WRONLY | os.O_CREAT, 0o644)
print('open=%s' % ('ok' if rc >= 0 else os.strerror(ctypes.get_errno())), flush=True)
)PY";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      TempDir ws("atk3-uffd");
      write_file(ws / "u.py", script);
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--verdict", "--watch-writes", "--seccomp", "none", "--timeout", "30", "--",
                               "/usr/bin/python3", "u.py"});
      RunOptions o = at(ws);
      o.timeout = 60s;
      RunResult r = nsrun_test::nsrun(args, o);
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      if (r.out.find("uffd=none") == std::string::npos) CHECK_THAT(r.out, ContainsSubstring("open=Bad address"));
    }
  }
}

// ---------------------------------------------------------------- commit's exchange

// commit over an existing file exchanges the names and unlinks the old one
// (RENAME_EXCHANGE). The host puts a symlink to a file and to a directory
// outside where the files were, and a thread keeps swapping symlinks in
// while `commit --force` (no conflict check) runs: the exchange and the
// unlink act on names in the workspace only, so the files outside are as
// they were and nothing is made there.
TEST_CASE("attack3: commit's exchange never writes through a symlink the host swaps in", "[attack3][cow]") {
  require_userns();
  TempDir ws("atk3-xchg"), state("atk3-xchg-state"), outside("atk3-xchg-out");
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

// ---------------------------------------------------------------- deep trees

// The command builds its layer's trees to any depth (mkdir and chdir, one
// level at a time). nsrun's walks on the host recursed a level a frame:
// 30,000 levels overflowed its stack, and `nsrun commit` and `discard`
// died with SIGSEGV half-way (discard had removed run.json, so the run was
// neither listed nor removable). Now the walks stop at a depth with an
// error, and remove_tree (discard, home reset) removes any depth.
TEST_CASE("attack3: a 30000-deep tree in a layer: changes, commit, discard and home reset end cleanly (slow)",
          "[attack3][cow][home]") {
  require_userns();
  if (!python()) unavailable("python3", "python3 is not installed");
  // 30,000: the depth that crashed nsrun (in the workspace); the home's
  // tree needs only to be deeper than the walks' limits (the same code).
  const std::string deep = "import os, sys\nfor i in range(int(sys.argv[1])):\n    os.mkdir('d'); os.chdir('d')\n"
                           "open('f', 'w').write('x')\nprint('deep')\n";
  TempDir ws("atk3-deep"), state("atk3-deep-state"), home("atk3-deep-home");
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
