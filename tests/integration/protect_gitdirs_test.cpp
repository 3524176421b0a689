// No git configuration, hook or gitdir indirection that a later host-side
// git would run can be left by the command anywhere in a writable root:
// direct mode quarantines what the run made (both rungs), `nsrun commit`
// refuses it. Each test plants material whose core.fsmonitor or hook
// writes a marker outside every writable root, then runs git on the host
// after nsrun returned and looks for the marker.
#include "cow_support.hpp"
#include "git_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Shell functions for the planting scripts; $M is the marker's directory,
// $T the templates (template_repos()): the Landlock rung refuses chmod, so
// `git init` and `git config` (which chmod their lock files) cannot run
// there, and the command copies and appends instead.
constexpr std::string_view plant_lib = R"SH(
set -e
# A repository at $1 with one commit, its core.fsmonitor and pre-commit
# hook writing markers named $2.
armed_repo() {
  mkdir -p "$(dirname "$1")"
  cp -r "$T/repo" "$1"
  printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$M/$2.fsmonitor" >> "$1/.git/config"
  printf '#!/bin/sh\ntouch %s\n' "$M/$2.hook" > "$1/.git/hooks/pre-commit"
}
)SH";

// Nested repositories in every shape that needs no top-level .git.
constexpr std::string_view plant_nested = R"SH(
armed_repo vendor/lib nested
# A .git file naming a git directory elsewhere in the root, and a .git
# symlink to it.
armed_repo b gitfile
mv b/.git b/g
mkdir a c
cp b/f a/f
cp b/f c/f
echo 'gitdir: ../b/g' > a/.git
ln -s ../b/g c/.git
# A hard link of a file that was there before the run (it changes its ctime).
armed_repo hl linked
ln -f evil.cfg hl/.git/config 2>/dev/null || cp evil.cfg hl/.git/config
# Made, then its parent renamed.
armed_repo p1/r renamed
mv p1 p2
# Deep.
d=deep; i=0; while [ $i -lt 60 ]; do d=$d/d; i=$((i+1)); done
armed_repo "$d" deep
echo "$d" > deep-path
echo planted
)SH";

// A submodule: its git directory in the superproject's .git/modules, a
// gitlink in the index, and the submodule's .git file. Needs a top-level
// repository with a commit.
constexpr std::string_view plant_submodule = R"SH(
armed_repo evil submodule
sha=$(git -C evil rev-parse HEAD)
mkdir -p .git/modules
mv evil/.git .git/modules/evil
echo 'gitdir: ../.git/modules/evil' > evil/.git
printf '[core]\n\tworktree = ../../../evil\n' >> .git/modules/evil/config
git update-index --add --cacheinfo "160000,$sha,evil"
echo planted
)SH";

std::string script(std::string_view body) { return std::string(plant_lib) + std::string(body); }

