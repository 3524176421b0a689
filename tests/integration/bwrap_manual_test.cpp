// The bwrap dialect against bwrap's documented behaviour ("behaviours
// from bwrap's manual that differ today"). Where Debian's bubblewrap 0.8.0
// (a test oracle only) has the behaviour, the same command line runs under
// both and the effects must agree; where it is newer than 0.8, the words of
// bwrap 0.11's manual and source are the reference. Runs as root and as the
// unprivileged test user (tools/run-tests.sh does both).
#include "bwrap_oracle.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace nsrun_test;

namespace {

// `<bwrap> ARGS` through sh (so a case can open fds), under umask 077: bwrap
// builds the root with umask 0, so the modes it gives must not depend on it.
RunResult run_under(const std::string& bwrap, const std::string& args, const RunOptions& opts = {}) {
  return run({"/bin/sh", "-c", fmt::format("umask 077; exec {} {}", shell_quote(bwrap), args)}, opts);
}

std::string mode_of(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return "(absent)";
  const char* type = S_ISDIR(st.st_mode) ? "dir" : S_ISREG(st.st_mode) ? "file" : "other";
  return fmt::format("{} {:04o}", type, st.st_mode & 07777);
}

// The Cap* lines of /proc/self/status, by name.
std::string cap_line(const std::string& status, std::string_view name) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name)) return line;
  return "(missing " + std::string(name) + ")";
}

uint64_t cap_value(const std::string& status, std::string_view name) {
  const std::string line = cap_line(status, name);
  const auto tab = line.find_first_of(" \t");
  if (tab == std::string::npos) return ~uint64_t{0};
  return std::stoull(line.substr(tab), nullptr, 16);
}

// What F_GETLK says about `path`: the type of a lock that would block a
// write lock, and its holder (0 when none).
struct LockState {
  short type = F_UNLCK;
  pid_t holder = 0;
};

LockState lock_state(const std::string& path, int cmd) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  struct flock l{};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  const int r = ::fcntl(fd, cmd, &l);
  const int err = errno;
  ::close(fd);
  INFO("fcntl: " << std::strerror(err));
  REQUIRE(r == 0);
  return {l.l_type, l.l_type == F_UNLCK ? 0 : l.l_pid};
}

// Runs `observe` under the real bwrap (the oracle) and under nsrun's shim:
// the oracle must see `expected`, and the shim what the oracle saw.
void check_like_bwrap(const BwrapShim& shim, std::string_view expected,
                      const std::function<std::string(const std::string& bwrap)>& observe) {
  std::vector<std::string> seen;
  for (const std::string& bwrap : {std::string(oracle), shim.path}) seen.push_back(observe(bwrap));
  CHECK(seen[0] == expected);
  CHECK(seen[1] == seen[0]);
}

// `ARGS` (cat /proc/self/status) under both: both succeed and each of
// `sets` is the same. Returns nsrun's and bwrap's status, in that order.
std::pair<std::string, std::string> same_capability_sets(const BwrapShim& shim, const std::string& args,
                                                         std::initializer_list<const char*> sets) {
  RunResult want = run_under(oracle, args);
  RunResult got = run_under(shim.path, args);
  INFO("bwrap stderr: " << want.err);
  INFO("nsrun stderr: " << got.err);
  REQUIRE(want.exit_code == 0);
  REQUIRE(got.exit_code == 0);
  for (const char* set : sets) {
    INFO(set);
    CHECK(cap_line(got.out, set) == cap_line(want.out, set));
  }
  return {got.out, want.out};
}

}  // namespace

