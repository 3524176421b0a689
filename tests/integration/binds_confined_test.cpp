// A bind gives the command what was asked and nothing more: no fd of a
// bind's source, clone or destination reaches it, under a low or a high
// RLIMIT_NOFILE and in either dialect; the host's "/" however spelled is
// the host's "/"; a source swapped between a link and a directory, or a
// directory exchanged with a file, never mounts anything writable.
#include "harness.hpp"
#include "racer.hpp"

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
#include "sys/fd.hpp"

using nsrun::Fd;

namespace {

// Runs nsrun under `ulimit -n nofile` (a shell in between; it execs).
RunResult nsrun_with_nofile(int nofile, const std::vector<std::string>& args, const RunOptions& opts) {
  std::vector<std::string> argv = {"/bin/sh", "-c", fmt::format("ulimit -n {} && exec \"$0\" \"$@\"", nofile),
                                   nsrun_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, opts);
}

// What the command's /proc/self/fd holds (a listing by `ls`, which adds
// its own directory fd), one "N -> target" per line.
const std::string list_fds =
    "for f in /proc/self/fd/*; do printf '%s -> %s\\n' \"${f##*/}\" \"$(readlink \"$f\" | sed 's/:\\[.*//')\"; done";

// Under `ulimit -n nofile`, the command's fd table with `binds` (after
// the launcher words `head`) is the one it has without them; returns the
// run with them.
RunResult same_fds_as(int nofile, const std::vector<std::string>& head, const std::vector<std::string>& binds,
                      const TempDir& ws) {
  const std::vector<std::string> cmd = {"--", "/bin/sh", "-c", list_fds};
  std::vector<std::string> none = head, many = binds;
  none.insert(none.end(), cmd.begin(), cmd.end());
  many.insert(many.end(), cmd.begin(), cmd.end());
  const RunResult base = nsrun_with_nofile(nofile, none, at(ws));
  RunResult r = nsrun_with_nofile(nofile, many, at(ws));
  INFO(base.err << r.err);
  REQUIRE(base.exit_code == 0);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == base.out);
  return r;
}

}  // namespace

// The bind's source, its open_tree clone and its destination are now
// held until a batch of 48 is closed with close_range(), or closed at once
// under RLIMIT_NOFILE < 256. None may reach the command: its fd table with
// 90 binds of every native kind (--ro, --hide, --tmpfs, the workspace's
// own bind) is the one it has with none, under a low and a high limit.
TEST_CASE("no fd of a bind (source, clone, destination) reaches the command, native, low and high nofile",
          "[binds-confined][binds]") {
  require_userns();
  TempDir ws("binds-confined-fds");
  std::vector<std::string> binds;
  for (int i = 0; i < 60; ++i) {
    make_dir(ws / fmt::format("r{}", i));
    binds.insert(binds.end(), {"--ro", ws / fmt::format("r{}", i)});
  }
  for (int i = 0; i < 20; ++i) {
    make_dir(ws / fmt::format("h{}", i));
    write_file(ws / fmt::format("h{}/secret", i), "s\n");
    binds.insert(binds.end(), {"--hide", ws / fmt::format("h{}", i)});
  }
  for (int i = 0; i < 10; ++i) {
    make_dir(ws / fmt::format("t{}", i));
    binds.insert(binds.end(), {"--tmpfs", ws / fmt::format("t{}", i)});
  }
  for (int nofile : {128, 4096}) {
    DYNAMIC_SECTION("RLIMIT_NOFILE " << nofile) {
      const RunResult r = same_fds_as(nofile, {}, binds, ws);
      // Control: the binds were made (a hidden file is gone inside).
      CHECK(r.out.find(ws.path()) == std::string::npos);
    }
  }
}

// The same in bwrap's dialect, whose binds (--ro-bind, --bind, --dev-bind)
// follow symlinks and take the other way through bind().
TEST_CASE("no fd of a bind reaches the command, bwrap dialect, low and high nofile", "[binds-confined][binds][bwrap]") {
  require_userns();
  TempDir ws("binds-confined-bwfds");
  std::vector<std::string> binds = {"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/mnt"};
  for (int i = 0; i < 30; ++i) {
    make_dir(ws / fmt::format("s{}", i));
    binds.insert(binds.end(), {"--ro-bind", ws / fmt::format("s{}", i), fmt::format("/mnt/ro{}", i)});
    binds.insert(binds.end(), {"--bind", ws / fmt::format("s{}", i), fmt::format("/mnt/rw{}", i)});
    binds.insert(binds.end(), {"--dev-bind", ws / fmt::format("s{}", i), fmt::format("/mnt/dev{}", i)});
  }
  for (int nofile : {128, 4096})
    DYNAMIC_SECTION("RLIMIT_NOFILE " << nofile) {
      same_fds_as(nofile, {"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}, binds, ws);
    }
}

// The caller's fds are still open while the root is built (they close at
// the exec): a caller holding 230 fds under a limit of 260 has 30 free,
// and a batch sized from RLIMIT_NOFILE alone runs out of them with 100
// binds (EMFILE, "mount devpts on /dev/pts: Too many open files"). The
// batch is sized from the room left; the command still gets none of them.
TEST_CASE("a caller holding most of RLIMIT_NOFILE still launches with many binds", "[binds-confined][binds]") {
  require_userns();
  TempDir ws("binds-confined-fdroom");
  std::vector<std::string> argv = {
      "/bin/bash", "-c",
      "ulimit -n 260 && for i in $(seq 1 230); do eval 'exec {fd}</dev/null'; done && exec \"$0\" \"$@\"",
      nsrun_path()};
  for (int i = 0; i < 100; ++i) {
    make_dir(ws / fmt::format("r{}", i));
    argv.insert(argv.end(), {"--ro", ws / fmt::format("r{}", i)});
  }
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", "ls /proc/self/fd | wc -l; touch r7/x 2>/dev/null; exit 0"});
  const RunResult r = run(argv, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  // 0, 1, 2 and ls's own: none of the caller's 230 and none of the binds'.
  CHECK(chomp(r.out) == "4");
  CHECK_FALSE(file_exists(ws / "r7/x"));
}

// One statx answers "is this the host's root" for the whole bind. The
// host's "/" spelled another way is still the host's "/" (bwrap's
// semantics: what `/` gives), and /proc/self/root is still refused in one
// line: never the new root's contents under the name of the host's.
TEST_CASE("the host's / spelled /./ and // binds as / does; /proc/self/root is refused",
          "[binds-confined][binds][bwrap]") {
  require_userns();
  TempDir ws("binds-confined-root");
  for (const std::string spelling : {"/", "/./", "//"}) {
    DYNAMIC_SECTION("source " << spelling) {
      const std::string mark = unique_token("a4root");
      RunResult r = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/mnt",
                           "--bind", spelling, "/mnt/x", "--", "/bin/sh", "-c", "touch \"/mnt/x$1\"", "sh", ws / mark},
                          at(ws));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      // The host's file system, writable as asked (the caller's own rights).
      CHECK(file_exists(ws / mark));
    }
  }
  RunResult r = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/mnt", "--bind", "/proc/self/root",
                       "/mnt/x", "--", "/bin/true"},
                      at(ws));
  CHECK(r.exit_code == 1);
  CHECK(count_lines(r.err) == 1);
}

