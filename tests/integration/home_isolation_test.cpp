// The cow home keeps the host's credentials hidden and each workspace's
// layer its own: through every path spelling, metadata call and link a
// hostile command can make, on both rungs and in the namespace rung's
// fallback. Each test looks at the host afterwards, as root and as the
// unprivileged user (tools/run-tests.sh runs both).
#include "harness.hpp"
#include "manifest.hpp"
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

// A state home and $HOME of the test's own, with default credentials.
struct Home {
  TempDir ws{"home-isolation-ws"};
  TempDir state{"home-isolation-state"};
  TempDir home{"home-isolation-home"};
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

TEST_CASE("hidden credentials stay hidden through every spelling, metadata calls and links the command "
          "made in an earlier run",
          "[home-isolation][home]") {
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
TEST_CASE("--allow-read re-exposes exactly one path, read-only, on both rungs", "[home-isolation][home]") {
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
TEST_CASE("home diff and reset follow no link the command left in the home layer", "[home-isolation][home]") {
  require_userns();
  Home h;
  TempDir victim("home-isolation-victim");
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
// caches redirected) must hide the layers' base too, or every workspace's
// layer is readable by every other's command, while the caches still go to
// this workspace's redirect directory.
TEST_CASE("another workspace's home layer is not readable from a Landlock rung launch", "[home-isolation][home]") {
  require_userns();
  rung_options(Rung::landlock);
  Home h;
  TempDir other("home-isolation-other-ws");
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
// the root shows it, which would show the other workspaces' layers (what
// their runs wrote into their homes): they are hidden as for --home ro, on
// both rungs.
TEST_CASE("another workspace's home layer is not readable when this workspace's layer cannot be made",
          "[home-isolation][home]") {
  require_userns();
  Home h;
  TempDir other("home-isolation-other-ws");
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
TEST_CASE("another workspace's home layer is not readable in the namespace rung's fallback",
          "[home-isolation][home][fallback]") {
  require_userns();
  if (::access("/usr/bin/unshare", X_OK) != 0) unavailable("unshare", "/usr/bin/unshare (util-linux) is not installed");
  TempDir t("home-isolation-stack"), ws("home-isolation-stack-ws");
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
