// A .git the command creates, in any shape, is reported; a git config
// that asks host git to run something (include.path, core.hooksPath,
// core.fsmonitor) is kept read-only however large or unreadable, and a
// config too large to follow refuses the launch and the commit.
#include "harness.hpp"
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// The names in a host directory, sorted (what a symlink's target held
// before and after a run).
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (const dirent* e = ::readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") out.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

namespace {

enum class GitKind { dir, gitdir_file, link_to_host, fifo, config_include };

const char* kind_name(GitKind k) {
  switch (k) {
    case GitKind::dir: return "a directory with hooks and config";
    case GitKind::gitdir_file: return "a gitdir: file";
    case GitKind::link_to_host: return "a symlink to a host directory";
    case GitKind::fifo: return "a fifo";
    case GitKind::config_include: return "a directory whose config includes and sets core.hooksPath";
  }
  return "?";
}

}  // namespace

// A workspace with no .git: every .git path is "not kept" (direct mode),
// and the command makes .git in one of several shapes. The scan after the
// run, which walks only the not-kept paths with one .git fd per walk,
// reports each created one, on both rungs; a .git that is a symlink to a
// host directory is reported and that directory is not entered (its
// contents and the walk's view both unchanged).
TEST_CASE("a .git the command creates, in any shape, is reported created on both rungs",
          "[git-own-paths][protect]") {
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    for (GitKind kind : {GitKind::dir, GitKind::gitdir_file, GitKind::link_to_host, GitKind::fifo,
                         GitKind::config_include}) {
      DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces: " : "landlock: ") << kind_name(kind)) {
        const std::vector<std::string> pin = rung_options(rung);
        TempDir ws("git-own-git"), host("git-own-githost");
        make_dir(host / "hooks");
        write_file(host / "config", "[core]\n");
        const std::vector<std::string> host_before = listing(host.path());
        std::string make;
        switch (kind) {
          case GitKind::dir: make = "mkdir -p .git/hooks && echo '[core]' > .git/config"; break;
          case GitKind::gitdir_file: make = "echo 'gitdir: elsewhere' > .git"; break;
          case GitKind::link_to_host: make = "ln -s \"$1\" .git"; break;
          case GitKind::fifo: make = "mkfifo .git"; break;
          case GitKind::config_include:
            make = "mkdir .git && printf '[include]\\n\\tpath = ../inc\\n[core]\\n\\thooksPath = h\\n' > .git/config";
            break;
        }
        std::vector<std::string> argv = pin;
        argv.insert(argv.end(), {"--report", ws / "r.json", "--", "/bin/sh", "-c", make, "sh", host.path()});
        RunResult r = nsrun_test::nsrun(argv, at(ws));
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        const std::string json = read_file(ws / "r.json");
        // .git/config is reported for every shape: a non-directory .git
        // covers it (covered), a directory holds it (read-only).
        const std::string config = ws / ".git/config";
        CHECK(r.err.find("nsrun: protected path " + config + ": created during the run") != std::string::npos);
        CHECK(json.find("{\"path\":\"" + config + "\",\"kept\":\"not-kept\",\"operation\":\"created\"}") !=
              std::string::npos);
        if (kind != GitKind::config_include)
          CHECK(r.err.find("nsrun: protected path " + ws / ".git/hooks" + ": created during the run") !=
                std::string::npos);
        // Paths still missing are not reported.
        CHECK(r.err.find(ws / ".envrc") == std::string::npos);
        CHECK(listing(host.path()) == host_before);
      }
    }
  }
}

// The next launch in a workspace whose .git the last command made: the
// git paths are read (gitdir: file, include.path, core.hooksPath) by
// git_protected_paths(), which opens .git once to classify it. A fifo
// .git or a fifo config must not hang it, and what the config names is
// kept read-only on the namespace rung.
TEST_CASE("a .git config with include.path and core.hooksPath made by one run is kept by the next",
          "[git-own-paths][protect]") {
  require_userns();
  TempDir ws("git-own-gitnext");
  RunResult made = nsrun_test::nsrun({"--", "/bin/sh", "-c",
                          "mkdir -p .git h && printf '[include]\\n\\tpath = ../inc\\n[core]\\n\\thooksPath = h\\n' > "
                          ".git/config && echo '[core]' > inc && echo x > h/pre-commit"},
                         at(ws));
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  // What the run made was quarantined after it (protect_gitdirs_test.cpp):
  // the config, the file it includes, the hook. The user looks at each and
  // keeps it (renames it back).
  CHECK(made.err.find("nsrun: git configuration " + ws / ".git/config:") != std::string::npos);
  int kept = 0;
  for (std::size_t at = 0; (at = made.err.find("nsrun: git configuration ", at)) != std::string::npos; ++at) {
    const std::size_t path_at = at + std::string_view("nsrun: git configuration ").size();
    const std::string path = made.err.substr(path_at, made.err.find(": ", path_at) - path_at);
    const std::size_t name_at = made.err.find("renamed to ", path_at) + std::string_view("renamed to ").size();
    const std::string name = made.err.substr(name_at, made.err.find(' ', name_at) - name_at);
    REQUIRE(::rename((path.substr(0, path.rfind('/') + 1) + name).c_str(), path.c_str()) == 0);
    ++kept;
  }
  CHECK(kept == 3);
  RunResult r = nsrun_test::nsrun({"--", "/bin/sh", "-c",
                       "echo evil >> inc 2>/dev/null; echo evil >> h/pre-commit 2>/dev/null; "
                       "echo evil >> .git/config 2>/dev/null; exit 0"},
                      at(ws));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(ws / "inc") == "[core]\n");
  CHECK(read_file(ws / "h/pre-commit") == "x\n");
  CHECK(read_file(ws / ".git/config").find("evil") == std::string::npos);
  // A fifo where .git and where its config should be: the next launch
  // does not hang on either.
  TempDir ws2("git-own-gitfifo");
  REQUIRE(::mkfifo((ws2 / ".git").c_str(), 0600) == 0);
  RunResult f = nsrun_test::nsrun({"--", "/bin/true"}, [&] {
    RunOptions o = at(ws2);
    o.timeout = 20s;
    return o;
  }());
  CHECK(f.exit_code == 0);
  TempDir ws3("git-own-gitcfgfifo");
  make_dir(ws3 / ".git");
  REQUIRE(::mkfifo((ws3 / ".git/config").c_str(), 0600) == 0);
  RunOptions o3 = at(ws3);
  o3.timeout = 20s;
  RunResult g = nsrun_test::nsrun({"--", "/bin/true"}, o3);
  CHECK(g.exit_code == 0);
}

