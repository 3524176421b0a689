// The shortcuts taken for speed, each held to the promise it must not weaken.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

using namespace nsrun_test;

namespace {

// The Landlock rung no longer resolves the symlinks beside a hidden
// credential, nor gives them rules: Landlock checks the path the kernel
// resolved, so a link reads exactly what its target's own rules allow.
// If that ever stops being true (a link given its target's rights, or
// none), one of these reads changes.
TEST_CASE("startup: symlinks beside a hidden credential read what their targets allow, on both rungs",
          "[startup][credentials]") {
  TempDir home("su-home");
  TempDir elsewhere("su-else");
  TempDir ws("su-ws");
  write_file(home / ".netrc", "NPM-SECRET\n", 0600);
  make_dir(home / ".ssh", 0700);
  write_file(home / ".ssh/id_ed25519", "SSH-SECRET\n", 0600);
  write_file(home / ".profile", "profile\n");
  write_file(elsewhere / "notes", "notes\n");
  make_dir(elsewhere / "dir");
  write_file(elsewhere / "dir/inner", "inner\n");
  // Links in the home (a directory above the hidden ones): to a file and a
  // directory elsewhere, to the hidden file (absolute and relative), into
  // the hidden directory, to the home itself, and a dangling one.
  REQUIRE(::symlink((elsewhere / "notes").c_str(), (home / "to-notes").c_str()) == 0);
  REQUIRE(::symlink((elsewhere / "dir").c_str(), (home / "to-dir").c_str()) == 0);
  REQUIRE(::symlink((home / ".netrc").c_str(), (home / "to-netrc").c_str()) == 0);
  REQUIRE(::symlink(".netrc", (home / "rel-netrc").c_str()) == 0);
  REQUIRE(::symlink(".ssh/id_ed25519", (home / "to-key").c_str()) == 0);
  REQUIRE(::symlink(".ssh", (home / "to-ssh").c_str()) == 0);
  REQUIRE(::symlink(home.path().c_str(), (home / "to-home").c_str()) == 0);
  REQUIRE(::symlink("missing", (home / "dangling").c_str()) == 0);
  RunOptions opts = at(ws);
  opts.env = {"HOME=" + home.path()};
  const std::string script =
      "cd \"$HOME\"; for f in to-notes to-dir/inner to-home/.profile .profile; do cat \"$f\" || echo \"unread $f\"; done; "
      "for f in to-netrc rel-netrc to-key to-ssh/id_ed25519 to-home/.netrc to-home/to-netrc dangling; do "
      "cat \"$f\" 2>/dev/null && echo \"READ $f\"; done; ls to-dir; echo end";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--", "sh", "-c", script});
      RunResult r = nsrun(args, opts);
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "notes\ninner\nprofile\nprofile\ninner\nend\n");
      CHECK(r.out.find("SECRET") == std::string::npos);
      // The control: without the defaults hidden, the same links read them.
      std::vector<std::string> none = rung_options(rung);
      none.insert(none.end(), {"--hide-defaults", "none", "--", "sh", "-c", "cat \"$HOME/to-key\" \"$HOME/rel-netrc\""});
      CHECK(nsrun(none, opts).out == "SSH-SECRET\nNPM-SECRET\n");
      CHECK(read_file(home / ".netrc") == "NPM-SECRET\n");
    }
  }
}

// The threads of process `pid` (its /proc status), 0 when unreadable.
int threads_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  return 0;
}

// How many of `pid`'s children are the egress proxy's process.
int proxies_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  int n = 0;
  for (pid_t child; in >> child;) {
    std::ifstream comm("/proc/" + std::to_string(child) + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "nsrun-proxy") ++n;
  }
  return n;
}

// Opens the fifo for writing (the sandbox's `read` is its reader) and
// closes it: the reader sees end of file and goes on.
void release(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ::close(fd);
}

// --network proxy starts its process at the first connection or query, not
// at every launch: before it nsrun has one thread and no proxy, after it a
// proxy process (and a thread that reads its decisions), and the
// connection is served (nsrun connect reaches the proxy and is refused by
// the allow-list, which only the proxy can say).
TEST_CASE("startup: the egress proxy's process starts at the first connection", "[startup][egress]") {
  require_userns();
  TempDir ws("su-proxy");
  const std::string go = ws / "go";
  const std::string end = ws / "end";
  REQUIRE(::mkfifo(go.c_str(), 0600) == 0);
  REQUIRE(::mkfifo(end.c_str(), 0600) == 0);
  // A copy in the workspace: the sandbox's private /tmp would hide one
  // under /tmp (the test runner's copies are there).
  const std::string self = ws / "nsrun";
  write_file(self, read_file(nsrun_path()), 0755);
  const std::string script = "echo ready; read x < go; " + shell_quote(self) +
                             " connect other.invalid 80 </dev/null; echo \"connected $?\"; read x < end; exit 0";
  Process p({nsrun_path(), "--network", "proxy", "--allow-host", "example.invalid", "--", "sh", "-c", script}, at(ws));
  p.wait_for_line("ready");
  CHECK(threads_of(p.pid()) == 1);
  CHECK(proxies_of(p.pid()) == 0);
  release(go);
  const std::string line = p.wait_for_line("connected");
  CHECK(line != "connected 0");
  CHECK(threads_of(p.pid()) == 2);
  CHECK(proxies_of(p.pid()) == 1);
  release(end);
  RunResult r = p.wait();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("other.invalid") != std::string::npos);
}

}  // namespace