// $T for the scripts: `repo`, a repository with one commit and an
// executable (harmless) pre-commit hook; `top`, one with a file `top`.
void template_repos(const TempDir& t) {
  for (const std::string name : {"repo", "top"}) {
    make_dir(t / name);
    REQUIRE(git_in(t / name, {"init", "-q"}).exit_code == 0);
    write_file(t / name + "/" + (name == "repo" ? "f" : "top"), "a\n");
    REQUIRE(git_in(t / name, {"add", "."}).exit_code == 0);
    REQUIRE(git_in(t / name, {"commit", "-qm", "one"}).exit_code == 0);
    write_file(t / name + "/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  }
}

// The host's own repository in `ws`: one commit of a file `top`.
void superproject(const TempDir& ws) {
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  write_file(ws / "top", "t\n");
  REQUIRE(git_in(ws.path(), {"add", "top"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"commit", "-qm", "top"}).exit_code == 0);
}

// Markers written so far, by name.
std::vector<std::string> markers(const TempDir& m) {
  std::vector<std::string> out;
  DIR* d = ::opendir(m.path().c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// What a user does next on the host in each planted repository: status
// (fsmonitor) and a commit (hooks).
void host_git_everywhere(const TempDir& ws, const std::vector<std::string>& dirs) {
  for (const auto& d : dirs) {
    (void)git_in(ws / d, {"status", "--porcelain"});
    (void)git_in(ws / d, {"commit", "-q", "--allow-empty", "-m", "host"});
  }
}

std::string deep_path(const TempDir& ws) { return chomp(read_file(ws / "deep-path")); }

bool has_quarantined(const std::string& dir, std::string_view prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name).starts_with(std::string(prefix) + ".nsrun-quarantine-")) found = true;
  ::closedir(d);
  return found;
}

}  // namespace

TEST_CASE("git dirs: a nested repository, a .git file or symlink the command makes runs nothing on the host "
          "afterwards, on both rungs",
          "[gitdirs]") {
  if (!git_installed()) unavailable("git", "git is not installed");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> argv = rung_options(rung);
      // No top-level .git: the Landlock rung refuses protected paths that exist.
      TempDir ws("gd-nested"), m("gd-mark"), t("gd-tpl");
      template_repos(t);
      write_file(ws / "evil.cfg", "[core]\n\tfsmonitor = \"touch " + m.path() + "/link.fsmonitor; false\"\n");
      argv.insert(argv.end(),
                  {"--report", ws / "r.json", "--", "sh", "-c", "M=$1; T=$2; " + script(plant_nested), "sh", m.path(),
                   t.path()});
      RunResult r = nsrun(argv, at(ws));
      INFO(r.out << r.err);
      REQUIRE(r.exit_code == 0);
      REQUIRE(r.out == "planted\n");
      host_git_everywhere(ws, {"vendor/lib", "a", "c", "p2/r", "hl", deep_path(ws)});
      CHECK(markers(m).empty());
      const std::string json = read_file(ws / "r.json");
      const std::vector<std::string> planted = {"vendor/lib/.git/config", "a/.git", "c/.git", "p2/r/.git/config",
                                                "vendor/lib/.git/hooks/pre-commit", "hl/.git/config",
                                                deep_path(ws) + "/.git/config"};
      for (const auto& p : planted) {
        CHECK(r.err.find("nsrun: git configuration " + ws / p + ": ") != std::string::npos);
        CHECK(json.find("{\"path\":\"" + ws / p + "\",\"kept\":\"quarantined\"") != std::string::npos);
      }
      // Renamed beside itself, nothing deleted.
      CHECK(has_quarantined(ws / "a", ".git"));
      CHECK(has_quarantined(ws / "vendor/lib/.git", "config"));
      CHECK(file_exists(ws / "b/g/config"));
    }
  }
}

TEST_CASE("git dirs: a submodule git directory planted in .git/modules runs nothing on the host afterwards",
          "[gitdirs]") {
  if (!git_installed()) unavailable("git", "git is not installed");
  struct Case {
    Rung rung;
    bool host_repo;  // the superproject exists before the run (else the command makes it)
  };
  for (const Case c : {Case{Rung::namespaces, true}, Case{Rung::namespaces, false}, Case{Rung::landlock, false}}) {
    DYNAMIC_SECTION((c.rung == Rung::namespaces ? "namespaces" : "landlock")
                    << (c.host_repo ? ", the host's repository" : ", a repository the command makes")) {
      std::vector<std::string> argv = rung_options(c.rung);
      TempDir ws("gd-sub"), m("gd-mark"), t("gd-tpl");
      template_repos(t);
      std::string make_top;
      if (c.host_repo) {
        superproject(ws);
      } else {
        make_top = "cp -r \"$T/top/.git\" .git && cp \"$T/top/top\" top\n";
      }
      argv.insert(argv.end(), {"--report", ws / "r.json", "--", "sh", "-c",
                               "M=$1; T=$2; " + script(make_top + std::string(plant_submodule)), "sh", m.path(),
                               t.path()});
      RunResult r = nsrun(argv, at(ws));
      INFO(r.out << r.err);
      REQUIRE(r.exit_code == 0);
      REQUIRE(r.out == "planted\n");
      // The superproject's status runs the submodule's status, and with it
      // the submodule's fsmonitor; a commit there its hook.
      host_git_everywhere(ws, {".", "evil"});
      CHECK(markers(m).empty());
      CHECK(r.err.find("nsrun: git configuration " + ws / ".git/modules/evil/config: ") != std::string::npos);
      CHECK(r.err.find("nsrun: git configuration " + ws / "evil/.git: ") != std::string::npos);
      CHECK(read_file(ws / "r.json").find("{\"path\":\"" + ws / ".git/modules/evil/config" +
                                          "\",\"kept\":\"quarantined\"") != std::string::npos);
      // `git submodule update --init` would reuse the directory: nothing
      // armed is left in it.
      CHECK_FALSE(file_exists(ws / ".git/modules/evil/config"));
      CHECK_FALSE(file_exists(ws / ".git/modules/evil/hooks/pre-commit"));
    }
  }
}

