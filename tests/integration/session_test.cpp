// Sessions (docs/sessions.md): one sandbox, many commands. Each test makes
// its own runtime and state directories (XDG_RUNTIME_DIR, XDG_STATE_HOME)
// and its own workspace, starts a session there and asserts what the host
// sees: exit statuses and output of `nsrun exec`, the control socket's
// mode, which host processes are left after stop, a SIGKILL of the
// session's nsrun and the idle timeout, and that a command of the session
// reaches neither the control socket nor anything of the host beyond what
// a one-shot launch with the same options reaches.
#include "harness.hpp"
#include "session_support.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

bool gone(pid_t pid) { return !file_exists(fmt::format("/proc/{}", pid)); }

}  // namespace

TEST_CASE("session: exec runs commands in one sandbox with the caller's stdio and a launch's exit codes",
          "[session]") {
  require_userns();
  Session s;
  require_started(s.start());
  RunResult r = s.exec({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(s.exec({"cat"}, {}, "from stdin").out == "from stdin");
  CHECK(s.exec({"sh", "-c", "kill -TERM $$"}).exit_code == 128 + SIGTERM);
  RunResult missing = s.exec({"no-such-command-here"});
  CHECK(missing.exit_code == 127);
  CHECK(missing.err.find("no-such-command-here") != std::string::npos);
  // One sandbox: its private /tmp and its processes are the session's.
  CHECK(s.exec({"sh", "-c", "echo kept > /tmp/f"}).exit_code == 0);
  CHECK(s.exec({"cat", "/tmp/f"}).out == "kept\n");
  // --cwd and --env.
  make_dir(s.ws / "sub");
  CHECK(s.exec({"pwd"}, {"--cwd", "sub"}).out == s.ws / "sub" + "\n");
  CHECK(s.exec({"sh", "-c", "echo $A"}, {"--env", "A=b c"}).out == "b c\n");
  // Writes to the workspace reach the host (direct mode).
  CHECK(s.exec({"sh", "-c", "echo w > written"}).exit_code == 0);
  CHECK(read_file(s.ws / "written") == "w\n");

  RunResult list = s.run_nsrun({"session", "list", "--json"});
  CHECK(list.out.find("\"name\":\"" + s.name + "\"") != std::string::npos);
  CHECK(s.run_nsrun({"session", "start", s.name}).exit_code == 125);  // the name is taken
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  CHECK(!file_exists(s.socket()));
  CHECK(s.run_nsrun({"session", "list", "--json"}).out == "[]\n");
  RunResult after = s.exec({"true"});
  CHECK(after.exit_code == 125);
  CHECK(after.err.find("no session named") != std::string::npos);
}

TEST_CASE("session: the control socket is the caller's alone", "[session]") {
  require_userns();
  Session s;
  require_started(s.start());
  struct stat st{};
  REQUIRE(::lstat(s.socket().c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_uid == ::geteuid());
  REQUIRE(::stat((s.dirs / "run" + "/nsrun/sessions").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("session: the Landlock rung refuses sessions, saying why", "[session]") {
  Session s;
  RunResult r = s.start({"--backend", "landlock"});
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("Landlock rung refuses sessions") != std::string::npos);
  CHECK(!file_exists(s.socket()));
  RunResult bad = s.run_nsrun({"session", "start", "../x"});
  CHECK(bad.exit_code == 125);
  CHECK(s.run_nsrun({"session", "start", s.name, "--", "true"}).exit_code == 125);
  CHECK(s.run_nsrun({"--idle-timeout", "1s", "--", "true"}).exit_code == 125);
}

TEST_CASE("attack: a command of the session reaches neither the control socket nor the logs", "[session]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  Session s;
  require_started(s.start());
  const std::string attack = fmt::format(R"PY(
import os, socket
got = []
for path in ('{sock}', '{dir}' + '/' + '{name}' + '.sock'):
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.connect(path)
        c.send(b'{{"op":"jobs"}}')
        got.append('connected ' + path + ' ' + repr(c.recv(100)))
    except OSError as e:
        pass
for d in ('{dir}', '{state}'):
    try:
        names = os.listdir(d)
        if names: got.append('listed ' + d + ' ' + repr(names))
    except OSError:
        pass
# PID 1 holds the socketpair to nsrun: not reachable either.
for n in range(64):
    try:
        os.readlink('/proc/1/fd/%d' % n); got.append('pid1 fd %d' % n)
    except OSError:
        pass
print('got', got)
)PY",
                                         fmt::arg("sock", s.socket()), fmt::arg("dir", s.dirs / "run" + "/nsrun/sessions"),
                                         fmt::arg("name", s.name), fmt::arg("state", s.dirs / "state" + "/nsrun/sessions"));
  RunResult bg = s.exec({"sleep", "1000"}, {"--background"});
  REQUIRE(bg.exit_code == 0);
  RunResult r = s.exec({"/usr/bin/python3", "-I", "-c", attack});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "got []\n");
}

TEST_CASE("attack: an exec'd command holds nothing of the host (fds, cwd, a joining process)", "[session]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  Session s;
  require_started(s.start());
  // Every process it can see is PID 1 (not dumpable) or one of its own;
  // no fd beyond stdio; its cwd and root are the sandbox's.
  const std::string probe = R"PY(
import os
fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))
print('fds', fds[:3])
print('extra', [os.readlink('/proc/self/fd/%d' % f) for f in fds[3:] if os.path.exists('/proc/self/fd/%d' % f)])
me = os.getpid()
others = []
for p in os.listdir('/proc'):
    if not p.isdigit() or int(p) in (1, me): continue
    try:
        exe = os.readlink('/proc/%s/exe' % p)
    except OSError as e:
        exe = 'unreadable'
    others.append(exe)
print('others', others)
for l in ('exe', 'cwd', 'root'):
    try:
        os.readlink('/proc/1/' + l); print('reached /proc/1/' + l)
    except OSError:
        pass
print('cwd', os.getcwd())
)PY";
  RunResult r = s.exec({"/usr/bin/python3", "-I", "-c", probe});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == fmt::format("fds [0, 1, 2]\nextra []\nothers []\ncwd {}\n", s.ws.path()));
}

