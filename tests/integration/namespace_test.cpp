// What the namespace rung promises, observed from inside with nsrun-probe and
// checked on the host afterwards: a private PID namespace and procfs, the
// file-effect promise of each mode, and a process without privileges.
#include "harness.hpp"
#include "probe_cmd.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

}  // namespace

TEST_CASE("the command runs in its own PID namespace", "[namespace][pid]") {
  require_userns();
  TempDir ws;
  std::string outside = read_link("/proc/self/ns/pid");
  REQUIRE_FALSE(outside.empty());

  RunResult r = probe_under({}, {"ns", "pid"}, ws);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string inside = chomp(r.out);
  CHECK(inside.starts_with("pid:["));
  CHECK(inside != outside);
}

TEST_CASE("/proc inside lists only the sandbox's processes", "[namespace][proc]") {
  require_userns();
  TempDir ws;

  SECTION("under nsrun's PID 1 the command is PID 2, and nothing else is there") {
    check_probe({}, {"pids"}, ws, 0, "1 2\n");
  }
  SECTION("with --as-pid-1 the command is alone") {
    check_probe({"--as-pid-1"}, {"pids"}, ws, 0, "1\n");
  }
}

TEST_CASE("a host process and its /proc magic links are absent inside", "[namespace][proc]") {
  require_userns();
  TempDir ws;
  // Two host processes: a child started for the purpose, and this test.
  Process sleeper({probe_path(), "sleep-forever", unique_token("host-sleeper")});
  sleeper.wait_for_line("sleeping");

  for (pid_t host_pid : {sleeper.pid(), getpid()}) {
    INFO("host pid " << host_pid);
    // Pids 1 and 2 exist inside; such a host pid would prove nothing.
    REQUIRE(host_pid > 2);
    std::string base = fmt::format("/proc/{}", host_pid);
    std::vector<std::string> paths{base, base + "/root", base + "/fd", base + "/cwd",
                                   base + "/exe"};
    // The control: on the host they are there.
    for (const auto& p : paths) REQUIRE(file_exists(p));

    std::vector<std::string> args{"exists"};
    args.insert(args.end(), paths.begin(), paths.end());
    check_probe({}, args, ws, 0, "no no no no no\n");
  }
}

TEST_CASE("writing through /proc/<pid>/root does not reach the host", "[namespace][proc]") {
  require_userns();
  TempDir ws;
  TempDir host("host");
  Process sleeper({probe_path(), "sleep-forever", unique_token("host-sleeper")});
  sleeper.wait_for_line("sleeping");

  std::vector<std::string> roots{"/proc/1/root", "/proc/self/root",
                                 fmt::format("/proc/{}/root", getpid()),
                                 fmt::format("/proc/{}/root", sleeper.pid())};
  int n = 0;
  for (const auto& root : roots) {
    std::string host_file = host / fmt::format("x{}", n++);
    std::string target = root + host_file;
    INFO("target " << target);
    RunResult r = probe_under({}, {"write", target, "escaped"}, ws);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.out.starts_with("error "));
    CHECK_FALSE(file_exists(host_file));
  }
}

TEST_CASE("read-only mode: no write reaches the host", "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  TempDir host("host");
  write_file(ws / "keep", "original");

  struct Attempt {
    std::vector<std::string> probe;
  };
  std::vector<Attempt> attempts{
      {{"write", ws / "new", "data"}},
      {{"write", ws / "keep", "overwritten"}},
      {{"mkdir", ws / "dir"}},
      {{"unlink", ws / "keep"}},
      {{"write", host / "new", "data"}},
      {{"mkdir", host / "dir"}},
  };
  for (const auto& a : attempts) {
    INFO("nsrun-probe " << join(a.probe));
    check_probe({"--mode", "read-only"}, a.probe, ws, 1, "error EROFS\n");
  }
  CHECK_FALSE(file_exists(ws / "new"));
  CHECK_FALSE(file_exists(ws / "dir"));
  CHECK_FALSE(file_exists(host / "new"));
  CHECK_FALSE(file_exists(host / "dir"));
  REQUIRE(file_exists(ws / "keep"));
  CHECK(read_file(ws / "keep") == "original");
}