TEST_CASE("bwrap manual: --unshare-user-try as root runs as under bwrap", "[bwrap][manual]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string host_userns = read_link("/proc/self/ns/user");
  REQUIRE_FALSE(host_userns.empty());
  // The command line, and what it made: a user namespace of its
  // own, with the caller's /proc (no PID namespace of its own).
  const std::string args = fmt::format(
      "--bind / / --tmpfs /tmp --unshare-user-try --proc /proc "
      "sh -c '[ \"$(readlink /proc/self/ns/user)\" != {} ] && echo new-userns; "
      "[ \"$(readlink /proc/self/ns/pid)\" = {} ] && echo host-pidns; test -r /proc/self/status && echo proc'",
      shell_quote(host_userns), shell_quote(read_link("/proc/self/ns/pid")));
  RunResult want = run_under(oracle, args);
  RunResult got = run_under(shim.path, args);
  INFO("bwrap stderr: " << want.err);
  INFO("nsrun stderr: " << got.err);
  CHECK(want.exit_code == 0);
  CHECK(got.exit_code == want.exit_code);
  CHECK(got.out == want.out);
  CHECK(got.out == "new-userns\nhost-pidns\nproc\n");
  CHECK(got.err == want.err);
}

TEST_CASE("bwrap manual: uid 0 keeps every capability bwrap keeps", "[bwrap][manual][caps]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string drops = "--cap-drop CAP_KILL --cap-drop CAP_FOWNER";
  const uint64_t dropped = (uint64_t{1} << 5) | (uint64_t{1} << 3);  // CAP_KILL, CAP_FOWNER
  const uint64_t held = cap_value(read_file("/proc/self/status"), "CapEff:");

  SECTION("in a user namespace, as uid 0 there (root, and the unprivileged user with --uid 0)") {
    const auto [got, want] = same_capability_sets(shim, "--ro-bind / / --unshare-user --uid 0 " + drops + " cat /proc/self/status",
                                                  {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"});
    // Root keeps what it held, less the two; others never get any.
    CHECK(cap_value(got, "CapEff:") == (is_root() ? held & ~dropped : 0));
  }
  SECTION("as root with neither --cap-add nor --cap-drop: bwrap never calls capset, every set is bwrap's") {
    if (!is_root()) SKIP("only root keeps capabilities by default");
    // The inheritable and ambient sets too: the caller's without a user
    // namespace, empty in a new one.
    same_capability_sets(shim, "--ro-bind / / cat /proc/self/status", {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"});
    same_capability_sets(shim, "--ro-bind / / --unshare-user cat /proc/self/status",
                         {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"});
    same_capability_sets(shim, "--ro-bind / / --unshare-pid --as-pid-1 cat /proc/self/status",
                         {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"});
  }
  SECTION("as root without a user namespace") {
    if (!is_root()) SKIP("only root runs bwrap without a user namespace");
    const auto [got, want] =
        same_capability_sets(shim, "--ro-bind / / " + drops + " cat /proc/self/status", {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"});
    CHECK(cap_value(got, "CapEff:") == (held & ~dropped));
    // bwrap leaves root's bounding set alone here; nsrun empties it down to
    // what is kept (docs/bwrap.md): never more than bwrap's.
    const uint64_t bnd = cap_value(got, "CapBnd:");
    CHECK((bnd & ~cap_value(want, "CapBnd:")) == 0);
    CHECK(bnd == cap_value(got, "CapPrm:"));
  }
}

TEST_CASE("bwrap manual: --lock-file is held while the command runs", "[bwrap][manual][lock]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  for (const std::string pid_ns : {"", "--unshare-pid "}) {
    for (const std::string& bwrap : {std::string(oracle), shim.path}) {
      // Named without the shim's path, which is new on every pass.
      DYNAMIC_SECTION((bwrap == oracle ? "bwrap " : "nsrun ") << pid_ns) {
        TempDir ws("lock");
        const std::string lock = ws / "lock", fifo = ws / "fifo";
        write_file(lock, "");
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        // The command says it started (the lock is taken before it runs),
        // then blocks reading the FIFO until the test closes its end.
        Process sandbox({"/bin/sh", "-c",
                         fmt::format("exec {} --ro-bind / / {}--lock-file {} sh -c 'echo started; cat {}'",
                                     shell_quote(bwrap), pid_ns, shell_quote(lock), shell_quote(fifo))});
        sandbox.wait_for_line("started");
        // bwrap does not order its lock before the command's start: CI saw
        // the oracle's lock absent (F_UNLCK) right after the command's first
        // line, once. For the oracle, wait for the lock; nsrun takes it
        // before the command starts, and is checked at once.
        if (bwrap == oracle) CHECK(eventually([&] { return lock_state(lock, F_GETLK).type == F_RDLCK; }));
        for (int cmd : {F_GETLK, F_OFD_GETLK}) {
          const LockState held = lock_state(lock, cmd);
          INFO("stderr: " << sandbox.err() << " cmd " << cmd);
          CHECK(held.type == F_RDLCK);
          CHECK(held.holder > 0);
          CHECK(held.holder != ::getpid());
        }
        // Let the command end; the lock goes with the sandbox.
        const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
        REQUIRE(w >= 0);
        ::close(w);
        RunResult r = sandbox.wait();
        INFO("stderr: " << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out == "started\n");
        CHECK(lock_state(lock, F_GETLK).type == F_UNLCK);
      }
    }
  }
}

TEST_CASE("bwrap manual: mount points made for binds are 0755 directories and 0444 files", "[bwrap][manual][modes]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  check_like_bwrap(shim, "file 0444 | dir 0755 | file 0444", [](const std::string& bwrap) {
    TempDir ws("mp");
    // Inside a bind of a host directory, so the mount points land on the host.
    RunResult r = run_under(bwrap, fmt::format("--ro-bind / / --bind {0} {0} --ro-bind /etc/hostname {0}/newfile "
                                               "--ro-bind /etc {0}/newdir --dev-bind /dev/null {0}/newdev true",
                                               shell_quote(ws.path())));
    INFO(bwrap << " stderr: " << r.err);
    CHECK(r.exit_code == 0);
    return fmt::format("{} | {} | {}", mode_of(ws / "newfile"), mode_of(ws / "newdir"), mode_of(ws / "newdev"));
  });
}

TEST_CASE("bwrap manual: --dir leaves an existing directory's mode alone; --perms and --chmod", "[bwrap][manual][modes]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  check_like_bwrap(shim, "700\n754\n1741\n755\n705\ndir 0700 | dir 0754 | dir 1741 | dir 0755 | dir 0705",
                   [](const std::string& bwrap) {
    TempDir ws("dir");
    make_dir(ws / "d710");
    REQUIRE(::chmod((ws / "d710").c_str(), 0710) == 0);
    make_dir(ws / "d754");
    REQUIRE(::chmod((ws / "d754").c_str(), 0754) == 0);
    const std::string w = shell_quote(ws.path());
    RunResult r = run_under(bwrap, fmt::format("--ro-bind / / --bind {0} {0} --dir {0}/d710 --perms 0741 --dir {0}/d754 "
                                               "--perms 1741 --dir {0}/made --dir {0}/plain --dir {0}/chm "
                                               "--chmod 0705 {0}/chm --chmod 0700 {0}/d710 "
                                               "stat -c %a {0}/d710 {0}/d754 {0}/made {0}/plain {0}/chm",
                                               w));
    INFO(bwrap << " stderr: " << r.err);
    CHECK(r.exit_code == 0);
    // Inside, and on the host where they were made.
    return r.out + fmt::format("{} | {} | {} | {} | {}", mode_of(ws / "d710"), mode_of(ws / "d754"),
                               mode_of(ws / "made"), mode_of(ws / "plain"), mode_of(ws / "chm"));
  });
}

TEST_CASE("bwrap manual: bad --size, --perms and --size twice, --as-pid-1 with --lock-file", "[bwrap][manual][errors]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("size");
  const std::string ran = ws / "ran";
  const std::vector<std::string> cases{
      "--size 123bogus --tmpfs /x",
      "--size '' --tmpfs /x",
      "--size -1 --tmpfs /x",
      "--size ' 1' --tmpfs /x",
      "--size 18446744073709551616 --tmpfs /x",
      "--size 9223372036854775809 --tmpfs /x",
      "--size 0 --tmpfs /x",
      "--perms 0700 --perms 0700 --dir /x",
      "--size 10 --size 10 --tmpfs /x",
      "--unshare-pid --as-pid-1 --lock-file /etc/hostname",
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c) {
      const std::string args = fmt::format("--ro-bind / / {} touch {}", c, shell_quote(ran));
      RunResult want = run_under(oracle, args);
      RunResult got = run_under(shim.path, args);
      CHECK(want.exit_code == 1);
      CHECK(got.exit_code == 1);
      CHECK(got.err == want.err);
      CHECK(got.out == want.out);
      CHECK_FALSE(file_exists(ran));  // nothing ran
    }
  }
}

TEST_CASE("bwrap manual: --chdir given twice warns, the last one wins", "[bwrap][manual][warn]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string args = "--ro-bind / / --chdir /etc --chdir / pwd";
  RunResult want = run_under(oracle, args);
  RunResult got = run_under(shim.path, args);
  CHECK(want.err == "bwrap: Only the last --chdir option will take effect\n");
  CHECK(got.err == want.err);
  CHECK(got.out == want.out);
  CHECK(got.out == "/\n");
  CHECK(got.exit_code == 0);
  // --level-prefix is newer than the oracle: warn() logs at LOG_WARNING.
  RunResult leveled = run_under(shim.path, "--level-prefix " + args);
  CHECK(leveled.err == "<4>bwrap: Only the last --chdir option will take effect\n");
  CHECK(leveled.exit_code == 0);
}

TEST_CASE("bwrap manual: overlay and symlink errors in bwrap 0.11's words", "[bwrap][manual][errors]") {
  require_userns();
  BwrapShim shim;
  TempDir ws("ov");
  make_dir(ws / "low");
  const std::string ran = ws / "ran";
  const std::string low = shell_quote(ws / "low");
  struct Case {
    std::string name, args, err;  // name: stable across passes (the workspace is not)
  };
  const std::string dangling =
      "bwrap: --overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or "
      "--ro-overlay\n";
  const std::vector<Case> cases{
      {"--overlay without --overlay-src", "--overlay /a /b /mnt", "bwrap: --overlay requires at least one --overlay-src\n"},
      {"--overlay-src then --tmpfs", fmt::format("--overlay-src {} --tmpfs /mnt", low), dangling},
      {"two --overlay-src then --dir", fmt::format("--overlay-src {} --overlay-src {} --dir /mnt", low, low), dangling},
      {"--symlink onto another link", "--tmpfs /tmp --symlink a /tmp/l --symlink b /tmp/l", "bwrap: Can't make symlink at /tmp/l: existing destination is a\n"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      RunResult r = run_under(shim.path, fmt::format("--ro-bind / / {} touch {}", c.args, shell_quote(ran)));
      CHECK(r.exit_code == 1);
      CHECK(r.err == c.err);
      CHECK_FALSE(file_exists(ran));
    }
  }
  SECTION("a dangling --overlay-src at the end") {
    RunResult r = run_under(shim.path, fmt::format("--ro-bind / / --overlay-src {}", low));
    CHECK(r.exit_code == 1);
    CHECK(r.err == dangling);
  }
}

TEST_CASE("bwrap manual: --seccomp with a program the kernel refuses", "[bwrap][manual][errors]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("bpf");
  write_file(ws / "garbage", "garbage!");        // one instruction, not a valid one
  write_file(ws / "empty", "");                  // no instruction at all
  write_file(ws / "odd", "abc");                 // not whole instructions
  write_file(ws / "two", std::string(16, '\xff'));
  const std::string ran = ws / "ran";
  for (const char* name : {"garbage", "empty", "odd", "two"}) {
    for (const char* opt : {"--seccomp", "--add-seccomp-fd"}) {
      DYNAMIC_SECTION(opt << " " << name) {
        const std::string args =
            fmt::format("--ro-bind / / {} 3 touch {} 3<{}", opt, shell_quote(ran), shell_quote(ws / name));
        RunResult want = run_under(oracle, args);
        RunResult got = run_under(shim.path, args);
        CHECK(want.exit_code == 1);
        CHECK(got.exit_code == want.exit_code);
        CHECK(got.err == want.err);
        CHECK(got.out == want.out);
        CHECK_FALSE(file_exists(ran));
      }
    }
  }
  SECTION("--add-seccomp-fd naming the same fd twice: bwrap has read and closed it after the first") {
    const std::string args = fmt::format("--ro-bind / / --add-seccomp-fd 3 --add-seccomp-fd 3 touch {} 3<{}",
                                         shell_quote(ran), shell_quote(ws / "two"));
    RunResult want = run_under(oracle, args);
    RunResult got = run_under(shim.path, args);
    CHECK(want.exit_code == 1);
    CHECK(got.exit_code == want.exit_code);
    CHECK(got.err == "bwrap: Can't read seccomp data: Bad file descriptor\n");
    CHECK(got.err == want.err);
    CHECK_FALSE(file_exists(ran));
  }
  SECTION("--seccomp twice: bwrap's warning, then the last one's verdict") {
    const std::string args = fmt::format("--ro-bind / / --seccomp 3 --seccomp 4 touch {} 3<{} 4<{}", shell_quote(ran),
                                         shell_quote(ws / "odd"), shell_quote(ws / "empty"));
    RunResult want = run_under(oracle, args);
    RunResult got = run_under(shim.path, args);
    CHECK(want.err.starts_with("bwrap: Only the last --seccomp option will take effect\nbwrap: Unable to set up"));
    CHECK(got.exit_code == want.exit_code);
    CHECK(got.err == want.err);
    CHECK_FALSE(file_exists(ran));
  }
}

// The lock holder is a new process in the caller's PID namespace, between
// nsrun and the command: the command must not reach it, and must not
// outlive it.
TEST_CASE("bwrap manual: the --lock-file holder is out of the command's reach", "[bwrap][manual][lock][escape]") {
  require_userns();
  BwrapShim shim;
  TempDir ws("holder");
  const std::string lock = ws / "lock";
  write_file(lock, "");

  SECTION("not dumpable: no /proc/PPID/root, fd links or mem for the command") {
    // (Root may list the fd numbers: a non-dumpable process's /proc files
    // belong to root. Following them needs ptrace access, which it lacks.)
    RunResult r = run_under(
        shim.path, fmt::format("--ro-bind / / --dev /dev --unshare-user --lock-file {} sh -c '"
                               "cat /proc/$PPID/comm; readlink /proc/$PPID/root 2>/dev/null || echo root-refused; "
                               "readlink /proc/$PPID/fd/0 2>/dev/null || echo fd0-refused; n=0; "
                               "for f in /proc/$PPID/fd/[0-9]*; do cat \"$f\" </dev/null >/dev/null 2>&1 && n=$((n+1)); done; "
                               "echo fds-opened=$n; head -c1 /proc/$PPID/mem >/dev/null 2>&1 || echo mem-refused'",
                               shell_quote(lock)));
    INFO("stderr: " << r.err);
    CHECK(r.out == "bwrap\nroot-refused\nfd0-refused\nfds-opened=0\nmem-refused\n");
    CHECK(r.exit_code == 0);
  }
  SECTION("killing nsrun ends the command and releases the lock") {
    const std::string marker = unique_token("lock-holder");
    Process sandbox({"/bin/sh", "-c",
                     fmt::format("exec {} --ro-bind / / --lock-file {} sh -c 'echo started; while :; do sleep 1; done' {}",
                                 shell_quote(shim.path), shell_quote(lock), marker)});
    sandbox.wait_for_line("started");
    REQUIRE(processes_with_marker(marker).size() >= 2);  // nsrun, the holder, the command
    CHECK(lock_state(lock, F_GETLK).type == F_RDLCK);
    sandbox.signal(SIGKILL);  // nsrun itself: the holder dies with it, the command with the holder
    CHECK(eventually([&] { return processes_with_marker(marker).empty(); }));
    CHECK(eventually([&] { return lock_state(lock, F_GETLK).type == F_UNLCK; }));
  }
}
