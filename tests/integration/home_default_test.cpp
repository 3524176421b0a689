// The copy-on-write home is the default in workspace-write and
// read-only modes (not in the bwrap dialect, not in full-access); where the
// overlay is refused the launch falls back to redirecting the caches,
// stated, on the same rung; the layer is made through no symlink, the
// caller's, 0700; and the default credentials stay hidden inside the cow
// home: not readable by any name, not writable, never copied up.
#include "harness.hpp"
#include "manifest.hpp"

#include <catch2/catch_test_macros.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

using namespace nsrun_test;

namespace {

struct Home {
  TempDir ws{"hd-ws"};
  TempDir state{"hd-state"};
  TempDir home{"hd-home"};
  Home() { write_file(home / ".bashrc", "# real\n"); }
  RunOptions opts() const {
    RunOptions o = at(ws);
    o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path(), "XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
    return o;
  }
  // The one home layer of this workspace (the default: one per workspace).
  std::string layer() const {
    std::vector<std::string> layers;
    for (const auto& n : names_below(state / "nsrun/home"))
      if (n.find('/') == std::string::npos) layers.push_back(n);
    REQUIRE(layers.size() == 1);
    return state / ("nsrun/home/" + layers.front());
  }
};

}  // namespace

TEST_CASE("default home: copy-on-write in workspace-write and read-only modes; --home ro, bwrap, full-access "
          "make no layer",
          "[home][default]") {
  require_userns();
  Home h;
  const auto before = manifest(h.home.path());
  RunResult w = nsrun({"--", "sh", "-c", "echo inside >> ~/.bashrc && cat ~/.bashrc"}, h.opts());
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  CHECK(w.out == "# real\ninside\n");
  CHECK(w.err.find("read-only") == std::string::npos);
  CHECK(manifest(h.home.path()) == before);
  CHECK(read_file(h.layer() + "/upper/.bashrc") == "# real\ninside\n");

  // read-only mode: the same layer (the same workspace), still writable.
  RunResult r = nsrun({"--mode", "read-only", "--", "sh", "-c", "cat ~/.bashrc; echo more >> ~/.bashrc && echo ok"},
                      h.opts());
  INFO(r.err);
  CHECK(r.out == "# real\ninside\nok\n");
  CHECK(manifest(h.home.path()) == before);

  // --home ro: today's behaviour, the home read-only, the layer unseen.
  RunResult ro = nsrun({"--home", "ro", "--", "sh", "-c", "cat ~/.bashrc; echo x >> ~/.bashrc 2>/dev/null || echo refused"},
                       h.opts());
  CHECK(ro.out == "# real\nrefused\n");

  // explain says so.
  CHECK(nsrun({"explain", "--", "true"}, h.opts()).out.find("home: cow (" + h.home.path() + " is an overlay") !=
        std::string::npos);

  // The bwrap dialect has no home overlay, full-access none of its own: no
  // layer is made for either.
  TempDir other_state("hd-state2");
  RunOptions o = h.opts();
  o.env.push_back("XDG_STATE_HOME=" + other_state.path());
  RunResult bw = nsrun({"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user", "--", "sh", "-c",
                        "echo x >> \"$HOME/.bashrc\" 2>/dev/null || echo refused"},
                       o);
  INFO(bw.err);
  CHECK(bw.out == "refused\n");
  CHECK(nsrun({"--mode", "full-access", "--", "true"}, o).exit_code == 0);
  CHECK(names_below(other_state.path()).empty());
  CHECK(nsrun({"bwrap", "--ro-bind", "/", "/", "--", "true"}, o).exit_code == 0);
  CHECK(names_below(other_state.path()).empty());
  CHECK(manifest(h.home.path()) == before);
}