TEST_CASE("/tmp inside is writable and private and gone after the run", "[namespace][tmp]") {
  require_userns();
  TempDir ws;
  for (std::string mode : {"read-only", "workspace-write"}) {
    DYNAMIC_SECTION("mode " << mode) {
      std::string name = unique_token("tmp");
      std::string inside = "/tmp/" + name;
      RunResult r = nsrun({"--mode", mode, "--", "sh", "-c",
                           probe_sh("write " + inside + " hello") + " && " +
                               probe_sh("read " + inside)},
                          at(ws));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out == "ok\nhello");
      // Private: the host's /tmp never saw it.
      CHECK_FALSE(file_exists(inside));

      // Gone: the next sandbox starts with an empty /tmp.
      RunResult again = probe_under({"--mode", mode}, {"exists", inside}, ws);
      INFO(again.err);
      CHECK(again.exit_code == 0);
      CHECK(again.out == "no\n");
    }
  }
}

TEST_CASE("workspace-write: the workspace is writable but the rest of the host is not",
          "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  TempDir host("host");

  SECTION("the workspace defaults to the current directory") {
    check_probe({}, {"write", ws / "out", "hello"}, ws, 0, "ok\n");
    REQUIRE(file_exists(ws / "out"));
    CHECK(read_file(ws / "out") == "hello");

    RunResult outside = probe_under({}, {"write", host / "out", "hello"}, ws);
    INFO(outside.err);
    CHECK(outside.exit_code == 1);
    CHECK(outside.out == "error EROFS\n");
    CHECK_FALSE(file_exists(host / "out"));
  }
  SECTION("the mode can be named explicitly") {
    RunResult r = probe_under({"--mode", "workspace-write"}, {"write", ws / "out", "x"}, ws);
    INFO(r.err);
    CHECK(r.out == "ok\n");
    CHECK(file_exists(ws / "out"));
  }
  SECTION("--workspace DIR replaces the current directory") {
    TempDir other("ws2");
    check_probe({"--workspace", other.path()}, {"write", other / "f", "w2"}, ws, 0, "ok\n");
    REQUIRE(file_exists(other / "f"));
    CHECK(read_file(other / "f") == "w2");

    // The current directory is no longer a writable root.
    RunResult cwd = probe_under({"--workspace", other.path()}, {"write", ws / "f", "x"}, ws);
    INFO(cwd.err);
    CHECK(cwd.exit_code == 1);
    CHECK(cwd.out == "error EROFS\n");
    CHECK_FALSE(file_exists(ws / "f"));
  }
}

TEST_CASE("--writable DIR adds a writable root", "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  TempDir extra("extra");
  check_probe({"--writable", extra.path()}, {"write", extra / "f", "data"}, ws, 0, "ok\n");
  REQUIRE(file_exists(extra / "f"));
  CHECK(read_file(extra / "f") == "data");

  // The workspace stays writable beside it.
  RunResult w = probe_under({"--writable", extra.path()}, {"write", ws / "g", "data"}, ws);
  INFO(w.err);
  CHECK(w.out == "ok\n");
  CHECK(file_exists(ws / "g"));
}

TEST_CASE("--ro DIR inside the workspace stays read-only", "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  make_dir(ws / "protected");
  write_file(ws / "protected/file", "original");

  check_probe({"--ro", ws / "protected"}, {"write", ws / "protected/new", "data"}, ws, 1, "error EROFS\n");
  CHECK_FALSE(file_exists(ws / "protected/new"));

  RunResult over = probe_under({"--ro", ws / "protected"},
                               {"write", ws / "protected/file", "overwritten"}, ws);
  INFO(over.err);
  CHECK(over.out == "error EROFS\n");
  CHECK(read_file(ws / "protected/file") == "original");

  // The rest of the workspace is still writable.
  RunResult rest = probe_under({"--ro", ws / "protected"}, {"write", ws / "free", "x"}, ws);
  INFO(rest.err);
  CHECK(rest.out == "ok\n");
  CHECK(file_exists(ws / "free"));
}

