// The bench's floor sandbox binds a directory writable with the caller's
// id mapped in: run setuid it would hand the owner's rights to the caller,
// so neither the bench nor the floor itself runs it so.
#include "harness.hpp"

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

// nsrun-floor-sandbox-glibc beside nsrun (or in its tools/), as the bench
// finds it; empty when not built.
std::string glibc_floor_sandbox() {
  const std::string dir = nsrun_path().substr(0, nsrun_path().rfind('/') + 1);
  for (const std::string& p : {dir + "nsrun-floor-sandbox-glibc", dir + "tools/nsrun-floor-sandbox-glibc"})
    if (::access(p.c_str(), X_OK) == 0) return p;
  return {};
}

void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  write_file(to, read_file(from), 0700);
  REQUIRE(::chmod(to.c_str(), mode) == 0);
}

}  // namespace

// The sandbox's floor binds whatever directory it is given writable, with
// the caller's id mapped in: run setuid it would hand the owner's rights
// over that directory to the caller. Neither the bench runs a setuid or
// setgid floor (a chmod u+s beside the --nsrun it is given), nor does the
// floor run so (exit 125, the payload not run).
TEST_CASE("the bench never runs a setuid floor-sandbox, and the floor refuses to run setuid",
          "[floor-setuid][floor-sandbox][bench]") {
  const std::string floor = glibc_floor_sandbox();
  if (floor.empty()) unavailable("floor-sandbox", "nsrun-floor-sandbox-glibc is not built beside nsrun");
  TempDir dir("floor-setuid-floor");
  copy_file(nsrun_path(), dir / "nsrun", 0755);
  copy_file(floor, dir / "nsrun-floor-sandbox-glibc", 04755);
  struct stat st{};
  REQUIRE(::stat((dir / "nsrun-floor-sandbox-glibc").c_str(), &st) == 0);
  REQUIRE((st.st_mode & S_ISUID) != 0);
  RunResult bench = run({dir / "nsrun", "bench", "--rows", "floor-sandbox", "-n", "2", "--warmup", "0"});
  INFO(bench.out << bench.err);
  CHECK(bench.out.find("floor-sandbox glibc      unavailable") != std::string::npos);
  CHECK(bench.out.find("floor-sandbox-net glibc  unavailable") != std::string::npos);
  // The floor itself, setuid to another user (root can make one).
  if (::geteuid() != 0) {
    WARN("not root: a floor setuid to another user cannot be made; its own refusal is checked as root");
    return;
  }
  struct statvfs fs{};
  REQUIRE(::statvfs(dir.path().c_str(), &fs) == 0);
  if ((fs.f_flag & ST_NOSUID) != 0) unavailable("setuid", dir.path() + " is on a nosuid mount");
  REQUIRE(::chown((dir / "nsrun-floor-sandbox-glibc").c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod((dir / "nsrun-floor-sandbox-glibc").c_str(), 04755) == 0);
  make_dir(dir / "ws");
  RunResult r = run({dir / "nsrun-floor-sandbox-glibc", dir / "ws", "/bin/sh", "-c", "touch \"$0\"", dir / "ws/ran"});
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err == "nsrun-floor-sandbox: refusing to run: setuid or setgid\n");
  CHECK_FALSE(file_exists(dir / "ws/ran"));
}
