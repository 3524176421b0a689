// Protected paths inside writable roots, and credentials hidden by
// default. Every test attacks and then looks at the host: the
// protected files byte for byte, the names in the directories, nothing left
// behind.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace nsrun_test;

namespace {

// The names in a directory tree (relative), with their types: what "the
// host unchanged" is compared by.
std::set<std::string> tree(const std::string& dir, const std::string& prefix = "") {
  std::set<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st{};
    const std::string path = dir + "/" + name;
    if (::lstat(path.c_str(), &st) != 0) continue;
    const char type = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f';
    out.insert(prefix + name + ":" + type);
    if (S_ISDIR(st.st_mode) && name != "objects") {
      auto sub = tree(path, prefix + name + "/");
      out.insert(sub.begin(), sub.end());
    }
  }
  ::closedir(d);
  return out;
}

bool have_git() { return run({"sh", "-c", "command -v git"}).exit_code == 0; }

RunResult git(const TempDir& ws, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", ws.path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

// A repository with one commit and a hook, made on the host.
void make_repo(const TempDir& ws) {
  REQUIRE(git(ws, {"init", "-q"}).exit_code == 0);
  write_file(ws / "f", "one\n");
  REQUIRE(git(ws, {"add", "f"}).exit_code == 0);
  REQUIRE(git(ws, {"commit", "-qm", "one"}).exit_code == 0);
  write_file(ws / ".git/hooks/post-commit", "#!/bin/sh\nexit 0\n", 0755);
}

// Each route to make `target` (relative to the workspace) exist, tried in
// the sandbox; prints one line per route that worked.
std::string creation_routes(const std::string& target) {
  const std::string t = shell_quote(target);
  return "t=" + t + "; d=$(dirname \"$t\"); b=$(basename \"$t\")\n"
         "{ true > \"$t\"; } 2>/dev/null && echo created-by-open\n"
         "mkdir \"$t\" 2>/dev/null && echo created-by-mkdir\n"
         "echo evil > other 2>/dev/null; mv -T other \"$t\" 2>/dev/null && echo created-by-rename-file\n"
         "mkdir otherdir 2>/dev/null; mv -T otherdir \"$t\" 2>/dev/null && echo created-by-rename-dir\n"
         "ln other \"$t\" 2>/dev/null && echo created-by-link\n"
         "ln -s /etc/passwd \"$t\" 2>/dev/null && echo created-by-symlink\n"
         "mkdir -p sub 2>/dev/null; { true > \"sub/../$t\"; } 2>/dev/null && echo created-by-dotdot\n"
         "{ true > \"/proc/self/cwd/$t\"; } 2>/dev/null && echo created-by-proc-cwd\n"
         "mv -T \"$d\" \"$d.away\" 2>/dev/null && { true > \"$d.away/$b\"; mv -T \"$d.away\" \"$d\"; } 2>/dev/null && "
         "echo created-by-parent-rename\n"
         "true\n";
}

}  // namespace

TEST_CASE("protected paths: existing ones stay as they are while git works", "[protect]") {
  require_userns();
  if (!have_git()) unavailable("git", "git is not installed");
  TempDir ws("protect-git");
  make_repo(ws);
  const std::string config = read_file(ws / ".git/config");
  const std::string hook = read_file(ws / ".git/hooks/post-commit");
  const auto hooks_before = tree(ws / ".git/hooks");

  const std::string attack =
      "echo '[core] hooksPath = /tmp' >> .git/config 2>/dev/null && echo wrote-config\n"
      "rm -f .git/config 2>/dev/null; [ -e .git/config ] || echo removed-config\n"
      "echo x > c2; mv -f c2 .git/config 2>/dev/null && echo replaced-config\n"
      "echo 'echo pwned' > .git/hooks/post-commit 2>/dev/null && echo wrote-hook\n"
      "echo 'echo pwned' > .git/hooks/pre-commit 2>/dev/null && echo new-hook\n"
      "rm -rf .git/hooks 2>/dev/null; [ -d .git/hooks ] || echo removed-hooks\n"
      "mv .git .git-away 2>/dev/null && echo moved-git\n"
      "git -c user.name=t -c user.email=t@e checkout -qb feature && echo two >> f && git add f && "
      "git -c user.name=t -c user.email=t@e commit -qm two && echo three >> f && "
      "git -c user.name=t -c user.email=t@e stash -q && echo git-ok\n";
  RunResult r = nsrun({"--", "sh", "-c", attack}, at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "git-ok\n");
  // The host: the same config and hooks, and git's own work done.
  CHECK(read_file(ws / ".git/config") == config);
  CHECK(read_file(ws / ".git/hooks/post-commit") == hook);
  CHECK(tree(ws / ".git/hooks") == hooks_before);
  CHECK_FALSE(file_exists(ws / ".git-away"));
  RunResult log = git(ws, {"log", "--format=%s", "feature"});
  CHECK(log.out == "two\none\n");
  CHECK(git(ws, {"stash", "list"}).out.find("feature") != std::string::npos);
}