// A read-only bind whose source is a symlink swapped flat out between one
// to the host's "/" and one to a workspace directory: whichever the
// source's lookup found, what is mounted is read-only, and the host's
// root is never bound there writable (nor, through the root link, bound
// elsewhere than "/" at all: one line, exit 1).
TEST_CASE("a --ro-bind source swapped between a link to / and a directory never mounts anything writable",
          "[binds-confined][binds][bwrap][race]") {
  require_userns();
  TempDir ws("binds-confined-rootswap");
  make_dir(ws / "d");
  REQUIRE(::symlink("/", (ws / "l").c_str()) == 0);
  REQUIRE(::symlink((ws / "d").c_str(), (ws / "m").c_str()) == 0);
  const Fd d = open_dir(ws / "d"), top = open_dir(ws.path());
  Racer racer(ws.path(), "l", "m");
  int ran = 0;
  constexpr int rounds = 60;
  for (int k = 0; k < rounds; ++k) {
    // Through /mnt/x, a write into the workspace (host root found) and one
    // into d itself (the directory found).
    RunResult r = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/mnt", "--ro-bind", ws / "l",
                         "/mnt/x", "--", "/bin/sh", "-c", "touch \"/mnt/x$1/w\" /mnt/x/w 2>/dev/null; exit 0", "sh",
                         ws.path()},
                        at(ws));
    INFO("round " << k << ": " << r.err);
    if (r.exit_code == 0) {
      ++ran;
    } else {
      CHECK(r.exit_code == 1);
      CHECK(count_lines(r.err) == 1);
    }
    REQUIRE_FALSE(has(top.get(), "w"));
    REQUIRE_FALSE(has(d.get(), "w"));
  }
  racer.stop();
  INFO(fmt::format("{} ran, {} refused, {} swaps", ran, rounds - ran, racer.swaps()));
  CHECK(racer.swaps() > 0);
}

// The source's type comes from the statx made for the root check. A
// native --ro whose directory is exchanged flat out with a regular file:
// each launch either runs with the object it found read-only, or is
// refused in one line; never are both objects written.
TEST_CASE("a --ro directory exchanged with a file: never both objects writable", "[binds-confined][binds][race]") {
  require_userns();
  TempDir ws("binds-confined-dirfile");
  make_dir(ws / "p");
  write_file(ws / "f", "orig\n");
  const Fd dir = open_dir(ws / "p");
  const int file_fd = ::open((ws / "f").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(file_fd >= 0);
  const Fd file(file_fd);
  auto file_size = [&] {
    struct stat st{};
    REQUIRE(::fstat(file.get(), &st) == 0);
    return st.st_size;
  };
  Racer racer(ws.path(), "p", "f");
  int ran = 0, both = 0;
  constexpr int rounds = 100;
  for (int k = 0; k < rounds; ++k) {
    RunResult r = nsrun_test::nsrun({"--ro", ws / "p", "--", "/bin/sh", "-c",
                         "for n in p f; do echo x > \"$n/x\"; echo y >> \"$n\"; done 2>/dev/null; exit 0"},
                        at(ws));
    INFO("round " << k << ": " << r.err);
    const bool dir_written = has(dir.get(), "x"), file_written = file_size() != 5;
    if (r.exit_code == 0) {
      ++ran;
      if (dir_written && file_written) ++both;
    } else {
      CHECK(r.exit_code == 125);
      CHECK(count_lines(r.err) == 1);
      REQUIRE_FALSE(dir_written);
      REQUIRE_FALSE(file_written);
    }
    ::unlinkat(dir.get(), "x", 0);
    REQUIRE(::ftruncate(file.get(), 5) == 0);
  }
  racer.stop();
  INFO(fmt::format("{} ran, {} refused, {} swaps", ran, rounds - ran, racer.swaps()));
  CHECK(both == 0);
  CHECK(racer.swaps() > 0);
}
