// `nsrun commit` moves a changed file out of a finished run's layer instead
// of copying it (its speed target is in docs/bench.md). What the move must
// not change: the committed file is what a copy gave (no xattr of the
// layer's, no link into the layer, the committed bytes), and a sandbox still
// running on the layer cannot write into a file after it was committed.
// Every test looks at the host's files.
#include "cow_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <string>

using namespace nsrun_test;
using namespace std::chrono_literals;
using namespace nsrun_test::cow;

namespace {

std::string xattrs_of(const std::string& path) {
  char names[4096];
  const ssize_t n = ::llistxattr(path.c_str(), names, sizeof names);
  return n > 0 ? std::string(names, static_cast<std::size_t>(n)) : std::string();
}

// The run id a running cow launch printed on stderr.
std::string run_id_of_running(Process& p) {
  std::string id;
  REQUIRE(eventually([&] {
    (void)p.poll_line("no such line", 20ms);  // reads stderr on the way
    if (p.err().find("nsrun: run ") == std::string::npos) return false;
    id = run_id_of(p.err());
    return true;
  }));
  return id;
}

}  // namespace

TEST_CASE("cow commit: a moved file is what a copy gave: no layer xattr, one link, its own bytes", "[cow]") {
  require_userns();
  TempDir ws("cowm-ws"), state("cowm-state"), home("cowm-home");
  const auto env = layer_env(state, home.path());
  make_dir(ws / "d");
  write_file(ws / "d/edited", "old\n");
  write_file(ws / "d/tagged", "old\n");
  write_file(ws / "d/exec", "old\n", 0644);
  wait_for_next_tick(ws / "d/exec");
  // setfattr is not everywhere: python sets the command's own user xattr.
  const std::string id =
      cow_run(ws, env,
              "echo new >> d/edited && echo new >> d/tagged && chmod 0750 d/exec && echo new >> d/exec && "
              "echo added > d/added && "
              "python3 -c \"import os; os.setxattr('d/tagged', 'user.nsrun_test', b'x')\" 2>/dev/null; true");
  RunResult c = nsrun({"commit", id}, in(ws, env));
  INFO(c.out << c.err);
  CHECK(c.exit_code == 0);
  CHECK(read_file(ws / "d/edited") == "old\nnew\n");
  CHECK(read_file(ws / "d/tagged") == "old\nnew\n");
  CHECK(read_file(ws / "d/exec") == "old\nnew\n");
  CHECK(read_file(ws / "d/added") == "added\n");
  struct stat st{};
  REQUIRE(::lstat((ws / "d/exec").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  for (const char* f : {"d/edited", "d/tagged", "d/exec", "d/added"}) {
    INFO(f);
    // overlayfs's bookkeeping (user.overlay.origin) stays behind, and a
    // file with an xattr of the command's is copied as before (no xattr).
    CHECK(xattrs_of(ws / f).empty());
    REQUIRE(::lstat((ws / f).c_str(), &st) == 0);
    CHECK(st.st_nlink == 1);
  }
  // Nothing of them is left in the layer, and the layer's discard leaves
  // the workspace as committed.
  CHECK(nsrun({"changes", id}, in(ws, env)).out.empty());
  CHECK(nsrun({"discard", id}, in(ws, env)).exit_code == 0);
  CHECK(read_file(ws / "d/edited") == "old\nnew\n");
  CHECK(read_file(ws / "d/added") == "added\n");
}

// The attack: the command keeps a file of its layer open and writes on
// after the user committed it. A move would have put that very inode in
// the workspace; a commit while a sandbox runs on the layer copies.
TEST_CASE("attack: a sandbox still running cannot write into a file after it was committed", "[attack][cow]") {
  require_userns();
  TempDir ws("cowm-live"), state("cowm-live-state"), home("cowm-live-home"), chan("cowm-live-chan");
  const auto env = layer_env(state, home.path());
  write_file(ws / "f", "orig\n");
  wait_for_next_tick(ws / "f");
  REQUIRE(::mkfifo((chan / "go").c_str(), 0600) == 0);
  // The command writes, says so, waits for the test's word through a fifo
  // in a writable root outside the workspace, then writes again through
  // the same open file.
  Process p({nsrun_path(), "--workspace-mode", "cow", "--writable", chan.path(), "--", "sh", "-c",
             "exec 3>>f && echo one >&3 && echo ready && read word < " + shell_quote(chan / "go") +
                 " && echo two >&3 && echo wrote-again"},
            in(ws, env));
  p.wait_for_line("ready");
  const std::string id = run_id_of_running(p);
  RunResult c = nsrun({"commit", id}, in(ws, env));
  INFO(c.out << c.err);
  CHECK(c.exit_code == 0);
  CHECK(read_file(ws / "f") == "orig\none\n");
  {
    const int fd = ::open((chan / "go").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    CHECK(::write(fd, "go\n", 3) == 3);
    ::close(fd);
  }
  RunResult done = p.wait();
  INFO(done.out << done.err);
  CHECK(done.exit_code == 0);
  CHECK(done.out.find("wrote-again") != std::string::npos);
  // The committed file is the snapshot the user reviewed, not the inode
  // the command still held.
  CHECK(read_file(ws / "f") == "orig\none\n");
}

// Only a run the launch saw to its end is committed by moving. A work lock
// is freed when nsrun dies, and a SIGKILL of nsrun frees it a moment before
// the kernel has killed the sandbox's last process (PID 1 dies of its
// parent-death signal after); so the launch marks the run ended once it has
// reaped PID 1, and a run without the mark is committed by copying.
TEST_CASE("cow commit: moves out of an ended run only; a run whose nsrun was killed is copied", "[cow]") {
  require_userns();
  TempDir ws("cowm-end"), state("cowm-end-state"), home("cowm-end-home"), cow("cowm-end-cow");
  const auto env = layer_env(state, home.path());
  write_file(ws / "f", "orig\n");
  wait_for_next_tick(ws / "f");
  auto inode = [](const std::string& path) {
    struct stat st{};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_ino;
  };

  SECTION("a run that ended: the layer's file is moved") {
    const std::string id = cow_run(ws, env, "echo new >> f", {"--cow-dir", cow.path()});
    CHECK(::access((cow.path() + "/" + id + "/ended").c_str(), F_OK) == 0);
    const ino_t upper = inode(cow.path() + "/" + id + "/upper/f");
    RunResult c = nsrun({"commit", "--cow-dir", cow.path(), id}, in(ws, env));
    INFO(c.out << c.err);
    CHECK(c.exit_code == 0);
    CHECK(read_file(ws / "f") == "orig\nnew\n");
    CHECK(inode(ws / "f") == upper);
  }
  SECTION("nsrun killed mid-run: no mark, the file is copied") {
    Process p({nsrun_path(), "--workspace-mode", "cow", "--cow-dir", cow.path(), "--", "sh", "-c",
               "echo new >> f && echo ready && exec sleep 600"},
              in(ws, env));
    p.wait_for_line("ready");
    const std::string id = run_id_of_running(p);
    REQUIRE(::kill(p.pid(), SIGKILL) == 0);
    (void)p.wait();
    CHECK(::access((cow.path() + "/" + id + "/ended").c_str(), F_OK) != 0);
    const ino_t upper = inode(cow.path() + "/" + id + "/upper/f");
    RunResult c = nsrun({"commit", "--cow-dir", cow.path(), id}, in(ws, env));
    INFO(c.out << c.err);
    CHECK(c.exit_code == 0);
    CHECK(read_file(ws / "f") == "orig\nnew\n");
    CHECK(inode(ws / "f") != upper);
  }
}