TEST_CASE("protected paths: a missing one below an existing directory cannot be created by any route",
          "[protect]") {
  require_userns();
  TempDir ws("protect-missing");
  make_dir(ws / ".git");
  make_dir(ws / ".git/info");
  write_file(ws / ".git/info/exclude", "# keep\n");
  make_dir(ws / "conf");
  make_dir(ws / "conf/deep");
  write_file(ws / "conf/deep/keep", "k\n");
  const auto before = tree(ws.path());

  for (const std::string target : {".git/info/attributes", "conf/deep/run.sh"}) {
    DYNAMIC_SECTION(target) {
      RunResult r = nsrun({"--protect", "conf/deep/run.sh", "--", "sh", "-c", creation_routes(target)}, at(ws));
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "");
      CHECK_FALSE(file_exists(ws / target));
      // The workspace holds what the routes made elsewhere, nothing more.
      auto after = tree(ws.path());
      for (const char* made : {"other:f", "otherdir:d", "sub:d"}) after.erase(made);
      CHECK(after == before);
    }
  }
  // The other entries of a sealed directory stay writable in place.
  RunResult edit = nsrun({"--", "sh", "-c", "echo added >> .git/info/exclude"}, at(ws));
  CHECK(edit.exit_code == 0);
  CHECK(read_file(ws / ".git/info/exclude") == "# keep\nadded\n");
}

TEST_CASE("protected paths: a symlink at a protected path is covered, never followed", "[protect]") {
  require_userns();
  TempDir ws("protect-link");
  TempDir outside("protect-out");
  write_file(outside / "target", "outside\n");
  REQUIRE(::symlink((outside / "target").c_str(), (ws / ".envrc").c_str()) == 0);
  RunResult r = nsrun({"--writable", outside.path(), "--", "sh", "-c",
                       "echo evil > .envrc 2>/dev/null && echo wrote; cat .envrc 2>/dev/null && echo read; "
                       "rm -f .envrc 2>/dev/null && echo removed; true"},
                      at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "");
  CHECK(read_file(outside / "target") == "outside\n");
  CHECK(read_link(ws / ".envrc") == outside / "target");

  // A link that stays inside the root: its target is kept too, by its own name.
  TempDir inner("protect-inner");
  write_file(inner / "envrc.real", "fine\n");
  REQUIRE(::symlink("envrc.real", (inner / ".envrc").c_str()) == 0);
  RunResult in = nsrun({"--", "sh", "-c", "echo evil > envrc.real 2>/dev/null && echo wrote; true"}, at(inner));
  INFO(in.err);
  CHECK(in.out == "");
  CHECK(read_file(inner / "envrc.real") == "fine\n");
}

