// The bwrap dialect under the command lines real harnesses build
// (/work/shared/CALLERS.md: sandbox-runtime, Codex, omnigent, the
// deepseek-harness ladder, flatpak-style recursion), and its security
// floor: a bwrap command line gets bwrap's namespaces or bwrap's error,
// never the Landlock rung. Each shape runs under Debian's bwrap (the oracle)
// and under nsrun called as `bwrap`; stdout, the exit status and the files
// left on the host must agree, and the effects each harness relies on are
// checked on the host.
#include "bwrap_oracle.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// `nsrun-probe outer OUTER... -- ARGV...`: a hostile host around one run.
RunResult outer(const std::vector<std::string>& outer_opts, const std::vector<std::string>& argv,
                const RunOptions& opts = {}) {
  std::vector<std::string> all{probe_path(), "outer"};
  all.insert(all.end(), outer_opts.begin(), outer_opts.end());
  all.push_back("--");
  all.insert(all.end(), argv.begin(), argv.end());
  return run(all, opts);
}

std::vector<std::string> split(const std::string& args) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < args.size()) {
    const std::size_t space = args.find(' ', at);
    if (space != at) out.push_back(args.substr(at, space - at));
    if (space == std::string::npos) break;
    at = space + 1;
  }
  return out;
}

std::size_t entries(const std::string& dir) {
  std::size_t n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
    ::closedir(d);
  }
  return n;
}

std::string own_ns(const char* kind) { return read_link(fmt::format("/proc/self/ns/{}", kind)); }

}  // namespace

TEST_CASE("bwrap dialect: never the Landlock rung; a refused namespace is bwrap's error and nothing runs",
          "[bwrap][callers][security]") {
  require_userns();
  require_oracle();
  TempDir ws("ws");
  const std::string marker = ws / "ran";
  // Every shape a harness builds, each with a user namespace (the one the
  // outer filter refuses). As root a line without one makes none, and the
  // filter has nothing to refuse.
  const std::vector<std::string> lines{
      "--ro-bind / / --unshare-user",
      "--ro-bind / / --proc /proc --unshare-user",
      "--ro-bind / / --unshare-user --unshare-net",
      "--unshare-all --ro-bind / / --dev /dev --proc /proc",
      "--unshare-all --share-net --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind {ws} {ws} --unshare-pid",
      "--new-session --die-with-parent --unshare-net --ro-bind / / --bind {ws} {ws} --dev /dev --unshare-pid "
      "--unshare-user --cap-drop ALL --proc /proc",
      "--as-pid-1 --new-session --die-with-parent --ro-bind / / --dev /dev --bind {ws} {ws} --unshare-user "
      "--unshare-pid --unshare-ipc --unshare-net --proc /proc --cap-drop ALL",
      "--unshare-user-try --ro-bind / /",
  };
  for (const std::string& shape : lines) {
    // Named before the workspace is filled in: a section's name must be
    // the same each time Catch2 enters the test case.
    std::string line = shape;
    for (std::size_t at; (at = line.find("{ws}")) != std::string::npos;) line.replace(at, 4, ws.path());
    DYNAMIC_SECTION(shape) {
      std::vector<std::string> tail = split(line);
      tail.insert(tail.end(), {"--", probe_path(), "write", marker, "ran"});
      std::vector<std::string> ours{nsrun_path(), "bwrap"};
      ours.insert(ours.end(), tail.begin(), tail.end());
      std::vector<std::string> theirs{oracle};
      theirs.insert(theirs.end(), tail.begin(), tail.end());

      RunResult want = outer({"--deny-userns"}, theirs, at(ws));
      CHECK_FALSE(file_exists(marker));
      // Nothing is left in TMPDIR (where the Landlock rung makes its own).
      TempDir tmp("tmp");
      RunOptions opts = at(ws);
      opts.env = {"TMPDIR=" + tmp.path()};
      RunResult got = outer({"--deny-userns"}, ours, opts);
      CHECK(entries(tmp.path()) == 0);
      INFO("bwrap: " << want.err << "nsrun: " << got.err);
      CHECK(want.exit_code == 1);
      CHECK(got.exit_code == 1);
      CHECK_FALSE(file_exists(marker));
      CHECK(count_lines(got.err) == 1);
      // Debian words the end of this message its own way; the start is
      // bwrap's (0.11's whole text for nsrun).
      CHECK(want.err.starts_with("bwrap: No permissions to create"));
      CHECK(got.err ==
            "bwrap: No permissions to create a new namespace, likely because the kernel does not allow "
            "non-privileged user namespaces. On e.g. debian this can be enabled with "
            "'sysctl kernel.unprivileged_userns_clone=1'.\n");
      ::unlink(marker.c_str());
    }
  }
}