TEST_CASE("session: protected paths, hidden credentials and egress are a one-shot launch's, for every exec",
          "[session]") {
  require_userns();
  Session s;
  make_dir(s.ws / ".git");
  write_file(s.ws / ".git/config", "[core]\n");
  make_dir(s.dirs / "home/.ssh", 0700);
  write_file(s.dirs / "home/.ssh/id_rsa", "SECRET-KEY\n", 0600);
  require_started(s.start({"--network", "none"}));
  struct Case {
    std::vector<std::string> command;
  };
  const std::vector<std::vector<std::string>> cases = {
      {"sh", "-c", "echo x >> .git/config"},
      {"sh", "-c", "cat \"$HOME/.ssh/id_rsa\""},
      {"sh", "-c", "echo ok > allowed && cat allowed"},
      {"sh", "-c", "echo x > /etc/nsrun-session-test"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(join(c)) {
      RunResult in_session = s.exec(c);
      std::vector<std::string> one_shot{"--network", "none", "--"};
      one_shot.insert(one_shot.end(), c.begin(), c.end());
      RunResult launch = s.run_nsrun(one_shot);
      CHECK(in_session.exit_code == launch.exit_code);
      CHECK(in_session.out == launch.out);
      CHECK(in_session.out.find("SECRET") == std::string::npos);
    }
  }
  CHECK(read_file(s.ws / ".git/config") == "[core]\n");
  CHECK(!file_exists("/etc/nsrun-session-test"));
  // --network none: no interface but loopback (/proc/net is the reader's
  // network namespace's).
  CHECK(s.exec({"sh", "-c", "grep -c : /proc/net/dev"}).out == "1\n");
}

TEST_CASE("attack: nothing of a session is left after stop, a SIGKILL of its nsrun, or its idle timeout",
          "[session]") {
  require_userns();
  enum class End { stop, sigkill, idle };
  for (End end : {End::stop, End::sigkill, End::idle}) {
    DYNAMIC_SECTION((end == End::stop ? "stop" : end == End::sigkill ? "SIGKILL" : "idle timeout")) {
      Session s;
      const std::string token = unique_token("left");
      std::vector<std::string> extra;
      if (end == End::idle) extra = {"--idle-timeout", "500ms"};
      require_started(s.start(extra));
      const pid_t host = s.host_pid();
      // A background job that detaches again and ignores SIGTERM and SIGHUP.
      const std::string sleeper = "sh -c \"sleep 1000; : " + token + "\"";
      const std::string stubborn = "trap '' TERM HUP; (trap '' TERM HUP; setsid " + sleeper + " & " + sleeper +
                                   ") & " + sleeper;
      REQUIRE(s.exec({"sh", "-c", stubborn}, {"--background"}).exit_code == 0);
      REQUIRE(eventually([&] { return processes_with_marker(token).size() >= 3; }));
      if (end == End::stop) {
        CHECK(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
        // stop returns once everything has ended.
        CHECK(processes_with_marker(token).empty());
      } else if (end == End::sigkill) {
        REQUIRE(::kill(host, SIGKILL) == 0);
        CHECK(eventually([&] { return processes_with_marker(token).empty(); }));
      } else {
        CHECK(eventually([&] { return processes_with_marker(token).empty() && gone(host); }, 10s));
        CHECK(!file_exists(s.socket()));
      }
      CHECK(eventually([&] { return gone(host); }));
    }
  }
}

TEST_CASE("session: background jobs, their bounded logs, jobs and kill", "[session]") {
  require_userns();
  Session s;
  require_started(s.start());
  RunResult bg = s.exec({"sh", "-c", "echo started; echo to-stderr >&2; exec sleep 1000"}, {"--background"});
  REQUIRE(bg.exit_code == 0);
  const std::string job = chomp(bg.out);
  CHECK(job == "1");
  CHECK(eventually([&] { return s.run_nsrun({"logs", s.name, job}).out == "started\nto-stderr\n"; }));
  RunResult jobs = s.run_nsrun({"jobs", s.name, "--json"});
  CHECK(jobs.out.find("\"state\":\"running\"") != std::string::npos);
  CHECK(s.run_nsrun({"kill", s.name, job}).exit_code == 0);
  // --follow ends with the job's output.
  RunResult follow = s.run_nsrun({"logs", s.name, job, "--follow"});
  CHECK(follow.exit_code == 0);
  CHECK(follow.out == "started\nto-stderr\n");
  CHECK(eventually([&] {
    return s.run_nsrun({"jobs", s.name, "--json"}).out.find("\"exit\":143") != std::string::npos;
  }));
  CHECK(s.run_nsrun({"kill", s.name, "99"}).exit_code == 125);

  // A job that writes 12 MiB keeps at most 8 MiB of it, the last. A
  // follower that starts while the job writes streams what it sees as it
  // comes (more than is kept); what is kept is read once the job is over.
  RunResult big = s.exec({"sh", "-c", "head -c 12582912 /dev/zero; echo END"}, {"--background"});
  REQUIRE(big.exit_code == 0);
  const std::string big_job = chomp(big.out);
  RunResult followed = s.run_nsrun({"logs", s.name, big_job, "--follow"});
  CHECK(followed.exit_code == 0);
  CHECK(followed.out.ends_with("END\n"));
  RunResult kept = s.run_nsrun({"logs", s.name, big_job});
  CHECK(kept.exit_code == 0);
  CHECK(kept.out.size() <= 8u * 1024 * 1024 + 4);
  CHECK(kept.out.size() >= 4u * 1024 * 1024);
  CHECK(kept.out.ends_with("END\n"));
}

TEST_CASE("session: the Python client of docs/sessions.md runs commands over the socket", "[session]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  const std::string client = std::string(NSRUN_SOURCE_DIR) + "/docs/examples/session_client.py";
  if (::access(client.c_str(), R_OK) != 0) unavailable("source", "the source tree is not readable here");
  Session s;
  require_started(s.start());
  RunOptions o = s.options();
  o.stdin_text = "in";
  RunResult r = run({"/usr/bin/python3", "-I", client, s.name, "sh", "-c", "cat; echo; echo err >&2; exit 4"}, o);
  CHECK(r.exit_code == 4);
  CHECK(r.out == "in\n");
  CHECK(r.err == "err\n");
  RunResult missing = run({"/usr/bin/python3", "-I", client, s.name, "no-such-command-here"}, o);
  CHECK(missing.exit_code == 127);
  RunResult jobs = run({"/usr/bin/python3", "-I", client, s.name, "--jobs"}, o);
  CHECK(jobs.exit_code == 0);
  CHECK(jobs.out.find("\"argv\": [\"sh\"") != std::string::npos);
}

TEST_CASE("nsrun bench: the session rows run exec in a session of the bench's own, stopped after", "[session]") {
  require_userns();
  Session s;
  RunResult r = s.run_nsrun({"bench", "-n", "3", "--warmup", "1", "--rows", "bare,session"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("nsrun session exec") != std::string::npos);
  CHECK(r.out.find("nsrun session socket") != std::string::npos);
  CHECK(r.out.find("session start failed") == std::string::npos);
  CHECK(s.run_nsrun({"session", "list", "--json"}).out == "[]\n");
}

TEST_CASE("session: --network proxy's rules are a one-shot launch's for every exec", "[session]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  Session s;
  const std::vector<std::string> net{"--network", "proxy", "--allow-host", "allowed.test", "--resolve-host",
                                     "allowed.test=127.0.0.1"};
  require_started(s.start(net));
  // The proxy's answer to a CONNECT: its status line's code.
  const std::string probe = R"PY(
import socket, sys
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall(b'CONNECT ' + sys.argv[1].encode() + b' HTTP/1.1\r\n\r\n')
print(s.recv(4096).split(b'\r\n', 1)[0].split(b' ')[1].decode())
)PY";
  for (const char* target : {"denied.test:443", "allowed.test:9", "169.254.169.254:80"}) {
    DYNAMIC_SECTION(target) {
      RunResult in_session = s.exec({"/usr/bin/python3", "-I", "-c", probe, target});
      std::vector<std::string> one_shot = net;
      one_shot.insert(one_shot.end(), {"--", "/usr/bin/python3", "-I", "-c", probe, target});
      RunResult launch = s.run_nsrun(one_shot);
      INFO(in_session.err << launch.err);
      CHECK(in_session.exit_code == 0);
      CHECK(in_session.out == launch.out);
      if (std::string(target) != "allowed.test:9") CHECK(in_session.out == "403\n");
    }
  }
}

TEST_CASE("session: exec passes the caller's terminal", "[session]") {
  require_userns();
  if (!file_exists("/usr/bin/script")) unavailable("script", "util-linux script is not installed");
  Session s;
  require_started(s.start());
  const std::string cmd = shell_quote(nsrun_path()) + " exec " + s.name +
                          " -- sh -c 'test -t 0 && test -t 1 && test -t 2 && echo on-a-tty'";
  RunResult r = run({"script", "-qec", cmd, "/dev/null"}, s.options());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("on-a-tty") != std::string::npos);
}

TEST_CASE("session: cow mode shares one run layer across execs; it stays after stop for review", "[session]") {
  require_userns();
  Session s;
  RunResult started = s.start({"--workspace-mode", "cow"});
  require_started(started);
  RunResult list = s.run_nsrun({"session", "list", "--json"});
  const auto at = list.out.find("\"run_id\":\"");
  REQUIRE(at != std::string::npos);
  const std::string run_id = list.out.substr(at + 10, list.out.find('"', at + 10) - at - 10);
  CHECK(started.err.find(run_id) != std::string::npos);
  CHECK(s.exec({"sh", "-c", "echo layered > made-in-session"}).exit_code == 0);
  CHECK(s.exec({"cat", "made-in-session"}).out == "layered\n");
  CHECK(!file_exists(s.ws / "made-in-session"));
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  RunResult changes = s.run_nsrun({"changes", run_id});
  INFO(changes.err);
  CHECK(changes.exit_code == 0);
  CHECK(changes.out.find("made-in-session") != std::string::npos);
  CHECK(s.run_nsrun({"commit", run_id}).exit_code == 0);
  CHECK(read_file(s.ws / "made-in-session") == "layered\n");
}