TEST_CASE("--hide DIR shows an empty directory", "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  TempDir host("host");
  make_dir(ws / "secret");
  write_file(ws / "secret/key", "in-workspace");
  make_dir(host / "secret");
  write_file(host / "secret/key", "outside");

  for (const std::string& dir : {ws / "secret", host / "secret"}) {
    INFO("hidden " << dir);
    RunResult list = probe_under({"--hide", dir}, {"list", dir}, ws);
    INFO(list.err);
    CHECK(list.exit_code == 0);
    CHECK(list.out == "\n");

    RunResult read = probe_under({"--hide", dir}, {"read", dir + "/key"}, ws);
    INFO(read.err);
    CHECK(read.exit_code == 1);
    CHECK(read.out == "error ENOENT\n");
  }
  // Hiding changes nothing on the host.
  CHECK(read_file(ws / "secret/key") == "in-workspace");
  CHECK(read_file(host / "secret/key") == "outside");
}

TEST_CASE("--tmpfs DIR is an empty private directory", "[namespace][mode]") {
  require_userns();
  TempDir ws("ws");
  make_dir(ws / "scratch");
  write_file(ws / "scratch/old", "host");

  RunResult r = nsrun({"--tmpfs", ws / "scratch", "--", "sh", "-c",
                       probe_sh("write " + ws / "scratch/new" + " x") + " && " +
                           probe_sh("list " + ws / "scratch")},
                      at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ok\nnew\n");
  CHECK_FALSE(file_exists(ws / "scratch/new"));
  CHECK(read_file(ws / "scratch/old") == "host");
}

TEST_CASE("inside every capability is dropped and no_new_privs is set", "[namespace][caps]") {
  require_userns();
  TempDir ws;
  for (bool as_pid_1 : {false, true}) {
    DYNAMIC_SECTION((as_pid_1 ? "--as-pid-1" : "under nsrun's PID 1")) {
      const std::vector<std::string> options = pid1_options(as_pid_1);

      check_probe(options, {"status", "CapEff", "NoNewPrivs"}, ws, 0, "CapEff=0000000000000000 NoNewPrivs=1\n");

      RunResult all = probe_under(options, {"status", "CapInh", "CapPrm", "CapBnd", "CapAmb"}, ws);
      INFO(all.err);
      CHECK(all.exit_code == 0);
      CHECK(all.out ==
            "CapInh=0000000000000000 CapPrm=0000000000000000 CapBnd=0000000000000000 "
            "CapAmb=0000000000000000\n");
    }
  }
}

TEST_CASE("inside the uid and gid are the caller's", "[namespace][ids]") {
  require_userns();
  TempDir ws;
  check_probe({}, {"ids"}, ws, 0, fmt::format("uid={} gid={}\n", getuid(), getgid()));
}

// nsrun creates mount points in a tmpfs it just mounted straight from that
// tmpfs's fd. A later mount reached through a symlink can cover such a
// tmpfs; a bind below it must then land in what covers it, where the
// command sees it.
TEST_CASE("a mount reached through a symlink covers a fresh tmpfs; later binds land on top", "[namespace][mount]") {
  require_userns();
  TempDir ws("ws");
  write_file(ws / "data", "visible\n");
  RunResult r = nsrun({"bwrap", "--ro-bind", "/", "/", "--tmpfs", "/mnt", "--dev", "/mnt/dev", "--symlink",
                       "/mnt/dev", "/mnt/link", "--tmpfs", "/mnt/link", "--ro-bind", ws / "data", "/mnt/dev/data",
                       "--", "sh", "-c", "cat /mnt/dev/data; ls /mnt/dev"},
                      at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // The second tmpfs covers the first, device nodes and all.
  CHECK(r.out == "visible\ndata\n");
}
