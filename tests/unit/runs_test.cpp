// The review loop's pure parts: which run ids a caller may choose, and
// which changes are git's own bookkeeping that `nsrun changes` sums up.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "layers/changes.hpp"
#include "layers/session.hpp"
#include "policy/cow.hpp"
#include "scratch.hpp"

using namespace nsrun;
using nsrun_unit::Scratch;

TEST_CASE("a run id is one safe directory name", "[runs][unit]") {
  for (const char* good : {"3f9c0a1b22de", "task-42", "fix_login.2", "A", "0"}) {
    INFO(good);
    CHECK(valid_run_name(good));
    CHECK(layers::valid_run_id(good));
  }
  CHECK(valid_run_name(std::string(64, 'a')));
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", "../x", ".hidden", "-rf", "_x", "a/b", "a b", "x\ny", "é",
                                std::string(65, 'a'), std::string("a\0b", 3), "a:b", "a*"}) {
    INFO(bad);
    CHECK_FALSE(valid_run_name(bad));
  }
}

TEST_CASE("git's object store and index are summed up per git directory", "[runs][unit]") {
  Scratch s("gitsum");
  auto mk = [&](const std::string& rel, std::string_view text) {
    std::string path = s.path + "/" + rel;
    for (std::size_t at = path.find('/', s.path.size() + 1); at != std::string::npos; at = path.find('/', at + 1))
      ::mkdir(path.substr(0, at).c_str(), 0755);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
  };
  mk(".git/objects/ab/cdef", "12345");
  mk(".git/objects/ab/0123", "123");
  mk(".git/index", "ix");
  mk("sub/.git/objects/pack/p.pack", "1234567890");
  mk("src/objects/a.c", "x");
  using K = layers::Change::Kind;
  std::vector<layers::Change> changes = {
      {K::added, ".git/objects/ab", true},  {K::modified, ".git/index", false}, {K::added, "src/objects", true},
      {K::added, ".git/refs/heads/main", false}, {K::deleted, ".git/objects/old", false},
      {K::added, "sub/.git/objects/pack/p.pack", false}, {K::modified, ".git/config", false},
      {K::added, ".git", false},  // a file named .git (a worktree's pointer)
  };
  Fd upper(::open(s.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto git = layers::split_git_internals(upper.get(), changes);
  REQUIRE(git.size() == 2);
  CHECK(git[0].git_dir == ".git");
  CHECK(git[0].entries == 3);
  CHECK(git[0].files == 3);
  CHECK(git[0].bytes == 10);
  CHECK(git[1].git_dir == "sub/.git");
  CHECK(git[1].files == 1);
  CHECK(git[1].bytes == 10);
  // What is left is listed as ever: the work tree, refs, config.
  std::vector<std::string> left;
  for (const auto& c : changes) left.push_back(c.path);
  CHECK(left == std::vector<std::string>{"src/objects", ".git/refs/heads/main", ".git/config", ".git"});
  CHECK(layers::describe(git[0]) == "git objects: 3 files, 10 bytes in .git (objects, index; 3 entries)");
}
