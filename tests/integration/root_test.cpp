// A writable root of `/` (the workspace when nsrun was started from /, or
// `--writable /`) must not cover the sandbox's own /proc, /dev and /tmp. The
// bind of a writable root is recursive, so bound after them it would bring
// the host's /proc (every host process; /proc/sys writable as root), /dev and
// /tmp back over the private ones, and /sys writable.
//
// What the tests assert on the host: the test's own pid is not in the
// sandbox's /proc, a file the test made in the host's /tmp is not in the
// sandbox's /tmp, host device names are not in its /dev, and root-writable
// kernel files (a sysctl, a sysfs knob) cannot be opened for writing. No
// test writes a kernel file: the probe only opens it (`open-write`).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// nsrun RUNG-OPTIONS OPTIONS -- nsrun-probe ARGS, from `cwd`.
RunResult probe(Rung rung, const std::vector<std::string>& options, const std::vector<std::string>& args,
                const std::string& cwd) {
  std::vector<std::string> argv = rung_options(rung);
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.push_back(probe_path());
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions opts;
  opts.cwd = cwd;
  return nsrun(argv, opts);
}

// A file in the host's /tmp, removed at the end.
struct HostTmpFile {
  std::string path;
  HostTmpFile() {
    std::string templ = "/tmp/nsrun-root-test-XXXXXX";
    const int fd = ::mkstemp(templ.data());
    REQUIRE(fd >= 0);
    ::close(fd);
    path = templ;
  }
  ~HostTmpFile() { ::unlink(path.c_str()); }
};

std::set<std::string> host_dev_names() {
  std::set<std::string> out;
  if (DIR* d = ::opendir("/dev")) {
    while (dirent* e = ::readdir(d)) out.insert(e->d_name);
    ::closedir(d);
  }
  return out;
}

std::set<std::string> words(const std::string& line) {
  std::set<std::string> out;
  std::string w;
  for (char c : line) {
    if (c == ' ' || c == '\n') {
      if (!w.empty()) out.insert(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.insert(w);
  return out;
}

// The sandbox's /proc, /dev, /tmp and kernel files are its own, with
// `options` (which make `/` writable or read-only) run from `cwd`.
void check_private_mounts(const std::vector<std::string>& options, const std::string& cwd) {
  const Rung rung = Rung::namespaces;
  // The test's own pid: a host process, not in the sandbox's PID namespace.
  RunResult pid = probe(rung, options, {"exists", fmt::format("/proc/{}", ::getpid())}, cwd);
  INFO("stderr: " << pid.err);
  CHECK(pid.exit_code == 0);
  CHECK(chomp(pid.out) == "no");

  RunResult pids = probe(rung, options, {"pids"}, cwd);
  CHECK(pids.exit_code == 0);
  CHECK(words(pids.out).size() <= 3);  // the reaper, the probe (and nothing of the host)

  HostTmpFile marker;
  RunResult tmp = probe(rung, options, {"exists", marker.path}, cwd);
  CHECK(tmp.exit_code == 0);
  CHECK(chomp(tmp.out) == "no");

  // Names the host's /dev has and the private one does not (sda, kmsg,
  // mem...): none of them may show.
  const std::set<std::string> private_dev = {".",      "..",    "core", "fd",     "full",   "null",  "ptmx", "pts",
                                             "random", "shm",   "stderr", "stdin", "stdout", "tty",  "urandom",
                                             "zero"};
  RunResult dev = probe(rung, options, {"list", "/dev"}, cwd);
  CHECK(dev.exit_code == 0);
  const std::set<std::string> inside = words(dev.out);
  for (const std::string& name : host_dev_names()) {
    if (private_dev.count(name) != 0) continue;
    INFO("host /dev entry " << name);
    CHECK(inside.count(name) == 0);
  }

  // A root-writable sysctl and sysfs knob: opened for writing only, never
  // written. Refused for root too (EROFS), and for others (EACCES).
  for (const char* knob : {"/proc/sys/kernel/hostname", "/proc/sys/vm/overcommit_memory",
                           "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/fs/cgroup/cgroup.procs"}) {
    if (::access(knob, F_OK) != 0) continue;
    RunResult w = probe(rung, options, {"open-write", knob}, cwd);
    INFO(knob << ": " << w.out << w.err);
    CHECK(w.exit_code == 1);
    CHECK((chomp(w.out) == "error EROFS" || chomp(w.out) == "error EACCES" || chomp(w.out) == "error ENOENT"));
  }
}

}  // namespace

TEST_CASE("started from /, workspace-write without a named root is refused on both rungs", "[root-workspace]") {
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    RunResult r = probe(rung, {}, {"getpid"}, "/");
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.out.empty());
    CHECK(r.err.starts_with("nsrun: --workspace: the current directory is /"));
    CHECK(count_lines(r.err) == 1);
  }
}