TEST_CASE("default home: the layer is made through no symlink, the caller's, mode 0700; a planted link leaves "
          "the home read-only, stated",
          "[home][default]") {
  require_userns();
  Home h;
  RunOptions o = h.opts();
  o.env.push_back("XDG_STATE_HOME=");  // unset: the default under $HOME
  RunResult w = nsrun({"--", "sh", "-c", "echo inside >> ~/.bashrc"}, o);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  CHECK(read_file(h.home / ".bashrc") == "# real\n");
  for (const std::string rel : {".local", ".local/state", ".local/state/nsrun", ".local/state/nsrun/home"}) {
    struct stat st{};
    REQUIRE(::lstat((h.home / rel).c_str(), &st) == 0);
    INFO(rel);
    CHECK(S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(st.st_uid == ::geteuid());
  }
  std::vector<std::string> layers;
  for (const auto& n : names_below(h.home / ".local/state/nsrun/home"))
    if (n.find('/') == std::string::npos) layers.push_back(n);
  REQUIRE(layers.size() == 1);
  struct stat st{};
  REQUIRE(::lstat((h.home / (".local/state/nsrun/home/" + layers.front())).c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(st.st_uid == ::geteuid());

  // A symlink where the state directory goes: not followed, nothing made
  // where it points; the launch runs with the home read-only and says why.
  Home planted;
  TempDir elsewhere("hd-elsewhere");
  REQUIRE(::symlink(elsewhere.path().c_str(), (planted.home / ".local").c_str()) == 0);
  RunOptions po = planted.opts();
  po.env.push_back("XDG_STATE_HOME=");
  RunResult p = nsrun({"--", "sh", "-c", "echo x >> ~/.bashrc 2>/dev/null || echo refused"}, po);
  INFO(p.err);
  CHECK(p.exit_code == 0);
  CHECK(p.out == "refused\n");
  CHECK(p.err.find("no home layer") != std::string::npos);
  CHECK(p.err.find("the home stays read-only") != std::string::npos);
  CHECK(names_below(elsewhere.path()).empty());
  CHECK(read_file(planted.home / ".bashrc") == "# real\n");
}

TEST_CASE("default home where the overlay is refused (a home on a stacked overlay): caches redirected on the "
          "namespace rung, stated, credentials hidden",
          "[home][default][fallback]") {
  require_userns();
  if (::access("/usr/bin/unshare", X_OK) != 0) unavailable("unshare", "/usr/bin/unshare (util-linux) is not installed");
  TempDir t("hd-stack");
  TempDir ws("hd-ws");
  for (const char* d : {"l1", "u1", "w1", "m1", "u2", "w2", "home", "state"}) make_dir(t / d);
  const std::string report = t / "report.json";
  // Two overlays in a user namespace of the test's own: the home is the
  // second, so an overlay on it would stack three deep, past the kernel's
  // limit (FILESYSTEM_MAX_STACK_DEPTH): EINVAL, as on a host whose home
  // lives on a file system overlayfs cannot take as a lower layer.
  const std::string inside =
      "echo evil >> ~/.bashrc 2>/dev/null; echo bashrc=$?; cat ~/.npmrc 2>/dev/null; "
      "cat /proc/self/root$HOME/.npmrc 2>/dev/null; echo \"$npm_config_cache\"; "
      "mkdir -p \"$npm_config_cache\" && echo warm > \"$npm_config_cache/entry\" && echo cache=ok";
  const std::string script =
      "set -e; T=" + shell_quote(t.path()) +
      "; mount -t overlay o -o lowerdir=$T/l1,upperdir=$T/u1,workdir=$T/w1 $T/m1; mkdir $T/m1/l; "
      "mount -t overlay o -o lowerdir=$T/m1/l,upperdir=$T/u2,workdir=$T/w2 $T/home; "
      "echo real > $T/home/.bashrc; echo SECRET > $T/home/.npmrc; "
      "export HOME=$T/home XDG_STATE_HOME=$T/state; " + shell_quote(nsrun_path()) + " --report " +
      shell_quote(report) + " -- sh -c " + shell_quote(inside) + "; echo ===; " + shell_quote(nsrun_path()) +
      " --home cow -- true";
  RunOptions o = at(ws);
  o.env = {"XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
  RunResult r = run({"/usr/bin/unshare", "-Urm", "sh", "-c", script}, o);
  INFO(r.out << r.err);
  if (r.err.find("unshare:") != std::string::npos || r.err.find("mount:") != std::string::npos)
    unavailable("overlay in a user namespace", "the test could not stack its own overlays: " + r.err);
  REQUIRE(r.exit_code == 0);
  // The default says it in the report (the issue: "say which in the
  // report"); --home cow asked for says it on stderr too.
  CHECK(r.err.find("nsrun:") == r.err.rfind("nsrun:"));
  CHECK(r.err.find("nsrun: --home cow: no overlay for the home here (overlay-unavailable") != std::string::npos);
  CHECK(r.err.find("the home stays read-only and the well-known caches go to " + t.path() + "/state/nsrun/home/") !=
        std::string::npos);
  CHECK(r.out.find("bashrc=0") == std::string::npos);
  CHECK(r.out.find("SECRET") == std::string::npos);
  CHECK(r.out.find("cache=ok") != std::string::npos);
  const std::string json = read_file(report);
  CHECK(json.find("\"rung\":\"namespaces\"") != std::string::npos);
  CHECK(json.find("\"home\":\"cache-redirect\"") != std::string::npos);
  CHECK(json.find("\"npm_config_cache\"") != std::string::npos);
  CHECK(json.find("no overlay for the home here (overlay-unavailable: mount overlay on " + t.path() + "/home") !=
        std::string::npos);
  // The cache is on the host, warm for the next run; the home's own upper
  // holds only what the test wrote.
  std::string entry;
  for (const auto& n : names_below(t / "state"))
    if (n.ends_with("/redirect/npm/entry")) entry = n;
  REQUIRE(!entry.empty());
  CHECK(read_file(t / ("state/" + entry)) == "warm\n");
  const auto upper = names_below(t / "u2");
  CHECK(upper == std::vector<std::string>{".bashrc", ".npmrc"});
  CHECK(read_file(t / "u2/.bashrc") == "real\n");
}

TEST_CASE("cow home: each default credential stays unreadable and unwritable; nothing is copied up; "
          "--allow-read re-exposes it read-only",
          "[home][cow][credentials]") {
  require_userns();
  Home h;
  write_file(h.home / ".npmrc", "//registry/:_authToken=SECRET-NPM\n", 0600);
  make_dir(h.home / ".ssh", 0700);
  write_file(h.home / ".ssh/id_ed25519", "SECRET-SSH\n", 0600);
  make_dir(h.home / ".aws");
  write_file(h.home / ".aws/credentials", "SECRET-AWS\n");
  make_dir(h.home / ".config");
  make_dir(h.home / ".config/gcloud");
  write_file(h.home / ".config/gcloud/credentials.db", "SECRET-GCLOUD\n");
  make_dir(h.home / ".kube");
  write_file(h.home / ".kube/config", "SECRET-KUBE\n");
  make_dir(h.home / ".docker");
  write_file(h.home / ".docker/config.json", "SECRET-DOCKER\n");
  write_file(h.home / ".netrc", "SECRET-NETRC\n", 0600);
  write_file(h.home / ".git-credentials", "SECRET-GIT\n", 0600);
  make_dir(h.home / ".gnupg", 0700);
  write_file(h.home / ".gnupg/secring", "SECRET-GPG\n", 0600);
  REQUIRE(::symlink((h.home / ".ssh/id_ed25519").c_str(), (h.home / "key-link").c_str()) == 0);
  REQUIRE(::symlink((h.home / ".npmrc").c_str(), (h.ws / "npmrc-link").c_str()) == 0);
  const auto before = manifest(h.home.path());
  const std::string files =
      ".npmrc .ssh/id_ed25519 .aws/credentials .config/gcloud/credentials.db .kube/config .docker/config.json "
      ".netrc .git-credentials .gnupg/secring";

  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      if (rung == Rung::landlock) require_landlock();
      // Reads by name, through symlinks (one in the home, one in the
      // workspace) and /proc/self/root.
      // Hidden whole: ~/.npmrc's copy without its secrets is held by the
      // settings-copy tests (hidden_credentials_test.cpp).
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--no-settings-copy", "--", "sh", "-c",
                               "for f in " + files + "; do cat \"$HOME/$f\"; cat \"/proc/self/root$HOME/$f\"; done "
                               "2>/dev/null; cat ~/key-link npmrc-link 2>/dev/null; "
                               "cat ~/.bashrc; echo ok > ~/.ok 2>/dev/null; true"});
      RunResult r = nsrun(args, h.opts());
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "# real\n");
      CHECK(manifest(h.home.path()) == before);
    }
  }

  // Writes, replacements, links and metadata changes through the hidden
  // paths: each refused, and none copies anything up into the layer.
  const std::string writes =
      "for f in " + files + "; do echo evil >> \"$HOME/$f\" 2>/dev/null && echo \"wrote $f\"; "
      "echo evil > \"$HOME/$f\" 2>/dev/null && echo \"replaced $f\"; "
      "chmod 666 \"$HOME/$f\" 2>/dev/null && echo \"chmod $f\"; "
      "ln \"$HOME/$f\" \"$HOME/hard-$(basename $f)\" 2>/dev/null && echo \"linked $f\"; "
      "cp \"$HOME/$f\" \"$HOME/copy-$(basename $f)\" 2>/dev/null && echo \"copied $f\"; "
      "mv \"$HOME/$f\" \"$HOME/moved-$(basename $f)\" 2>/dev/null && echo \"moved $f\"; done; "
      "for d in .ssh .aws .config/gcloud .kube .gnupg; do touch \"$HOME/$d/new\" 2>/dev/null && echo \"made in $d\"; "
      "mv \"$HOME/$d\" \"$HOME/$d.gone\" 2>/dev/null && echo \"moved $d\"; "
      "rm -rf \"$HOME/$d\" 2>/dev/null; test -d \"$HOME/$d\" || echo \"removed $d\"; done; "
      "echo ok > ~/.ok && echo layer-ok";
  RunResult w = nsrun({"--no-settings-copy", "--", "sh", "-c", writes}, h.opts());
  INFO(w.err);
  CHECK(w.out == "layer-ok\n");
  CHECK(manifest(h.home.path()) == before);
  const std::string upper = h.layer() + "/upper";
  // The layer holds the command's one real write, nothing of the hidden
  // paths (not even a directory copied up on the way).
  CHECK(names_below(upper) == std::vector<std::string>{".ok"});
  for (const auto& [path, what] : manifest(upper)) CHECK(what.find("SECRET") == std::string::npos);

  // --allow-read: readable, still read-only, nothing copied up.
  RunResult a = nsrun({"--no-settings-copy", "--allow-read", h.home / ".ssh", "--", "sh", "-c",
                       "cat ~/.ssh/id_ed25519; echo evil >> ~/.ssh/id_ed25519 2>/dev/null && echo wrote; "
                       "touch ~/.ssh/new 2>/dev/null && echo made; cat ~/.npmrc 2>/dev/null; true"},
                      h.opts());
  INFO(a.err);
  CHECK(a.out == "SECRET-SSH\n");
  CHECK(names_below(upper) == std::vector<std::string>{".ok"});
  CHECK(manifest(h.home.path()) == before);

  // A credential the home lacks may be made in the layer: it is not the
  // real one, and no cover was needed for it (none is planned).
  Home empty;
  RunResult made = nsrun({"--", "sh", "-c", "mkdir -p ~/.ssh && echo fake > ~/.ssh/id_rsa && cat ~/.ssh/id_rsa"},
                         empty.opts());
  INFO(made.err);
  CHECK(made.out == "fake\n");
  CHECK(!file_exists(empty.home / ".ssh"));
  // (The account's own home may have credentials of its own, hidden too.)
  CHECK(nsrun({"explain", "--", "true"}, empty.opts()).out.find("  " + empty.home.path() + "/") == std::string::npos);
}