TEST_CASE("git dirs: a git directory staged under another name by one run and renamed into place by the next "
          "runs nothing on the host afterwards, on both rungs",
          "[gitdirs]") {
  if (!git_installed()) unavailable("git", "git is not installed");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      TempDir ws("gd-staged"), m("gd-mark"), t("gd-tpl");
      template_repos(t);
      // The first run leaves no .git anywhere: only directories shaped like
      // git directories, with armed config and hooks, under other names.
      std::vector<std::string> first = rung_options(rung);
      first.insert(first.end(), {"--", "sh", "-c",
                                 "M=$1; T=$2; " + script("armed_repo stage/x staged\n"
                                                         "mv stage/x/.git stage/x/notgit\n"
                                                         "echo planted\n"),
                                 "sh", m.path(), t.path()});
      RunResult r1 = nsrun(first, at(ws));
      INFO(r1.out << r1.err);
      REQUIRE(r1.exit_code == 0);
      REQUIRE(r1.out == "planted\n");
      CHECK(r1.err.find("nsrun: git configuration") == std::string::npos);
      // The second only renames: the staged files keep their old ctimes.
      std::vector<std::string> second = rung_options(rung);
      second.insert(second.end(),
                    {"--report", ws / "r.json", "--", "sh", "-c", "mv stage/x/notgit stage/x/.git && echo moved"});
      RunResult r2 = nsrun(second, at(ws));
      INFO(r2.out << r2.err);
      REQUIRE(r2.exit_code == 0);
      REQUIRE(r2.out == "moved\n");
      host_git_everywhere(ws, {"stage/x"});
      CHECK(markers(m).empty());
      for (const std::string p : {"stage/x/.git/config", "stage/x/.git/hooks/pre-commit"}) {
        CHECK(r2.err.find("nsrun: git configuration " + ws / p + ": ") != std::string::npos);
        CHECK(read_file(ws / "r.json").find("{\"path\":\"" + ws / p + "\",\"kept\":\"quarantined\"") !=
              std::string::npos);
      }
    }
  }
}

TEST_CASE("git dirs: a submodule git directory staged by one run and renamed into .git/modules by the next runs "
          "nothing on the host afterwards",
          "[gitdirs]") {
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("gd-staged-sub"), m("gd-mark"), t("gd-tpl");
  template_repos(t);
  superproject(ws);
  std::vector<std::string> first = rung_options(Rung::namespaces);
  first.insert(first.end(), {"--", "sh", "-c",
                             "M=$1; T=$2; " + script("armed_repo evil submodule\n"
                                                     "git -C evil rev-parse HEAD > sha\n"
                                                     "mv evil/.git .git/staged\n"
                                                     "printf '[core]\\n\\tworktree = ../../../evil\\n' >> .git/staged/config\n"
                                                     "echo planted\n"),
                             "sh", m.path(), t.path()});
  RunResult r1 = nsrun(first, at(ws));
  INFO(r1.out << r1.err);
  REQUIRE(r1.exit_code == 0);
  REQUIRE(r1.out == "planted\n");
  std::vector<std::string> second = rung_options(Rung::namespaces);
  second.insert(second.end(), {"--", "sh", "-c",
                               "set -e; sha=$(cat sha); mkdir -p .git/modules; "
                               "mv .git/staged .git/modules/evil; "
                               "echo 'gitdir: ../.git/modules/evil' > evil/.git; "
                               "git update-index --add --cacheinfo \"160000,$sha,evil\"; echo moved"});
  RunResult r2 = nsrun(second, at(ws));
  INFO(r2.out << r2.err);
  REQUIRE(r2.exit_code == 0);
  REQUIRE(r2.out == "moved\n");
  host_git_everywhere(ws, {".", "evil"});
  CHECK(markers(m).empty());
  CHECK_FALSE(file_exists(ws / ".git/modules/evil/config"));
  CHECK_FALSE(file_exists(ws / ".git/modules/evil/hooks/pre-commit"));
}

