// What a launch leaves out of its mounts when the plan says it may
// (mount/plan.hpp: may_name_host_root, binds_onto_own_source; a data file
// cloned from the fd it was written by), held from inside the sandbox: a
// data file's tmpfs is reachable only where its file is bound, the fresh
// /proc's host-wide parts are still read-only, and a bind of a symlink to
// / elsewhere is still refused.
#include "account_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Mount point -> "major:minor" of its file system, from /proc/self/mountinfo
// as the sandbox printed it, and how many mounts each file system has.
struct Mounts {
  std::map<std::string, std::string> dev_at;
  std::map<std::string, int> mounts_of;
  std::vector<std::string> points;
};

Mounts parse_mountinfo(const std::string& text) {
  Mounts m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    m.dev_at[point] = dev;
    ++m.mounts_of[dev];
    m.points.push_back(point);
  }
  return m;
}

}  // namespace

TEST_CASE("mount cuts: a settings file's copy comes from a tmpfs that no other path reaches",
          "[mount-cuts][settings-copy]") {
  require_userns();
  Account acct;
  write_file(acct.home / ".npmrc", "fund=false\n//registry.npmjs.org/:_authToken=SECRET-npm\n", 0600);
  TempDir ws("ws");
  TempDir state("state");
  RunOptions opts = at(ws);
  opts.clear_env = true;
  opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + state.path(), "HOME=" + acct.home.path()};
  const std::string npmrc = acct.home / ".npmrc";
  RunResult r = run(acct.argv({"--home", "ro", "--", "sh", "-c",
                               "cat " + shell_quote(npmrc) + "; echo x >> " + shell_quote(npmrc) +
                                   " 2>/dev/null && echo WROTE; echo ==; cat /proc/self/mountinfo"}),
                    opts);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::size_t split = r.out.find("==\n");
  REQUIRE(split != std::string::npos);
  const std::string shown = r.out.substr(0, split);
  CHECK(shown.find("fund=false\n") != std::string::npos);
  CHECK(shown.find("SECRET") == std::string::npos);
  CHECK(shown.find("WROTE") == std::string::npos);
  const Mounts m = parse_mountinfo(r.out.substr(split + 3));
  REQUIRE(m.dev_at.count(npmrc) == 1);
  // The copy's file system is mounted once: where the copy is. Nothing of
  // the tmpfs that held it (or of a staging area) is anywhere else.
  CHECK(m.mounts_of.at(m.dev_at.at(npmrc)) == 1);
  for (const std::string& point : m.points) {
    CHECK_FALSE(point.starts_with("/oldroot"));
    CHECK_FALSE(point.starts_with("/newroot"));
  }
  // Nothing was made on the host's side, and the file is as it was.
  CHECK(read_file(npmrc).find("SECRET-npm") != std::string::npos);
}

TEST_CASE("mount cuts: --ro-bind-data's file is bound from a tmpfs no other path reaches",
          "[mount-cuts][bwrap]") {
  require_userns();
  TempDir ws("ws");
  write_file(ws / "data", "hello data\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nothing else", ""},
      {"a private overlay", "--overlay-src /opt --tmp-overlay /opt "},
  };
  for (const auto& [name, extra] : cases) {
    DYNAMIC_SECTION("with " << name) {
      RunResult r = run({"sh", "-c",
                         shell_quote(nsrun_path()) + " bwrap --ro-bind / / --dev /dev --proc /proc --unshare-user "
                         "--unshare-pid " + extra +
                         "--ro-bind-data 3 /etc/motd -- sh -c 'cat /etc/motd; echo ==; cat /proc/self/mountinfo' 3<" +
                         shell_quote(ws / "data")},
                        at(ws));
      INFO(r.out << r.err);
      REQUIRE(r.exit_code == 0);
      const std::size_t split = r.out.find("==\n");
      REQUIRE(split != std::string::npos);
      CHECK(r.out.substr(0, split) == "hello data\n");
      const Mounts m = parse_mountinfo(r.out.substr(split + 3));
      REQUIRE(m.dev_at.count("/etc/motd") == 1);
      CHECK(m.mounts_of.at(m.dev_at.at("/etc/motd")) == 1);
      for (const std::string& point : m.points) {
        CHECK_FALSE(point.starts_with("/oldroot"));
        CHECK_FALSE(point.starts_with("/newroot"));
      }
    }
  }
}

TEST_CASE("mount cuts: the fresh /proc's host-wide parts are read-only mounts of their own",
          "[mount-cuts][proc]") {
  require_userns();
  TempDir ws("ws");
  RunResult r = nsrun({"--", "sh", "-c",
                       "echo nsrun > /proc/sys/kernel/hostname 2>/dev/null && echo WROTE; echo ==; "
                       "cat /proc/self/mountinfo"},
                      at(ws));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::size_t split = r.out.find("==\n");
  REQUIRE(split != std::string::npos);
  CHECK(r.out.substr(0, split).find("WROTE") == std::string::npos);
  std::istringstream in(r.out.substr(split + 3));
  std::string line;
  std::map<std::string, std::string> options;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    if (f >> id >> parent >> dev >> root >> point >> opts) options[point] = opts;
  }
  for (const char* part : {"/proc/sys", "/proc/irq", "/proc/bus"}) {
    INFO(part);
    REQUIRE(options.count(part) == 1);
    CHECK(options.at(part).starts_with("ro,"));
  }
}

TEST_CASE("mount cuts: a symlink to / bound elsewhere is still refused", "[mount-cuts][bwrap]") {
  require_userns();
  TempDir ws("ws");
  ::symlink("/", (ws / "root").c_str());
  RunResult r = run({nsrun_path(), "bwrap", "--ro-bind", "/", "/", "--bind", ws / "root", "/host", "--dev", "/dev",
                     "--unshare-user", "--unshare-pid", "--proc", "/proc", "--", "sh", "-c", "echo RAN"},
                    at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.out.find("RAN") == std::string::npos);
  CHECK(r.err.find(ws / "root") != std::string::npos);
}

// The host-root check runs only for a source that could be "/"
// (may_name_host_root()). Every other spelling of "/" must still reach it:
// /proc's magic link, repeated slashes, ".", "..", a symlink. Each is
// refused or bound as the host's "/"; none may show the sandbox's own root
// (whose /tmp/host would hold a /tmp/host of its own; the host's holds none,
// /tmp being a private tmpfs in the sandbox).
TEST_CASE("mount cuts: every spelling of / bound elsewhere shows the host's / or is refused", "[mount-cuts][bwrap]") {
  require_userns();
  REQUIRE(::access("/tmp/host", F_OK) != 0);
  TempDir ws("ws");
  REQUIRE(::symlink("/", (ws / "root").c_str()) == 0);
  for (const std::string& spelling :
       std::vector<std::string>{"/", "/proc/self/root", "//", "/.", "/./", "/usr/..", "/proc/../", ws / "root"}) {
    RunResult r = run({nsrun_path(), "bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--ro-bind", spelling,
                       "/tmp/host", "--dev", "/dev", "--unshare-user", "--unshare-pid", "--proc", "/proc", "--", "sh",
                       "-c", "if [ -d /tmp/host/tmp/host ]; then echo OWN; else echo HOST; fi"},
                      at(ws));
    INFO(spelling << ": exit " << r.exit_code << ", " << r.out << r.err);
    CHECK(r.out.find("OWN") == std::string::npos);
    if (r.exit_code == 0) CHECK(r.out == "HOST\n");
    else CHECK(r.err.starts_with("bwrap: "));
  }
}