TEST_CASE("default home on the Landlock rung: caches redirected, the home read-only, said in the report and not "
          "on stderr",
          "[home][default][landlock]") {
  require_landlock();
  Home h;
  const auto before = manifest(h.home.path());
  const std::string report = h.ws / "report.json";
  RunResult r = nsrun({"--backend", "landlock", "--report", report, "--", "sh", "-c",
                       "{ echo x >> ~/.bashrc; } 2>/dev/null && echo wrote; mkdir -p \"$CCACHE_DIR\" && "
                       "echo warm > \"$CCACHE_DIR/entry\" && echo cache=ok"},
                      h.opts());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "cache=ok\n");
  CHECK(r.err.empty());
  const std::string json = read_file(report);
  CHECK(json.find("\"home\":\"cache-redirect\"") != std::string::npos);
  CHECK(read_file(h.layer() + "/redirect/ccache/entry") == "warm\n");
  CHECK(manifest(h.home.path()) == before);
  // nsrun probe makes no layer and calls the Landlock rung usable.
  TempDir empty_state("hd-state3");
  RunOptions o = h.opts();
  o.env.push_back("XDG_STATE_HOME=" + empty_state.path());
  RunResult p = nsrun({"probe", "--json"}, o);
  INFO(p.out << p.err);
  CHECK(p.exit_code == 0);
  CHECK(p.out.find("ro-overlay") == std::string::npos);
  CHECK(names_below(empty_state.path()).empty());
}
