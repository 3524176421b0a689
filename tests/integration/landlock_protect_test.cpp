// The Landlock rung inside a container-like seccomp profile (namespace
// flags refused, clone3 ENOSYS: tests/support/container_like.cpp), in a
// git repository with the default options: the ordinary work runs, and
// every attack on the protected set leaves nothing that host git or an
// editor would run once nsrun returns, each reported (snapshot and
// restore, launch/protect_restore.hpp).
#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "git_support.hpp"
#include "harness.hpp"

using namespace nsrun_test;

namespace {

// nsrun-container-like beside the suite (a copied install) or in the
// build tree's tests/.
std::string container_like() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& c : {dir + "/nsrun-container-like", dir + "/../tests/nsrun-container-like"})
      if (::access(c.c_str(), X_OK) == 0) return c;
  }
  unavailable("container-like", "nsrun-container-like was not built beside the suite");
}

// nsrun under the container-like filter, default options, in `ws`.
RunResult contained(const TempDir& ws, const std::string& report, const std::string& script) {
  require_landlock();
  if (!git_installed()) unavailable("git", "git is not installed");
  return run({container_like(), nsrun_path(), "--report", report, "--", "sh", "-c", script}, at(ws));
}

// A repository with one commit, made on the host.
struct Repo {
  TempDir ws{"llprotect"};
  TempDir aside{"llprotect-marks"};
  std::string marker = aside / "ran";
  std::string config;
  std::set<std::string> hooks;

  Repo() {
    REQUIRE(git_in(ws.path(), {"init", "-q", "."}).exit_code == 0);
    write_file(ws / "a", "a\n");
    REQUIRE(git_in(ws.path(), {"add", "a"}).exit_code == 0);
    REQUIRE(git_in(ws.path(), {"commit", "-qm", "first"}).exit_code == 0);
    config = read_file(ws / ".git/config");
    for (const auto& n : names_in(ws / ".git/hooks")) hooks.insert(n);
  }

  // A hook body that leaves the marker when something runs it.
  std::string evil() const { return fmt::format("#!/bin/sh\\ntouch {}\\n", marker); }

  // What the user does next on the host, and what it must not run.
  void host_git_runs_nothing() const {
    RunResult st = run({"git", "-C", ws.path(), "status", "--short"});
    CHECK(st.exit_code == 0);
    RunResult c = git_in(ws.path(), {"commit", "-q", "--allow-empty", "-m", "after"});
    CHECK(c.exit_code == 0);
    RunResult co = git_in(ws.path(), {"checkout", "-q", "-b", unique_token("host")});
    CHECK(co.exit_code == 0);
    CHECK_FALSE(file_exists(marker));
    CHECK(read_file(ws / ".git/config") == config);
    struct stat st_hooks{};
    REQUIRE(::lstat((ws / ".git/hooks").c_str(), &st_hooks) == 0);
    CHECK(S_ISDIR(st_hooks.st_mode));
    // Every name git would run is one that was there before; what the run
    // made is under a quarantine name.
    for (const auto& n : names_in(ws / ".git/hooks")) {
      INFO(n);
      CHECK((hooks.contains(n) || n.find(".nsrun-quarantine-") != std::string::npos));
    }
    for (const auto& p : {".envrc", ".vscode", ".idea", ".claude", ".agents", ".codex"}) {
      INFO(p);
      CHECK_FALSE(file_exists(ws / p));
    }
  }
};