TEST_CASE("a writable / keeps /proc, /dev, /tmp private and kernel files read-only (namespace rung)",
          "[root-workspace]") {
  TempDir ws("root");
  SECTION("--writable / from a directory") { check_private_mounts({"--writable", "/"}, ws.path()); }
  SECTION("--writable / from /") { check_private_mounts({"--writable", "/"}, "/"); }
  SECTION("--workspace / from /") { check_private_mounts({"--workspace", "/"}, "/"); }
  SECTION("read-only mode from /") { check_private_mounts({"--mode", "read-only"}, "/"); }
  SECTION("--writable / --proc none: the host's /proc stays read-only") {
    for (const char* knob : {"/proc/sys/kernel/hostname", "/proc/sys/vm/overcommit_memory"}) {
      RunResult w = probe(Rung::namespaces, {"--writable", "/", "--proc", "none"}, {"open-write", knob}, "/");
      INFO(knob << ": " << w.out << w.err);
      CHECK(w.exit_code == 1);
      CHECK((chomp(w.out) == "error EROFS" || chomp(w.out) == "error EACCES"));
    }
  }
  SECTION("the rest of the host is writable, as asked") {
    const std::string file = ws / "written-through-root";
    RunResult r = probe(Rung::namespaces, {"--writable", "/"}, {"write", file, "x"}, "/");
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(read_file(file) == "x");
  }
}

TEST_CASE("a writable / is refused on the Landlock rung, which has no private /proc, /dev, /sys",
          "[root-workspace][landlock]") {
  TempDir ws("root");
  for (const std::string& cwd : {ws.path(), std::string("/")}) {
    for (const auto& options : {std::vector<std::string>{"--writable", "/"}, {"--workspace", "/"}}) {
      RunResult r = probe(Rung::landlock, options, {"write", ws / "landed", "x"}, cwd);
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.find("a writable /") != std::string::npos);
      CHECK_FALSE(file_exists(ws / "landed"));
    }
  }
  // Read-only from / is the host's tree, read-only: nothing to refuse, and
  // kernel files stay unwritable.
  RunResult ro = probe(Rung::landlock, {"--mode", "read-only"}, {"open-write", "/proc/sys/kernel/hostname"}, "/");
  INFO("stderr: " << ro.err);
  CHECK(ro.exit_code == 1);
  CHECK(chomp(ro.out).starts_with("error "));
}

TEST_CASE("a writable root inside /proc or /sys, /dev itself, or / by another name is refused", "[root-workspace]") {
  TempDir ws("root");
  for (const char* root : {"/proc/sys", "/proc", "/sys", "/dev", "/.", "//"}) {
    for (Rung rung : {Rung::namespaces, Rung::landlock}) {
      RunResult r = probe(rung, {"--writable", root}, {"getpid"}, ws.path());
      INFO(root << ": " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.starts_with(fmt::format("nsrun: --writable {}: ", root)));
    }
  }
}

TEST_CASE("a policy mount over / is refused with the preset: it would cover /proc, /dev, /tmp", "[root-workspace]") {
  TempDir ws("root");
  write_file(ws / "policy.json", R"({"mounts": [{"kind": "bind", "source": "/", "dest": "/"}]})");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    for (const auto& options : {std::vector<std::string>{"--ro", "/"}, {"--policy", ws / "policy.json"}}) {
      RunResult r = probe(rung, options, {"write", ws / "landed", "x"}, ws.path());
      INFO(r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.find("would cover the sandbox's own /proc, /dev and /tmp") != std::string::npos);
      CHECK(count_lines(r.err) == 1);
      CHECK_FALSE(file_exists(ws / "landed"));
    }
  }
}