// git_protected_paths() classifies each git path with one open for
// reading (look_beneath). A `.git` file naming a git directory inside the
// workspace: that directory's config is protected only when it is found.
// A config past the read cap (1 MiB, git reads it whole) has no text, and
// one the caller may not read (mode 0: the command, the same user, chmods
// it back) neither; taken for absent, the command could append
// `core.fsmonitor`, which git runs. A regular file is present whether or
// not it was read. And since a config nsrun cannot read whole
// may include files nsrun then cannot protect (the next test), a launch
// with one is refused: exit 125, one line, nothing run.
TEST_CASE("a gitdir's config too large to read, or unreadable, is still kept read-only", "[git-own-paths][protect]") {
  require_userns();
  for (bool big : {true, false}) {
    DYNAMIC_SECTION((big ? "1.1 MB config" : "mode 0 config")) {
      TempDir ws("git-own-gitbig");
      write_file(ws / ".git", "gitdir: gd\n");
      make_dir(ws / "gd");
      write_file(ws / "gd/HEAD", "ref: refs/heads/main\n");
      const std::string config = "[core]\n\trepositoryformatversion = 0\n" +
                                 (big ? std::string(1100000, '#') + "\n" : std::string());
      write_file(ws / "gd/config", config, big ? 0644 : 0);
      RunResult r = nsrun_test::nsrun(
          {"--", "/bin/sh", "-c",
           "chmod 644 gd/config 2>/dev/null; printf '[core]\\n\\tfsmonitor = evil\\n' >> gd/config 2>/dev/null; exit 0"},
          at(ws));
      INFO(r.err);
      if (big) {
        CHECK(r.exit_code == 125);
        CHECK(r.err.starts_with("nsrun: read " + (ws / "gd/config") + ": a git config nsrun cannot read whole"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      } else {
        CHECK(r.exit_code == 0);
      }
      struct stat st{};
      REQUIRE(::stat((ws / "gd/config").c_str(), &st) == 0);
      CHECK(st.st_size == static_cast<off_t>(config.size()));
      CHECK((st.st_mode & 07777) == (big ? 0644u : 0u));
    }
  }
}

// A repository config over the cap that includes a workspace file: nsrun
// cannot read the include line, so it could not protect the included
// file, which git (reading the config whole) takes `core.fsmonitor` from.
// Unrefused, the command writes the include and host git runs it: the
// launch is refused, and so is `nsrun commit` of such a workspace
// (the same paths decide what commit may apply).
TEST_CASE("a repository config too large to follow its includes refuses the launch, on both rungs",
          "[git-own-paths][protect]") {
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> argv = rung_options(rung);
      TempDir ws("git-own-gitinc");
      make_dir(ws / ".git");
      write_file(ws / ".git/HEAD", "ref: refs/heads/main\n");
      const std::string config = "[core]\n\trepositoryformatversion = 0\n" + std::string(1100000, '#') +
                                 "\n[include]\n\tpath = ../inc.cfg\n";
      write_file(ws / ".git/config", config);
      write_file(ws / "inc.cfg", "");
      argv.insert(argv.end(), {"--", "/bin/sh", "-c", "printf '[core]\\n\\tfsmonitor = evil\\n' >> inc.cfg; touch ran"});
      RunResult r = nsrun_test::nsrun(argv, at(ws));
      INFO(r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.find(".git/config: a git config nsrun cannot read whole") != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
      CHECK(read_file(ws / "inc.cfg").empty());
      CHECK_FALSE(file_exists(ws / "ran"));
    }
  }
}

// `nsrun commit` asks the same function which workspace paths are git's:
// a config grown past the cap after the run (by the host) refuses the
// commit too, and nothing of the layer is applied.
TEST_CASE("nsrun commit refuses a workspace whose git config is too large to follow", "[git-own-paths][protect][cow]") {
  require_userns();
  TempDir ws("git-own-gitcommit"), state("git-own-gitcommit-state");
  make_dir(ws / ".git");
  write_file(ws / ".git/HEAD", "ref: refs/heads/main\n");
  write_file(ws / ".git/config", "[core]\n");
  nsrun_test::cow::settle_clock();
  const std::vector<std::string> env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR="};
  const std::string id = nsrun_test::cow::cow_run(ws, env, "printf '[core]\\n\\tfsmonitor = evil\\n' > inc.cfg");
  write_file(ws / ".git/config", "[core]\n" + std::string(1100000, '#') + "\n[include]\n\tpath = ../inc.cfg\n");
  RunResult commit = nsrun_test::nsrun({"commit", id}, nsrun_test::cow::in(ws, env));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 125);
  CHECK(commit.err.find(".git/config: a git config nsrun cannot read whole") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "inc.cfg"));
}
