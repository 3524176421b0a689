// Git material anywhere in a writable root (policy/gitdirs.hpp): the pure
// rule `nsrun commit` refuses by, and the walk and the quarantine on a
// directory of the test's own (no privileges).
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "policy/gitdirs.hpp"
#include "sys/fd.hpp"

using namespace nsrun;
namespace fs = std::filesystem;

TEST_CASE("git dirs: what in a git directory decides what git runs", "[unit][gitdirs]") {
  for (const char* p : {"config", "config.worktree", "commondir", "gitdir", "hooks", "hooks/pre-commit",
                        "info/attributes", "CONFIG", "Hooks/post-checkout", "INFO/Attributes"})
    CHECK(armed_in_gitdir(p));
  for (const char* p : {"HEAD", "index", "objects/ab/cdef", "refs/heads/main", "logs/HEAD", "info/exclude", "info",
                        "packed-refs", "config.lock.x", "hooksx"})
    CHECK_FALSE(armed_in_gitdir(p));
}

TEST_CASE("git dirs: nested .git entries and submodule, worktree config are refused at commit", "[unit][gitdirs]") {
  for (const char* p : {"vendor/lib/.git", "vendor/lib/.git/config", "vendor/lib/.git/objects/ab/cd", "a/.GIT",
                        "a/b/c/.Git/hooks/pre-commit", ".git/modules/sub/config", ".git/modules/sub/hooks/pre-commit",
                        ".git/modules/a/b/config", ".git/modules/sub/info/attributes", ".git/modules/sub/commondir",
                        ".git/modules/sub/config.worktree", ".git/worktrees/w/gitdir", ".git/worktrees/w/commondir",
                        ".git/worktrees/w/config.worktree", ".GIT/Modules/sub/CONFIG",
                        ".git/modules/sub/modules/inner/config", "sub/.git"})
    CHECK(git_armed_path(p));
  // Objects, refs, the index and logs of a submodule that exists stay
  // committable; so does the top level's own .git (the protected set
  // decides there) and anything merely named like git material.
  for (const char* p : {".git/modules/sub/objects/ab/cdef", ".git/modules/sub/refs/heads/main",
                        ".git/modules/sub/index", ".git/modules/sub/logs/HEAD", ".git/modules/sub/HEAD",
                        ".git/modules/hooks/HEAD", ".git/modules/sub", ".git/modules", ".git", ".git/index",
                        ".git/objects/ab/cd", "src/config", "hooks/pre-commit", ".gitmodules", "a/.gitignore",
                        "a/.git-blame-ignore-revs", "a/x.git"})
    CHECK_FALSE(git_armed_path(p));
  CHECK(is_git_name(".git"));
  CHECK(is_git_name(".GiT"));
  CHECK_FALSE(is_git_name(".git "));
  CHECK_FALSE(is_git_name("git"));
}

namespace {

struct Scratch {
  std::string path;
  Scratch() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/gitdirs-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec))
      if (e.is_directory(ec) && !e.is_symlink(ec)) fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
    // A tree deeper than PATH_MAX: rm walks it by fds.
    if (fs::exists(path, ec)) (void)std::system(("rm -rf -- '" + path + "'").c_str());
  }
  void file(const std::string& rel, const std::string& text = "x\n") const {
    fs::create_directories(fs::path(path + "/" + rel).parent_path());
    std::ofstream(path + "/" + rel) << text;
  }
};

Fd open_dir(const std::string& p) { return Fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }

}  // namespace

