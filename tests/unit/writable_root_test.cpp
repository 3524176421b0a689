// The workspace and --writable directories are checked with one lstat per
// component (policy/validate.cpp): what stat() and realpath() would say
// of a path plain_path() saw whole is known from it. These hold that every
// refusal the two gave is still made, on real paths.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "policy/validate.hpp"

using namespace nsrun;

namespace {

struct Dir {
  std::string path;
  Dir() {
    char tmpl[] = "/tmp/nsrun-writable-root-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { (void)!::system(("rm -rf '" + path + "'").c_str()); }
};

Policy with_workspace(const std::string& ws) {
  Policy p;
  p.workspace = ws;
  p.argv = {"true"};
  return p;
}

std::string refusal(const Policy& p) {
  auto r = validate(p, true);
  return r ? std::string() : r.error().message();
}

}  // namespace

TEST_CASE("writable roots: a plain existing directory is accepted, by any spelling without '..' or a symlink",
          "[unit][validation][mount-cuts]") {
  Dir d;
  REQUIRE(::mkdir((d.path + "/ws").c_str(), 0755) == 0);
  for (const std::string& ws : std::vector<std::string>{d.path + "/ws", d.path + "/./ws", d.path + "//ws", d.path + "/ws/"}) {
    INFO(ws);
    CHECK(refusal(with_workspace(ws)).empty());
    Policy p = with_workspace(d.path + "/ws");
    p.writable = {ws};
    CHECK(refusal(p).empty());
  }
}

TEST_CASE("writable roots: a file, a missing path, a symlink, '..' and / by another name are still refused",
          "[unit][validation][mount-cuts]") {
  Dir d;
  REQUIRE(::mkdir((d.path + "/ws").c_str(), 0755) == 0);
  REQUIRE(::close(::creat((d.path + "/file").c_str(), 0644)) == 0);
  REQUIRE(::symlink((d.path + "/ws").c_str(), (d.path + "/link").c_str()) == 0);
  CHECK(refusal(with_workspace(d.path + "/file")).find("not a directory") != std::string::npos);
  CHECK(refusal(with_workspace(d.path + "/file/")).find("Not a directory") != std::string::npos);
  CHECK(refusal(with_workspace(d.path + "/missing")).find("No such file") != std::string::npos);
  CHECK(refusal(with_workspace(d.path + "/link")).find("is a symlink") != std::string::npos);
  CHECK(refusal(with_workspace(d.path + "/link/")).find("is a symlink") != std::string::npos);
  CHECK(refusal(with_workspace(d.path + "/ws/..")).find("'..'") != std::string::npos);
  for (const char* root : {"/.", "//", "/./"}) {
    INFO(root);
    CHECK(refusal(with_workspace(root)).find("resolves to /") != std::string::npos);
  }
  CHECK(refusal(with_workspace("/")).empty());
  Policy p = with_workspace(d.path + "/ws");
  p.writable = {d.path + "/file"};
  CHECK(refusal(p).find("not a directory") != std::string::npos);
}

TEST_CASE("writable roots: /proc, /sys and /dev stay the sandbox's own, named plainly or not",
          "[unit][validation][mount-cuts]") {
  for (const char* path : {"/proc/sys", "/proc", "/sys", "/sys/kernel", "/proc/./sys", "//proc/sys"}) {
    INFO(path);
    struct stat st{};
    if (::lstat(path, &st) != 0) continue;
    CHECK(refusal(with_workspace(path)).find("which the sandbox keeps its own") != std::string::npos);
  }
  CHECK(refusal(with_workspace("/dev")).find("is /dev") != std::string::npos);
  CHECK(refusal(with_workspace("/dev/")).find("is /dev") != std::string::npos);
}