TEST_CASE("protected paths: one direct mode does not keep is reported when created", "[protect]") {
  require_userns();
  TempDir ws("protect-report");
  RunResult r = nsrun({"--report", ws / "r.json", "--", "sh", "-c", "echo 'eval evil' > .envrc"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("nsrun: protected path " + ws / ".envrc" + ": created during the run") != std::string::npos);
  const std::string report = read_file(ws / "r.json");
  CHECK(report.find("{\"path\":\"" + ws / ".envrc" + "\",\"kept\":\"not-kept\",\"operation\":\"created\"}") !=
        std::string::npos);
  RunResult explained = nsrun({"explain", "--", "true"}, at(ws));
  CHECK(explained.out.find(ws / ".git/hooks: missing, NOT KEPT") != std::string::npos);
  CHECK(explained.out.find(ws / ".envrc: read-only") != std::string::npos);
}

TEST_CASE("protected paths: options, and the Landlock rung restores what the run changed", "[protect]") {
  TempDir ws("protect-opts");
  make_dir(ws / ".vscode");
  write_file(ws / ".vscode/tasks.json", "{}\n");
  // Without the defaults (or with the entry dropped) the write goes through.
  require_userns();
  RunResult none = nsrun({"--protect-defaults", "none", "--", "sh", "-c", "echo 1 > .vscode/tasks.json"}, at(ws));
  CHECK(none.exit_code == 0);
  CHECK(read_file(ws / ".vscode/tasks.json") == "1\n");
  RunResult un = nsrun({"--unprotect", ".vscode", "--", "sh", "-c", "echo 2 > .vscode/tasks.json"}, at(ws));
  CHECK(un.exit_code == 0);
  CHECK(read_file(ws / ".vscode/tasks.json") == "2\n");
  RunResult kept = nsrun({"--", "sh", "-c", "echo 3 > .vscode/tasks.json"}, at(ws));
  CHECK(kept.exit_code != 0);
  CHECK(read_file(ws / ".vscode/tasks.json") == "2\n");
  // Bad input: exit 125, one line, nothing run.
  RunResult bad = nsrun({"--protect", "../x", "--", "touch", ws / "ran"}, at(ws));
  CHECK(bad.exit_code == 125);
  CHECK(count_lines(bad.err) == 1);
  CHECK_FALSE(file_exists(ws / "ran"));
  RunResult bad_set = nsrun({"--hide-defaults", "some", "--", "true"}, at(ws));
  CHECK(bad_set.exit_code == 125);
  // The Policy JSON.
  write_file(ws / "p.json", R"({"protect_defaults": false, "protect": ["x/y"], "hide_defaults": false})");
  RunResult policy = nsrun({"policy", "--policy", ws / "p.json"}, at(ws));
  CHECK(policy.out.find("\"protect_defaults\": false") != std::string::npos);
  CHECK(policy.out.find("\"protect\": [\n    \"x/y\"\n  ]") != std::string::npos);

  require_landlock();
  RunResult landlock = nsrun({"--backend", "landlock", "--", "sh", "-c", "echo 4 > .vscode/tasks.json"}, at(ws));
  INFO(landlock.err);
  CHECK(landlock.exit_code == 0);
  CHECK(landlock.err.find("nsrun: protected path " + ws / ".vscode/tasks.json") != std::string::npos);
  CHECK(read_file(ws / ".vscode/tasks.json") == "2\n");
  RunResult unprotected = nsrun({"--backend", "landlock", "--unprotect", ".vscode", "--", "true"}, at(ws));
  CHECK(unprotected.exit_code == 0);
}

TEST_CASE("protected paths: nsrun or PID 1 killed at any moment leaves nothing in the workspace", "[protect]") {
  require_userns();
  TempDir ws("protect-kill");
  make_dir(ws / ".git");
  make_dir(ws / ".git/info");
  const auto before = tree(ws.path());
  std::mt19937 random(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    Process p({nsrun_path(), "--", "sh", "-c", "echo ready; exec sleep 60"}, at(ws));
    // A quarter at once (while the sandbox is built), a quarter at a random
    // moment of the first 40 ms (the set-up or the command, whichever it
    // hits: the kill's moment, not a synchronisation), a quarter once the
    // command runs, a quarter by SIGKILL of PID 1 (nsrun's child) instead.
    if (i % 4 == 0) {
      p.signal(SIGKILL);
    } else if (i % 4 == 3) {
      std::this_thread::sleep_for(std::chrono::microseconds(random() % 40000));
      p.signal(SIGKILL);
    } else {
      p.wait_for_line("ready");
      const std::string children =
          read_file("/proc/" + std::to_string(p.pid()) + "/task/" + std::to_string(p.pid()) + "/children");
      const pid_t pid1 = i % 4 == 2 && !children.empty() ? std::stoi(children) : p.pid();
      ::kill(pid1, SIGKILL);
    }
    p.wait();
  }
  CHECK(tree(ws.path()) == before);
}

// ---------------------------------------------------------------- hidden credentials

TEST_CASE("hidden credentials: unreadable by name, through a symlink and /proc/self/root; --allow-read",
          "[protect][credentials]") {
  TempDir home("cred-home");
  TempDir ws("cred-ws");
  write_file(home / ".netrc", "//registry/:_authToken=SECRET\n", 0600);
  make_dir(home / ".ssh", 0700);
  write_file(home / ".ssh/id_ed25519", "SECRET-KEY\n", 0600);
  make_dir(home / ".config");
  make_dir(home / ".config/gcloud");
  write_file(home / ".config/gcloud/credentials.db", "SECRET-DB\n");
  make_dir(home / ".docker");
  write_file(home / ".docker/config.json", "SECRET-AUTH\n");
  write_file(home / ".profile", "visible\n");
  REQUIRE(::symlink((home / ".netrc").c_str(), (ws / "netrc-link").c_str()) == 0);
  const auto home_before = tree(home.path());
  const auto ws_before = tree(ws.path());
  RunOptions opts = at(ws);
  opts.env = {"HOME=" + home.path()};

  const std::string reads = "for f in .netrc .ssh/id_ed25519 .config/gcloud/credentials.db .docker/config.json; do "
                            "cat \"$HOME/$f\" 2>/dev/null; cat \"/proc/self/root$HOME/$f\" 2>/dev/null; done; "
                            "cat netrc-link 2>/dev/null; cat \"$HOME/.profile\"";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--", "sh", "-c", reads});
      RunResult r = nsrun(args, opts);
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "visible\n");
      // --allow-read brings one back, read-only.
      std::vector<std::string> allow = rung_options(rung);
      allow.insert(allow.end(), {"--allow-read", home / ".netrc", "--", "sh", "-c",
                                 "cat \"$HOME/.netrc\"; cat \"$HOME/.ssh/id_ed25519\" 2>/dev/null; "
                                 "echo x >> \"$HOME/.netrc\" 2>/dev/null && echo wrote"});
      RunResult a = nsrun(allow, opts);
      INFO(a.err);
      CHECK(a.out == "//registry/:_authToken=SECRET\n");
      // --hide-defaults none: all of them.
      std::vector<std::string> none = rung_options(rung);
      none.insert(none.end(), {"--hide-defaults", "none", "--", "cat", home / ".ssh/id_ed25519"});
      CHECK(nsrun(none, opts).out == "SECRET-KEY\n");
      // Nothing was made on the host for the covers.
      CHECK(tree(home.path()) == home_before);
      CHECK(tree(ws.path()) == ws_before);
      CHECK(read_file(home / ".netrc") == "//registry/:_authToken=SECRET\n");
    }
  }
  RunResult explained = nsrun({"explain", "--", "true"}, opts);
  CHECK(explained.out.find("hidden credentials (reads fail; both rungs):\n") != std::string::npos);
  CHECK(explained.out.find("\n  " + home / ".netrc\n") !=
        std::string::npos);
  // A single file inside a hidden directory is shown on its own
  // (allow_read_inside_test.cpp holds the attacks on it).
  RunResult inside = nsrun({"--allow-read", home / ".ssh/id_ed25519", "--", "cat", home / ".ssh/id_ed25519"}, opts);
  CHECK(inside.exit_code == 0);
  CHECK(inside.out == "SECRET-KEY\n");
  // A policy file's list loses what --allow-read names.
  write_file(ws / "p.json", "{\"hide_defaults\": false, \"hidden_paths\": [\"" + home / ".netrc" + "\"]}");
  CHECK(nsrun({"--policy", ws / "p.json", "--", "cat", home / ".netrc"}, opts).exit_code != 0);
  CHECK(nsrun({"--policy", ws / "p.json", "--allow-read", home / ".netrc", "--", "cat", home / ".netrc"}, opts).out ==
        "//registry/:_authToken=SECRET\n");
}

// The Landlock rung cannot keep a protected path inside a writable root
// with a rule: it keeps it by snapshot, and whatever route made the path
// during the run, nothing is at its name when nsrun returns, and it is said.
TEST_CASE("protected paths: on the Landlock rung nothing any creation route made is left at the name",
          "[protect][landlock]") {
  require_landlock();
  TempDir ws("protect-ll-missing");
  make_dir(ws / ".git");
  make_dir(ws / ".git/info");
  make_dir(ws / "conf");
  make_dir(ws / "conf/deep");
  for (const std::string target : {".git/info/attributes", "conf/deep/run.sh", ".envrc"}) {
    DYNAMIC_SECTION(target) {
      RunResult r = nsrun({"--backend", "landlock", "--protect", "conf/deep/run.sh", "--", "sh", "-c",
                           "echo ran; " + creation_routes(target)},
                          at(ws));
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out.starts_with("ran\n"));
      CHECK(r.err.find("nsrun: protected path " + ws / target) != std::string::npos);
      CHECK_FALSE(file_exists(ws / target));
    }
  }
}