TEST_CASE("git dirs: nsrun commit refuses nested git directories and submodule configuration, names them, "
          "applies the rest",
          "[gitdirs][cow]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("gd-cow"), state("gd-state"), m("gd-mark"), t("gd-tpl");
  template_repos(t);
  superproject(ws);
  make_dir(ws / "kept");  // an existing directory: what is added in it is one change per file
  write_file(ws / "evil.cfg", "[core]\n\tfsmonitor = \"touch " + m.path() + "/link.fsmonitor; false\"\n");
  cow::settle_clock();
  const std::vector<std::string> env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(),
                                        "XDG_RUNTIME_DIR=", "XDG_CONFIG_HOME="};
  const std::string id = cow::cow_run(
      ws, env,
      "M=" + shell_quote(m.path()) + "; T=" + shell_quote(t.path()) + "; " +
          script(std::string(plant_nested) + std::string(plant_submodule) +
                 "armed_repo kept/inner keptinner\necho notes > kept/notes.txt\n"));
  RunResult commit = nsrun({"commit", id}, cow::in(ws, env));
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 4);  // a protected path was refused
  // Each refused change is named, with the git material that makes it refused.
  for (const std::string p : {"vendor", "a", "c", "p2", "hl", "evil", ".git/modules", "kept/inner", "deep"})
    CHECK(commit.err.find("nsrun: protected path " + p + ": not committed") != std::string::npos);
  CHECK(commit.err.find("vendor/lib/.git") != std::string::npos);
  CHECK(commit.err.find(".git/modules/evil/config") != std::string::npos);
  // What is not git material is applied.
  CHECK(read_file(ws / "kept/notes.txt") == "notes\n");
  CHECK_FALSE(file_exists(ws / "kept/inner/.git"));
  CHECK_FALSE(file_exists(ws / ".git/modules"));
  host_git_everywhere(ws, {".", "kept/inner"});
  CHECK(markers(m).empty());
}

// A mount point inside a writable root is not walked (it may be a large or
// remote tree the workspace does not own): it is said, never skipped
// silently. Root only: the mount is made in a mount namespace of the test's
// own (unshare -m), around nsrun.
TEST_CASE("git dirs: a mount point inside a writable root is reported as not scanned", "[gitdirs]") {
  if (::geteuid() != 0) unavailable("root", "mounting a file system inside the workspace needs root");
  require_userns();
  if (run({"sh", "-c", "command -v unshare"}).exit_code != 0) unavailable("unshare", "util-linux unshare is missing");
  TempDir ws("gd-mount");
  make_dir(ws / "mnt");
  RunResult r = run({"unshare", "-m", "--propagation", "private", "sh", "-c",
                     "mount -t tmpfs none mnt && exec \"$0\" --report \"$1\" -- sh -c 'mkdir mnt/x && echo \"gitdir: /\" "
                     "> mnt/x/.git'",
                     nsrun_path(), ws / "r.json"},
                    at(ws));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("nsrun: git scan " + ws / "mnt" + ": not scanned (a mount point") != std::string::npos);
  CHECK(read_file(ws / "r.json").find("{\"path\":\"" + ws / "mnt" + "\",\"kept\":\"unscanned\"") != std::string::npos);
}