TEST_CASE("git dirs: the layer walk finds nested git material at any depth, follows no symlink", "[unit][gitdirs]") {
  Scratch s;
  s.file("src/main.c");
  s.file("vendor/lib/.git/config", "[core]\n\tfsmonitor = x\n");
  s.file("vendor/lib/.git/objects/ab/cd");
  s.file(".git/modules/sub/config");
  s.file(".git/modules/sub/objects/ab/cd");
  s.file(".git/index");
  fs::create_directories(s.path + "/elsewhere/.git");
  fs::create_directory_symlink(s.path + "/elsewhere", s.path + "/link");
  fs::create_directory_symlink("../../elsewhere", s.path + "/.git/modules/linked");
  // 300 levels: deeper than the walk keeps fds for.
  std::string deep = "d";
  for (int i = 0; i < 300; ++i) deep += "/d";
  s.file(deep + "/.git");
  // 100 levels of 60-byte names: a path of 6,100 bytes, longer than
  // PATH_MAX (made one directory fd at a time, as no path can name it).
  const std::string long_name(60, 'n');
  std::string long_rel;
  {
    Fd at = open_dir(s.path);
    for (int i = 0; i < 100; ++i) {
      REQUIRE(::mkdirat(at.get(), long_name.c_str(), 0755) == 0);
      at.reset(::openat(at.get(), long_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      REQUIRE(at);
      long_rel += (long_rel.empty() ? "" : "/") + long_name;
    }
    Fd f(::openat(at.get(), ".GIT", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    REQUIRE(f);
  }
  Fd root = open_dir(s.path);
  REQUIRE(root);
  const GitArmed armed = find_git_armed(root.get());
  CHECK(armed.unread.empty());
  std::vector<std::string> found = armed.armed;
  std::sort(found.begin(), found.end());
  std::vector<std::string> want = {".git/modules/linked", ".git/modules/sub/config", deep + "/.git", "elsewhere/.git",
                                   "vendor/lib/.git", long_rel + "/.GIT"};
  std::sort(want.begin(), want.end());
  CHECK(found == want);
}

TEST_CASE("git dirs: the host scan quarantines what changed since, renames only, leaves the rest", "[unit][gitdirs]") {
  Scratch s;
  s.file("old/.git/config", "[core]\n");
  s.file("old/.git/hooks/pre-commit.sample");
  s.file("old/.git/HEAD", "ref: refs/heads/main\n");
  struct timespec since{};
  ::clock_gettime(CLOCK_REALTIME, &since);
  since.tv_sec += 1;  // everything above is older than the "launch"
  // Nothing made since: nothing found.
  auto none = scan_git_armed({s.path}, since, [](const std::string&) { return std::vector<std::string>(); }, "");
  CHECK(none.empty());
  since.tv_sec -= 100;  // now everything counts as made during the run
  s.file("new/repo/.git", "gitdir: ../../old/.git\n");
  auto found = scan_git_armed({s.path}, since, [](const std::string&) { return std::vector<std::string>{"old/.git/config"}; }, "");
  std::vector<std::string> rels;
  for (const auto& f : found) rels.push_back(f.rel);
  std::sort(rels.begin(), rels.end());
  // old/.git/config is held (skipped); the sample hook is never run.
  CHECK(rels == std::vector<std::string>{"new/repo/.git"});
  quarantine(found, "0123abcd");
  REQUIRE(found.size() == 1);
  CHECK_FALSE(found[0].failed);
  CHECK(found[0].renamed_to == ".git.nsrun-quarantine-0123abcd");
  CHECK_FALSE(fs::exists(fs::symlink_status(s.path + "/new/repo/.git")));
  CHECK(fs::is_regular_file(s.path + "/new/repo/.git.nsrun-quarantine-0123abcd"));
  CHECK(fs::is_regular_file(s.path + "/old/.git/config"));
  // A directory the command made unreadable is reported, not skipped.
  fs::create_directories(s.path + "/shut/in");
  fs::permissions(s.path + "/shut", fs::perms::owner_exec);
  if (::geteuid() != 0) {
    auto shut = scan_git_armed({s.path}, since, [](const std::string&) { return std::vector<std::string>(); }, "");
    CHECK(std::any_of(shut.begin(), shut.end(), [](const GitFinding& f) { return f.unscanned && f.rel == "shut"; }));
  }
}