void reported(const RunResult& r, const std::string& report, const std::string& what) {
  INFO(r.err);
  const std::string rep = read_file(report);
  INFO(rep);
  CHECK(rep.find(R"("rung":"landlock")") != std::string::npos);
  CHECK(rep.find(R"("kind":"protected-path")") != std::string::npos);
  CHECK(r.err.find("nsrun: protected path") != std::string::npos);
  CHECK(r.err.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("under a container profile the Landlock rung runs git, make and npm in a repository", "[landlock-protect]") {
  Repo repo;
  const std::string report = repo.aside / "report.json";
  write_file(repo.ws / "Makefile", "out: a\n\tcp a out\n");
  write_file(repo.ws / "b", "b\n");
  RunResult r = contained(repo.ws, report,
                          "git -c user.name=t -c user.email=t@example.invalid add b Makefile && "
                          "git -c user.name=t -c user.email=t@example.invalid commit -qm second && "
                          "git checkout -q -b feature && make -s");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(report).find(R"("rung":"landlock")") != std::string::npos);
  CHECK(r.err.find("protected path") == std::string::npos);
  CHECK(read_file(repo.ws / "out") == "a\n");
  CHECK(chomp(run({"git", "-C", repo.ws.path(), "log", "-1", "--format=%s"}).out) == "second");
  CHECK(chomp(run({"git", "-C", repo.ws.path(), "branch", "--show-current"}).out) == "feature");
  repo.host_git_runs_nothing();

  if (run({"sh", "-c", "command -v npm"}).exit_code != 0) {
    WARN("npm is not installed: npm install under the container profile not tried");
    return;
  }
  write_file(repo.ws / "package.json", R"({"name":"p","version":"1.0.0","dependencies":{}})");
  RunResult npm = contained(repo.ws, report, "npm install --no-audit --no-fund --offline >/dev/null");
  INFO(npm.err);
  CHECK(npm.exit_code == 0);
  CHECK(file_exists(repo.ws / "package-lock.json"));
}

TEST_CASE("under a container profile no hook the command writes is left for host git", "[landlock-protect]") {
  // Each way onto .git/hooks/pre-commit; the cp keeps the sample's
  // executable mode (chmod is refused on this rung).
  const std::vector<std::pair<std::string, std::string>> attacks = {
      {"write", "cp .git/hooks/pre-commit.sample .git/hooks/pre-commit && printf '{}' > .git/hooks/pre-commit"},
      {"rename onto", "cp .git/hooks/pre-commit.sample x && printf '{}' > x && mv x .git/hooks/pre-commit"},
      // A link from another directory of the workspace answers EXDEV on
      // this rung (seen on 6.18); one made in .git/hooks itself works.
      {"hard link", "cp .git/hooks/pre-commit.sample .git/hooks/x && printf '{}' > .git/hooks/x && "
                    "ln .git/hooks/x .git/hooks/pre-commit"},
      {"symlink", "cp .git/hooks/pre-commit.sample x && printf '{}' > x && ln -s ../../x .git/hooks/pre-commit"},
      {"/proc/self/cwd", "cp .git/hooks/pre-commit.sample /proc/self/cwd/.git/hooks/pre-commit && "
                         "printf '{}' > /proc/$$/cwd/.git/hooks/pre-commit"},
      {"sample overwritten", "printf '{}' > .git/hooks/pre-commit.sample && cp .git/hooks/pre-commit.sample "
                             ".git/hooks/pre-commit"},
      {"hooks replaced", "mv .git/hooks .git/old && mkdir .git/hooks && cp .git/old/pre-commit.sample "
                         ".git/hooks/pre-commit && printf '{}' > .git/hooks/pre-commit"},
      {"hooks a symlink", "mkdir evil && cp .git/hooks/pre-commit.sample evil/pre-commit && printf '{}' > "
                          "evil/pre-commit && mv .git/hooks .git/old && ln -s ../evil .git/hooks"},
      {"parent renamed away", "mv .git .git-old && cp -r .git-old .git && cp .git/hooks/pre-commit.sample "
                              ".git/hooks/pre-commit && printf '{}' > .git/hooks/pre-commit"},
  };
  for (const auto& [name, shape] : attacks) {
    DYNAMIC_SECTION(name) {
      Repo repo;
      const std::string report = repo.aside / "report.json";
      const std::string script = fmt::format(fmt::runtime(shape), repo.evil());
      RunResult r = contained(repo.ws, report, script + " && test -x .git/hooks/pre-commit && echo armed");
      INFO(r.err);
      // The attack took effect inside (the rung let it), and nothing of it
      // is left for host git.
      REQUIRE(r.out.find("armed") != std::string::npos);
      reported(r, report, ".git");
      repo.host_git_runs_nothing();
    }
  }
}

TEST_CASE("under a container profile git configuration and editor files the command writes are undone",
          "[landlock-protect]") {
  const std::vector<std::pair<std::string, std::string>> attacks = {
      {"core.fsmonitor", "printf '[core]\\n\\tfsmonitor = \"touch {1}\"\\n' >> .git/config"},
      {"core.hooksPath", "mkdir h && cp .git/hooks/pre-commit.sample h/pre-commit && printf '{0}' > h/pre-commit && "
                         "printf '[core]\\n\\thooksPath = h\\n' >> .git/config"},
      {"config replaced by rename", "cp .git/config c && printf '[core]\\n\\tfsmonitor = \"touch {1}\"\\n' >> c && "
                                    "mv c .git/config"},
      {"editor and agent files", "printf 'touch {1}' > .envrc && mkdir .vscode .idea .claude .agents .codex && "
                                 "echo '{{}}' > .vscode/tasks.json && echo '{{}}' > .claude/settings.json"},
  };
  for (const auto& [name, shape] : attacks) {
    DYNAMIC_SECTION(name) {
      Repo repo;
      const std::string report = repo.aside / "report.json";
      RunResult r = contained(repo.ws, report, fmt::format(fmt::runtime(shape), repo.evil(), repo.marker));
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      reported(r, report, "during the run");
      repo.host_git_runs_nothing();
    }
  }
}

TEST_CASE("under a container profile an existing editor directory is put back as it was", "[landlock-protect]") {
  Repo repo;
  make_dir(repo.ws / ".vscode");
  write_file(repo.ws / ".vscode/settings.json", "{\"editor.tabSize\": 2}\n");
  const std::string report = repo.aside / "report.json";
  RunResult r = contained(repo.ws, report,
                          "echo '{\"tasks\":[]}' > .vscode/tasks.json && echo changed > .vscode/settings.json && "
                          "mkdir .vscode/sub");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  reported(r, report, ".vscode/settings.json");
  CHECK(read_file(repo.ws / ".vscode/settings.json") == "{\"editor.tabSize\": 2}\n");
  CHECK_FALSE(file_exists(repo.ws / ".vscode/tasks.json"));
  CHECK_FALSE(file_exists(repo.ws / ".vscode/sub"));
  struct stat st{};
  REQUIRE(::stat((repo.ws / ".vscode/settings.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  CHECK(st.st_uid == ::geteuid());
}

TEST_CASE("under a container profile nested repositories and submodule git directories are quarantined",
          "[landlock-protect]") {
  Repo repo;
  const std::string report = repo.aside / "report.json";
  RunResult r = contained(
      repo.ws, report,
      // `git init` itself fails on this rung (its chmod is refused): the
      // nested repository is a copy.
      fmt::format("mkdir nested && cp -r .git nested/.git && mkdir -p .git/modules && "
                  "cp -r nested/.git .git/modules/sub && "
                  "cp .git/hooks/pre-commit.sample nested/.git/hooks/pre-commit && "
                  "printf '{0}' > nested/.git/hooks/pre-commit && "
                  "cp .git/hooks/pre-commit.sample .git/modules/sub/hooks/pre-commit && "
                  "printf '{0}' > .git/modules/sub/hooks/pre-commit",
                  repo.evil()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("git configuration") != std::string::npos);
  CHECK_FALSE(file_exists(repo.ws / "nested/.git/hooks/pre-commit"));
  CHECK_FALSE(file_exists(repo.ws / ".git/modules/sub/hooks/pre-commit"));
  RunResult c = git_in(repo.ws / "nested", {"commit", "-q", "--allow-empty", "-m", "x"});
  CHECK_FALSE(file_exists(repo.marker));
  repo.host_git_runs_nothing();
}

TEST_CASE("under a container profile a protected directory swapped for a symlink while the command dies is put back",
          "[landlock-protect]") {
  Repo repo;
  const std::string report = repo.aside / "report.json";
  // The swap runs on in the background when the command exits: the
  // supervisor kills it at whatever step it reached.
  RunResult r = contained(
      repo.ws, report,
      fmt::format("mkdir evil && cp .git/hooks/pre-commit.sample evil/pre-commit && printf '{}' > evil/pre-commit && "
                  "(while :; do mv .git/hooks .git/h; ln -s ../evil .git/hooks; rm .git/hooks; mv .git/h .git/hooks; "
                  "done) >/dev/null 2>&1 & i=0; while [ $i -lt 200 ]; do i=$((i+1)); done",
                  repo.evil()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  repo.host_git_runs_nothing();
}

TEST_CASE("nsrun probe and explain under a container profile say how the protected set is kept",
          "[landlock-protect]") {
  Repo repo;
  require_landlock();
  RunResult p = run({container_like(), nsrun_path(), "probe"}, at(repo.ws));
  INFO(p.out + p.err);
  CHECK(p.out.find("namespaces: unusable") != std::string::npos);
  CHECK(p.out.find("landlock: protected paths: snapshot") != std::string::npos);
  RunResult e = run({container_like(), nsrun_path(), "explain", "--backend", "landlock"}, at(repo.ws));
  INFO(e.out + e.err);
  CHECK(e.out.find("protected paths: snapshot") != std::string::npos);
  CHECK(e.out.find(".git/hooks") != std::string::npos);
}
