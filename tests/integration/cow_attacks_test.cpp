// Copy-on-write commit against a hostile command: what `nsrun commit`
// writes on the host must be plain files, symlinks and directories of the
// caller's, with no set-ID bit, no device, no socket, no link to anything
// outside the workspace, and exactly the tree the command saw, whatever
// the command left in its layer (set-ID directories, fifos, sockets,
// device nodes, hard links to host files, forged overlay marks, a path
// deeper than PATH_MAX, many files). As root and as nsrun-test
// (tools/run-tests.sh runs both); cow is the namespace rung's.
#include "cow_support.hpp"

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

using namespace nsrun_test;
using namespace nsrun_test::cow;

namespace {

struct stat lstat_of(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

RunResult commit_of(const TempDir& ws, const std::vector<std::string>& env, const std::string& id) {
  RunResult r = nsrun({"commit", id}, in(ws, env));
  INFO(r.out << r.err);
  return r;
}

bool have_python() { return file_exists("/usr/bin/python3"); }

// The launches an attack runs in: the default (a user namespace), and as
// root also without one (a policy file in `cfg`), where the command is
// real root in its layer.
std::vector<std::vector<std::string>> namespace_variants(const TempDir& cfg) {
  std::vector<std::vector<std::string>> out = {{}};
  if (::getuid() == 0) {
    write_file(cfg / "policy.json", "{\"namespaces\": {\"user\": false}}\n");
    out.push_back({"--policy", cfg / "policy.json"});
  }
  return out;
}

const char* variant_name(const std::vector<std::string>& extra) {
  return extra.empty() ? "in a user namespace" : "root, no user namespace";
}

}  // namespace

// The file set-ID bits were already stripped;
// a directory's were carried: `chmod 4755 d` or a new `chmod 6775 nd` in
// the layer arrived on the host as such.
TEST_CASE("cow commit: no set-user-ID or set-group-ID bit on a committed directory, fifo or file", "[cow-attacks]") {
  require_userns();
  TempDir ws("cowatk-setid"), state("cowatk-setid-state");
  make_dir(ws / "d", 0755);
  make_dir(ws / "shared", 0755);
  REQUIRE(::chmod((ws / "shared").c_str(), 02775) == 0);  // the host's own set-group-ID directory
  settle_clock();
  const auto env = layer_env(state, state.path());
  const std::string id = cow_run(ws, env,
                                 "chmod 4755 d && mkdir nd && chmod 6775 nd && printf x > nd/f && chmod 6755 nd/f && "
                                 "mkfifo ff && chmod 6755 ff && mkdir shared/sub && chmod 0755 shared/sub && "
                                 "stat -c '%a %n' d nd nd/f ff shared/sub");
  RunResult c = commit_of(ws, env, id);
  CHECK(c.exit_code == 0);
  CHECK((lstat_of(ws / "d").st_mode & 07777) == 0755);
  CHECK((lstat_of(ws / "nd").st_mode & 07777) == 0775);
  CHECK((lstat_of(ws / "nd/f").st_mode & 07777) == 0755);
  CHECK(S_ISFIFO(lstat_of(ws / "ff").st_mode));
  CHECK((lstat_of(ws / "ff").st_mode & 07777) == 0755);
  // What the host gives a new directory in a set-group-ID one stays.
  CHECK((lstat_of(ws / "shared/sub").st_mode & 07777) == 02755);
  CHECK((lstat_of(ws / "shared").st_mode & 07777) == 02775);
}

// A socket the command bound, and a device node where it can make one
// (root without a user namespace): commit refuses each, names it, and
// applies the rest. Nothing but the regular file arrives.
TEST_CASE("cow commit: a socket or a device node never arrives on the host", "[cow-attacks]") {
  require_userns();
  if (!have_python()) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("cowatk-dev"), state("cowatk-dev-state"), cfg("cowatk-dev-cfg");
  settle_clock();
  const auto env = layer_env(state, state.path());
  const std::string script =
      "printf ok > plain && /usr/bin/python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\" && "
      "{ mknod null c 1 3 2>/dev/null; mknod disk b 8 0 2>/dev/null; true; }";
  // Root without a user namespace can mknod in its layer for real.
  for (const auto& extra : namespace_variants(cfg)) {
    DYNAMIC_SECTION(variant_name(extra)) {
      const std::string id = cow_run(ws, env, script, extra);
      RunResult c = commit_of(ws, env, id);
      CHECK(c.exit_code != 0);
      CHECK(c.err.find("sock") != std::string::npos);
      CHECK(read_file(ws / "plain") == "ok");
      CHECK_FALSE(file_exists(ws / "sock"));
      CHECK_FALSE(file_exists(ws / "null"));
      CHECK_FALSE(file_exists(ws / "disk"));
      REQUIRE(::unlink((ws / "plain").c_str()) == 0);
      (void)nsrun({"discard", id}, in(ws, env));
      settle_clock();
    }
  }
}

// Outside a user namespace (root, "namespaces": {"user": false}) the
// layer's overlay kept its marks in trusted.* xattrs: commit read only
// user.overlay.*, so a directory the command emptied and remade kept its
// old files on the host, and an opaque mark the command set itself
// (user.* was its to set) made commit delete a directory it never touched.
// In a user namespace, the same attack for every user.
TEST_CASE("cow commit: opaque directories are the kernel's, never the command's, with or without a user namespace",
          "[cow-attacks]") {
  require_userns();
  if (!have_python()) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("cowatk-opq"), state("cowatk-opq-state"), cfg("cowatk-opq-cfg");
  const auto env = layer_env(state, state.path());
  for (const auto& extra : namespace_variants(cfg)) {
    DYNAMIC_SECTION(variant_name(extra)) {
      make_dir(ws / "remade");
      write_file(ws / "remade/old", "old\n");
      make_dir(ws / "untouched");
      write_file(ws / "untouched/keep", "keep\n");
      settle_clock();
      const std::string id = cow_run(
          ws, env,
          "rm -rf remade && mkdir remade && echo new > remade/new && /usr/bin/python3 -c \""
          "import os\n"
          "for k in ['user.overlay.opaque', 'trusted.overlay.opaque', 'user.overlay.overlay.opaque']:\n"
          "    try: os.setxattr('untouched', k, b'y')\n"
          "    except OSError: pass\n\"",
          extra);
      RunResult ch = nsrun({"changes", id}, in(ws, env));
      INFO(ch.out << ch.err);
      CHECK(ch.out.find("R remade/\n") != std::string::npos);
      CHECK(ch.out.find("untouched") == std::string::npos);
      RunResult c = commit_of(ws, env, id);
      CHECK(c.exit_code == 0);
      CHECK_FALSE(file_exists(ws / "remade/old"));
      CHECK(read_file(ws / "remade/new") == "new\n");
      CHECK(read_file(ws / "untouched/keep") == "keep\n");
      REQUIRE(run({"rm", "-rf", ws / "remade", ws / "untouched"}).exit_code == 0);
    }
  }
}

// A workspace file that is a hard link to a file outside the workspace:
// the command appends to one name, removes another and links a third;
// commit replaces names, never writes into the shared inode, and links
// nothing (each committed file has one link).
TEST_CASE("cow commit: hard links to a host file outside the workspace are never written through",
          "[cow-attacks]") {
  require_userns();
  TempDir ws("cowatk-hl"), outside("cowatk-hl-out"), state("cowatk-hl-state");
  write_file(outside / "target", "orig\n");
  write_file(outside / "target2", "orig2\n");
  REQUIRE(::link((outside / "target").c_str(), (ws / "link").c_str()) == 0);
  REQUIRE(::link((outside / "target2").c_str(), (ws / "link2").c_str()) == 0);
  settle_clock();
  const auto env = layer_env(state, state.path());
  const std::string id = cow_run(ws, env,
                                 "echo new >> link && rm link2 && ln link link3 && "
                                 "{ ln " + shell_quote(outside / "target") + " x 2>/dev/null && echo linked-out; true; }");
  RunResult c = commit_of(ws, env, id);
  CHECK(c.exit_code == 0);
  CHECK(read_file(outside / "target") == "orig\n");
  CHECK(read_file(outside / "target2") == "orig2\n");
  CHECK(read_file(ws / "link") == "orig\nnew\n");
  CHECK(read_file(ws / "link3") == "orig\nnew\n");
  CHECK_FALSE(file_exists(ws / "link2"));
  CHECK_FALSE(file_exists(ws / "x"));
  CHECK(lstat_of(ws / "link").st_nlink == 1);
  CHECK(lstat_of(ws / "link3").st_nlink == 1);
  CHECK(lstat_of(outside / "target").st_nlink == 1);
  CHECK(lstat_of(outside / "target2").st_nlink == 1);
}

// A tree deeper than PATH_MAX (20 names of 250 bytes): a change below it
// failed with ENAMETOOLONG in commit and in changes --patch; it is applied.
TEST_CASE("cow commit: a change below a path longer than PATH_MAX is applied", "[cow-attacks]") {
  require_userns();
  if (!have_python()) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("cowatk-deep"), state("cowatk-deep-state");
  const std::string name(250, 'd');
  {
    int dir = ::open(ws.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    for (int i = 0; i < 20; ++i) {
      REQUIRE(::mkdirat(dir, name.c_str(), 0755) == 0);
      const int sub = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::close(dir);
      REQUIRE(sub >= 0);
      dir = sub;
    }
    const int f = ::openat(dir, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(f >= 0);
    REQUIRE(::write(f, "old", 3) == 3);
    ::close(f);
    ::close(dir);
  }
  settle_clock();
  const auto env = layer_env(state, state.path());
  const std::string id = cow_run(ws, env,
                                 "/usr/bin/python3 -c \"import os\nfor i in range(20): os.chdir('" + name +
                                     "')\nopen('f', 'w').write('changed')\nopen('g', 'w').write('added')\"");
  RunResult patch = nsrun({"changes", id, "--patch"}, in(ws, env));
  INFO(patch.err);
  CHECK(patch.exit_code == 0);
  CHECK(patch.out.find("+changed") != std::string::npos);
  RunResult c = commit_of(ws, env, id);
  CHECK(c.exit_code == 0);
  CHECK(c.err.find("2 applied, 0 conflicts, 0 protected, 0 failed") != std::string::npos);
  RunResult read = run({"/usr/bin/python3", "-c",
                        "import os\nos.chdir('" + ws.path() + "')\nfor i in range(20): os.chdir('" + name +
                            "')\nprint(open('f').read(), open('g').read())"});
  CHECK(read.out == "changed added\n");
}

// Many files: commit of 10,000 new files in one directory ends in seconds
// (docs/hardening.md has the measured figure for 100,000).
TEST_CASE("cow commit: 10,000 new files are committed whole, in seconds", "[cow-attacks]") {
  require_userns();
  TempDir ws("cowatk-many"), state("cowatk-many-state");
  settle_clock();
  const auto env = layer_env(state, state.path());
  const std::string id = cow_run(ws, env, "mkdir many && cd many && seq 10000 | xargs touch");
  const auto start = std::chrono::steady_clock::now();
  RunResult c = commit_of(ws, env, id);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(c.exit_code == 0);
  CHECK(run({"sh", "-c", "ls " + shell_quote(ws / "many") + " | wc -l"}).out == "10000\n");
  CHECK(took < std::chrono::seconds(60));
}
