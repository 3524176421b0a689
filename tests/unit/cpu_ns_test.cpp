// Issue 16, third pass: the namespace rung's CPU per launch. Each shortcut
// taken to save system calls has a test here that fails when the
// assumption it rests on no longer holds.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "policy/protect.hpp"
#include "sys/fd.hpp"

using namespace nsrun;

namespace {

// A scratch directory of the test's own, removed (with what the test made
// in it, at most two levels) at the end.
struct Scratch {
  std::string path;
  Fd fd;
  Scratch() {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base && *base ? base : "/var/tmp") + "/nsrun-cpu-ns-XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
    fd.reset(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
  }
  ~Scratch() { (void)std::system(("rm -rf -- '" + path + "'").c_str()); }
  void mkdir(const std::string& rel) const { REQUIRE(::mkdir((path + "/" + rel).c_str(), 0755) == 0); }
  void touch(const std::string& rel) const {
    const int fd = ::open((path + "/" + rel).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    ::close(fd);
  }
};

}  // namespace

TEST_CASE("ProtectWalker: a first component missing at the root is looked up once per pass", "[unit][cpu-ns]") {
  Scratch s;
  ProtectWalker walker;
  auto hooks = walker.walk(s.fd.get(), ".git/hooks", nullptr);
  REQUIRE(hooks);
  CHECK(hooks->decision.state == ProtectState::not_kept);
  CHECK(hooks->missing_at_root);
  // The host makes .git/config now: the pass answers as of its one look
  // (the same answer a walk an instant earlier gives) ...
  s.mkdir(".git");
  s.touch(".git/config");
  auto config = walker.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(config);
  CHECK(config->decision.state == ProtectState::not_kept);
  CHECK(config->decision.state == missing_below("").state);
  // ... and a new pass (a new walker, a new launch) sees it.
  ProtectWalker next;
  auto again = next.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(again);
  CHECK(again->decision.state == ProtectState::read_only);
  CHECK(again->at);
  // The plain walk never remembers.
  auto plain = walk_protected(s.fd.get(), ".git/config", nullptr);
  REQUIRE(plain);
  CHECK(plain->decision.state == ProtectState::read_only);
}

TEST_CASE("ProtectWalker: only a name missing at the root is remembered", "[unit][cpu-ns]") {
  Scratch s;
  s.mkdir(".git");
  s.touch(".git/config");
  s.mkdir("tools");
  ProtectWalker walker;
  // Missing below an existing .git: not remembered for its siblings.
  auto hooks = walker.walk(s.fd.get(), ".git/hooks", nullptr);
  REQUIRE(hooks);
  CHECK(hooks->decision.state == ProtectState::not_kept);
  CHECK_FALSE(hooks->missing_at_root);
  auto config = walker.walk(s.fd.get(), ".git/config", nullptr);
  REQUIRE(config);
  CHECK(config->decision.state == ProtectState::read_only);
  // A missing name in a directory below the root is sealed there; the walk
  // hands over that directory (its own fd, not the root's).
  auto run = walker.walk(s.fd.get(), "tools/run.sh", nullptr);
  REQUIRE(run);
  CHECK(run->decision.state == ProtectState::sealed);
  CHECK(run->decision.sealed_dir == "tools");
  REQUIRE(run->at);
  struct stat a{}, b{};
  REQUIRE(::fstat(run->at.get(), &a) == 0);
  REQUIRE(::stat((s.path + "/tools").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  // A missing name at the root does not stand for another one.
  auto envrc = walker.walk(s.fd.get(), ".envrc", nullptr);
  REQUIRE(envrc);
  CHECK(envrc->missing_at_root);
  s.touch(".envrc2");
  auto other = walker.walk(s.fd.get(), ".envrc2", nullptr);
  REQUIRE(other);
  CHECK(other->decision.state == ProtectState::read_only);
}

TEST_CASE("missing_below: a name missing at the root is never sealed", "[unit][cpu-ns]") {
  // ProtectWalker's remembered answer hands over no directory: it relies on
  // the root itself never being the directory to seal.
  CHECK(missing_below("").state == ProtectState::not_kept);
  CHECK(missing_below("").sealed_dir.empty());
}