TEST_CASE("bwrap dialect: a refused fresh procfs is bwrap's message, exit 1, nothing runs",
          "[bwrap][callers][security][proc]") {
  require_userns();
  require_oracle();
  TempDir ws("ws");
  const std::string marker = ws / "ran";
  // /proc masked the way container runtimes mask it: the kernel refuses a
  // new procfs in a user namespace ("mount too revealing").
  const std::vector<std::string> host{is_root() ? "--mountns" : "--userns", "--mask", "/proc/timer_list"};
  const std::vector<std::string> tail{"--ro-bind", "/", "/", "--unshare-user", "--unshare-pid", "--proc", "/proc",
                                      "--", probe_path(), "write", marker, "ran"};
  std::vector<std::string> ours{nsrun_path(), "bwrap"}, theirs{oracle};
  ours.insert(ours.end(), tail.begin(), tail.end());
  theirs.insert(theirs.end(), tail.begin(), tail.end());
  RunResult want = outer(host, theirs, at(ws));
  RunResult got = outer(host, ours, at(ws));
  INFO("bwrap: " << want.err << "nsrun: " << got.err);
  CHECK(want.exit_code == 1);
  CHECK(got.exit_code == 1);
  CHECK(got.err == "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n");
  CHECK(got.err == want.err);
  CHECK_FALSE(file_exists(marker));
}

TEST_CASE("bwrap dialect: --unshare-user gives a user namespace of its own, never the host's",
          "[bwrap][callers][security]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string host_user = own_ns("user");
  REQUIRE_FALSE(host_user.empty());
  for (const char* net : {"", " --unshare-net"}) {
    const std::string args = fmt::format("--ro-bind / / --proc /proc --unshare-user{} -- readlink /proc/self/ns/user", net);
    RunResult want = run_bwrap(oracle, args);
    RunResult got = run_bwrap(shim.path, args);
    INFO(args << "\nnsrun: " << got.out << got.err);
    CHECK(want.exit_code == 0);
    CHECK(got.exit_code == 0);
    CHECK(got.out.starts_with("user:["));
    CHECK(chomp(got.out) != host_user);
  }
}

TEST_CASE("bwrap dialect: --proc without a PID namespace binds the caller's /proc, as bwrap",
          "[bwrap][callers][proc]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string host_pid = own_ns("pid");
  for (const char* user : {"", "--unshare-user "}) {
    RunResult r = same_as_oracle(
        shim.path, fmt::format("--ro-bind / / {}--proc /proc -- sh -c 'readlink /proc/self/ns/pid; test -d /proc/1 && echo "
                          "init; awk \"\\$5 == \\\"/proc\\\" {{print \\$9}}\" /proc/self/mountinfo | sort -u'",
                          user));
    CHECK(r.out == host_pid + "\ninit\nproc\n");
  }
  // With its own PID namespace, a fresh one: only the sandbox's processes.
  RunResult own = same_as_oracle(shim.path, "--ro-bind / / --unshare-pid --proc /proc -- sh -c 'test -d /proc/1 && echo one'");
  CHECK(own.out == "one\n");
  RunResult ns = run_bwrap(shim.path, "--ro-bind / / --unshare-pid --proc /proc -- readlink /proc/self/ns/pid");
  CHECK(ns.exit_code == 0);
  CHECK(ns.out.starts_with("pid:["));
  CHECK(chomp(ns.out) != host_pid);
}

TEST_CASE("bwrap dialect: the root is the top of its mount namespace whatever the option order",
          "[bwrap][callers][mount]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  const std::string sock = ws / "x.sock";
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);
  }
  write_file(ws / "data", "data\n");
  // A nested user namespace works, and mountinfo shows one mount on "/": the
  // root itself, first, with nothing stacked above or below it.
  const std::string check =
      "sh -c 'unshare -U true && echo nested; awk \"NR == 1 {print \\$5}\" /proc/self/mountinfo; "
      "awk \"\\$4 == \\\"/\\\" && \\$5 == \\\"/\\\"\" /proc/self/mountinfo | wc -l'";
  struct Case {
    std::string name, before;
  };
  const std::vector<Case> cases{
      {"--dir before the root bind (fast path)", "--dir /foo --ro-bind / /"},
      {"a socket bind before the root bind (sandbox-runtime)", fmt::format("--bind {0} {0} --ro-bind / /", sock)},
      {"a tmpfs on / before the root bind", "--tmpfs / --ro-bind / /"},
      {"two root binds", "--ro-bind / / --ro-bind / /"},
      {"the staging path: data bound after the root", fmt::format("--dir /foo --ro-bind / / --ro-bind-data 3 {}/data", ws.path())},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      RunResult r = same_as_oracle(
          shim.path, fmt::format("{} --dev /dev --unshare-user --unshare-pid --proc /proc -- {} 3<{}", c.before, check,
                            ws / "data"));
      CHECK(r.out == "nested\n/\n1\n");
    }
  }
  SECTION("the host's / bound elsewhere shows the host, not the sandbox's root") {
    RunResult r = same_as_oracle(
        shim.path, fmt::format("--tmpfs /tmp --bind / /host --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib "
                          "/lib --symlink usr/lib64 /lib64 --unshare-user -- sh -c 'test -d /host{} && echo host; "
                          "unshare -U true && echo nested'",
                          ws.path()));
    CHECK(r.out == "host\nnested\n");
  }
  SECTION("native mode: --allow-nested-userns still lets the command make one") {
    RunResult r = nsrun({"--allow-nested-userns", "--", "unshare", "-U", "true"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("bwrap callers: sandbox-runtime's shape", "[bwrap][callers]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  TempDir outside("outside");
  const std::string allowed = ws / "allowed";
  make_dir(allowed);
  // The proxy socket, listened on by the host: the only way out.
  const std::string sock = ws / "proxy.sock";
  int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  REQUIRE(server >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(server, 8) == 0);
  ::chmod(sock.c_str(), 0777);
  const bool python = ::access("/usr/bin/python3", X_OK) == 0;

  // The helper sandbox-runtime runs inside (apply-seccomp): it makes a user
  // namespace, where it may load a seccomp filter (here: mkdir and mkdirat
  // refused with EPERM), then execs the command, which finds it loaded.
  // Written in Python with ctypes, for want of a C compiler at test time.
  const bool x86_64 = run({"uname", "-m"}).out == "x86_64\n";
  const std::string helper = ws / "apply-seccomp.py";
  write_file(helper,
             "import ctypes, os, struct, sys\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             "if libc.unshare(0x10000000) != 0: sys.exit('unshare: %d' % ctypes.get_errno())\n"
             "def ins(code, jt, jf, k): return struct.pack('HBBI', code, jt, jf, k)\n"
             "EPERM = 0x00050001\n"
             "prog = (ins(0x20, 0, 0, 4) + ins(0x15, 1, 0, 0xc000003e) + ins(0x06, 0, 0, 0) +\n"
             "        ins(0x20, 0, 0, 0) + ins(0x15, 0, 1, 83) + ins(0x06, 0, 0, EPERM) +\n"
             "        ins(0x15, 0, 1, 258) + ins(0x06, 0, 0, EPERM) + ins(0x06, 0, 0, 0x7fff0000))\n"
             "buf = ctypes.create_string_buffer(prog)\n"
             "class Prog(ctypes.Structure): _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]\n"
             "fprog = Prog(len(prog) // 8, ctypes.addressof(buf))\n"
             "if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0: sys.exit('seccomp: %d' % ctypes.get_errno())\n"
             "os.execv(sys.argv[1], sys.argv[1:])\n");
  const std::string probe = shell_quote(probe_path());
  const std::string apply = python && x86_64 ? fmt::format("/usr/bin/python3 {} {} mkdir {}/d", helper, probe, allowed)
                                             : std::string("echo error EPERM");
  const std::string script = fmt::format(
      "unshare -U true && echo userns; {apply}; "
      "{p} write {a}/in yes; {p} write {o}/out no; awk \"NR>2{{print \\$1}}\" /proc/net/dev; {py}",
      fmt::arg("apply", apply), fmt::arg("p", probe), fmt::arg("a", allowed),
      fmt::arg("o", outside.path()),
      fmt::arg("py", python ? fmt::format("/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); "
                                          "s.connect('{}'); s.send(b'ping')\" && echo proxied",
                                          sock)
                            : std::string("echo proxied")));
  const std::string caps = is_root() ? " --cap-drop ALL --cap-add CAP_SETFCAP" : "";
  const std::string ssh = ::access("/etc/ssh/ssh_config.d", F_OK) == 0 ? "--tmpfs /etc/ssh/ssh_config.d " : "";
  const std::string args = fmt::format(
      "--new-session --die-with-parent --unshare-net --bind {s} {s} --setenv HTTP_PROXY http://localhost:3128 "
      "--ro-bind / / --bind {a} {a} {ssh}--dev /dev --unshare-pid --unshare-user{c} "
      "--proc /proc --unsetenv SRT_ALLOW_NESTED_USERNS -- /bin/bash -c {cmd}",
      fmt::arg("s", sock), fmt::arg("a", allowed), fmt::arg("c", caps), fmt::arg("ssh", ssh), fmt::arg("cmd", shell_quote(script)));
  RunResult r = same_as_oracle(shim.path, args, at(ws));
  CHECK(r.exit_code == 0);
  CHECK(r.out == "userns\nerror EPERM\nok\nerror EROFS\nlo:\nproxied\n");
  CHECK(read_file(allowed + "/in") == "yes");
  CHECK_FALSE(file_exists(allowed + "/d"));
  CHECK_FALSE(file_exists(outside / "out"));
  ::unlink((allowed + "/in").c_str());
  if (python) {
    // One connection per run (the oracle's and ours), each with its ping.
    for (int i = 0; i < 2; ++i) {
      int conn = ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
      REQUIRE(conn >= 0);
      char buf[8] = {};
      CHECK(::read(conn, buf, sizeof buf) == 4);
      CHECK(std::string(buf) == "ping");
      ::close(conn);
    }
  }
  ::close(server);
}

TEST_CASE("bwrap callers: Codex's preflight and run", "[bwrap][callers]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  make_dir(ws / ".git");
  write_file(ws / ".git/HEAD", "ref: refs/heads/main\n");
  TempDir daemon("daemon");  // /tmp/codex-daemon-N, outside the workspace

  SECTION("preflight") {
    std::string bind_dirs;
    for (const char* d : {"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"})
      if (::access(d, F_OK) == 0) bind_dirs += fmt::format(" --ro-bind {0} {0}", d);
    RunResult r = same_as_oracle(
        shim.path, fmt::format("--as-pid-1 --new-session --die-with-parent --tmpfs / --dev /dev{} --unshare-user "
                          "--unshare-pid --unshare-ipc --unshare-net --proc /proc --cap-drop ALL -- /usr/bin/true",
                          bind_dirs));
    CHECK(r.exit_code == 0);
  }
  SECTION("the run: a read-only .git inside a writable root, no capabilities, the command as PID 1") {
    const std::string probe = shell_quote(probe_path());
    const std::string script = fmt::format(
        "echo $$; {p} write {w}/out yes; {p} write {w}/.git/x no; ls -A {w}/.git | wc -l; {p} write {d}/x no; "
        "grep -E \"^Cap(Inh|Prm|Eff|Bnd|Amb)\" /proc/self/status",
        fmt::arg("p", probe), fmt::arg("w", ws.path()), fmt::arg("d", daemon.path()));
    const std::string args = fmt::format(
        "--as-pid-1 --new-session --die-with-parent --ro-bind / / --dev /dev --perms 000 --tmpfs {d} "
        "--remount-ro {d} --bind {w} {w} --perms 555 --tmpfs {w}/.git --remount-ro {w}/.git --unshare-user "
        "--unshare-pid --unshare-ipc --unshare-net --proc /proc --cap-drop ALL -- sh -c {s}",
        fmt::arg("w", ws.path()), fmt::arg("d", daemon.path()), fmt::arg("s", shell_quote(script)));
    RunResult r = same_as_oracle(shim.path, args, at(ws));
    CHECK(r.exit_code == 0);
    CHECK_FALSE(file_exists(daemon / "x"));
    CHECK(r.out.starts_with("1\nok\nerror EROFS\n0\n"));
    CHECK(r.out.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(r.out.find("CapBnd:\t0000000000000000") != std::string::npos);
    CHECK(read_file(ws / "out") == "yes");
    CHECK(read_file(ws / ".git/HEAD") == "ref: refs/heads/main\n");
    CHECK_FALSE(file_exists(ws / ".git/x"));
  }
  SECTION("--argv0 (newer than the oracle): the command sees the name given") {
    RunResult r = run_bwrap(shim.path, "--ro-bind / / --argv0 codex-linux-sandbox -- /bin/sh -c 'echo $0'");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "codex-linux-sandbox\n");
  }
}

TEST_CASE("bwrap callers: omnigent's shape, with a fresh /proc and with the host's /proc bound",
          "[bwrap][callers]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  TempDir outside("outside");
  const std::string probe = shell_quote(probe_path());
  const std::string script =
      fmt::format("pwd; {p} write {w}/in yes; {p} write {o}/out no; {p} write /tmp/t tmp; test -r /proc/self/status "
                  "&& echo proc",
                  fmt::arg("p", probe), fmt::arg("w", ws.path()), fmt::arg("o", outside.path()));
  for (const char* proc : {"--proc /proc", "--bind /proc /proc"}) {
    DYNAMIC_SECTION(proc) {
      const std::string args = fmt::format(
          "--ro-bind / / --dev /dev {} --tmpfs /tmp --bind {w} {w} --unshare-user --unshare-pid --die-with-parent "
          "--new-session --chdir {w} -- sh -c {s}",
          proc, fmt::arg("w", ws.path()), fmt::arg("s", shell_quote(script)));
      RunResult r = same_as_oracle(shim.path, args);
      CHECK(r.out == fmt::format("{}\nok\nerror EROFS\nok\nproc\n", ws.path()));
      CHECK(read_file(ws / "in") == "yes");
      CHECK_FALSE(file_exists(outside / "out"));
      ::unlink((ws / "in").c_str());
    }
  }
}

TEST_CASE("bwrap callers: the deepseek-harness ladder's acceptance checks", "[bwrap][callers]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  TempDir outside("outside");
  const std::string host_pid = own_ns("pid");
  const std::string probe = shell_quote(probe_path());
  const std::string script = fmt::format(
      "test \"$(readlink /proc/self/ns/pid)\" != {hp} && echo own-pidns; "
      "{p} write /proc/1/root{o}/via-root no; "
      "sleep 1000 & c=$!; test -d /proc/$c && echo listed; kill $c; wait $c; echo killed=$?; "
      "{p} write {o}/out no; {p} write {w}/in yes",
      fmt::arg("hp", shell_quote(host_pid)), fmt::arg("p", probe), fmt::arg("o", outside.path()),
      fmt::arg("w", ws.path()));
  const std::string args = fmt::format(
      "--unshare-all --share-net --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind {w} {w} --unshare-pid "
      "--die-with-parent --chdir {w} -- sh -c {s}",
      fmt::arg("w", ws.path()), fmt::arg("s", shell_quote(script)));
  RunResult want = run_bwrap(oracle, args);
  ::unlink((ws / "in").c_str());
  RunResult got = run_bwrap(shim.path, args);
  INFO("bwrap: " << want.out << want.err << "\nnsrun: " << got.out << got.err);
  CHECK(got.exit_code == 0);
  CHECK(got.exit_code == want.exit_code);
  // bwrap's PID 1 is dumpable, nsrun's is not: the write through its root
  // is refused either way (read-only there, no access here).
  CHECK(want.out.starts_with("own-pidns\nerror E"));
  CHECK(got.out.starts_with("own-pidns\nerror E"));
  const std::string rest = "listed\nkilled=143\nerror EROFS\nok\n";
  CHECK(got.out.ends_with(rest));
  CHECK(want.out.ends_with(rest));
  CHECK(read_file(ws / "in") == "yes");
  CHECK_FALSE(file_exists(outside / "out"));
  CHECK_FALSE(file_exists(outside / "via-root"));
}

TEST_CASE("bwrap callers: flatpak-style recursion through /proc/self/exe", "[bwrap][callers][recursion]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string outer_args = "--unshare-user --uid 0 --gid 0 --cap-add ALL --bind / / --bind /proc /proc -- "
                                 "/proc/self/exe";
  SECTION("the same host tree") {
    RunResult r = same_as_oracle(shim.path, outer_args + " --unshare-all --bind / / --bind /proc /proc echo hello");
    CHECK(r.out == "hello\n");
  }
  SECTION("a nested pivot into a new root made of /usr") {
    RunResult r = same_as_oracle(
        shim.path, outer_args + " --unshare-all --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 "
                           "--symlink usr/bin /bin --proc /proc --dev /dev -- sh -c 'ls /; echo hello'");
    CHECK(r.out == "bin\ndev\nlib\nlib64\nproc\nusr\nhello\n");
  }
  SECTION("called as `nsrun bwrap`") {
    RunResult r = nsrun({"bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--bind", "/", "/",
                         "--bind", "/proc", "/proc", "--", "/proc/self/exe", "--unshare-all", "--bind", "/", "/",
                         "--bind", "/proc", "/proc", "echo", "hello"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "hello\n");
  }
  SECTION("native options through /proc/self/exe stay native") {
    RunResult r = nsrun({"--", "/proc/self/exe", "--version"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.starts_with("nsrun "));
  }
}
