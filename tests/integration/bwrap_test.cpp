// The bwrap dialect against the real thing: Debian's bubblewrap, installed
// as a test oracle only, runs the same command line and payload as nsrun
// called as `bwrap`; stdout, exit status and the effects on the host must
// agree. Options newer than the oracle are checked against the manual.
#include "bwrap_oracle.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

struct Case {
  Case(std::string n, std::string a, bool root = false, std::string file = {})
      : name(std::move(n)), args(std::move(a)), root_only(root), host_file(std::move(file)) {}
  std::string name;
  std::string args;       // after the program name; {ws} is the workspace
  bool root_only = false;
  std::string host_file;  // compared after each run when set ({ws}-relative), then removed
};

std::string expand(std::string s, const TempDir& ws) {
  for (std::size_t at; (at = s.find("{ws}")) != std::string::npos;) s.replace(at, 4, ws.path());
  return s;
}

// The same payload and command line under both; stdout, status and the
// host file must match, and the status must be the expected kind.
void differential(const std::vector<Case>& cases) {
  require_userns();
  require_oracle();
  BwrapShim shim;
  for (const auto& c : cases) {
    if (c.root_only && !is_root()) continue;
    DYNAMIC_SECTION(c.name) {
      TempDir ws("ws");
      make_dir(ws / "secret");
      write_file(ws / "secret/key", "hidden\n");
      write_file(ws / "data", "from fd\n");
      write_file(ws / "args", std::string("--ro-bind\0/\0/\0", 10));
      const std::string args = expand(c.args, ws);
      RunResult want = run_bwrap(oracle, args, at(ws));
      std::string want_file = c.host_file.empty() || !file_exists(expand(c.host_file, ws))
                                  ? "(absent)" : read_file(expand(c.host_file, ws));
      if (!c.host_file.empty()) ::unlink(expand(c.host_file, ws).c_str());
      RunResult got = run_bwrap(shim.path, args, at(ws));
      std::string got_file = c.host_file.empty() || !file_exists(expand(c.host_file, ws))
                                 ? "(absent)" : read_file(expand(c.host_file, ws));
      INFO("args: " << args);
      INFO("bwrap stderr: " << want.err);
      INFO("nsrun stderr: " << got.err);
      CHECK(got.out == want.out);
      CHECK(got.exit_code == want.exit_code);
      CHECK(got_file == want_file);
    }
  }
}

}  // namespace

TEST_CASE("bwrap dialect: agent profiles behave as under bwrap", "[bwrap][differential]") {
  const std::string codex =
      "--new-session --die-with-parent --ro-bind / / --dev /dev --bind {ws} {ws} --unshare-user --unshare-pid "
      "--proc /proc --chdir {ws}";
  differential({
      {"codex workspace-write profile",
       codex + " -- sh -c 'echo hi > out.txt; cat out.txt; touch /etc/nsrun-x 2>/dev/null || echo ro; "
               "set -- /proc/[0-9]*; echo $#; pwd; echo $PWD'",
       false, "{ws}/out.txt"},
      {"codex read-only profile with a /tmp",
       "--ro-bind / / --dev /dev --tmpfs /tmp --unshare-user --unshare-pid --proc /proc --chdir {ws} "
       "-- sh -c 'echo x > {ws}/ro.txt 2>/dev/null || echo denied; echo t > /tmp/t && cat /tmp/t'",
       false, "{ws}/ro.txt"},
      {"sandbox-runtime style: network off, tmpfs mask, data file",
       "--unshare-net --ro-bind / / --bind {ws} {ws} --tmpfs {ws}/secret --ro-bind-data 3 {ws}/policy.txt "
       "--dev /dev --unshare-pid --proc /proc --die-with-parent -- "
       "sh -c 'ls -A {ws}/secret | wc -l; cat {ws}/policy.txt; echo n > {ws}/secret/new && echo wrote; "
       "awk \"NR>2{print \\$1}\" /proc/net/dev' 3<{ws}/data",
       false, "{ws}/secret/new"},
      {"omnigent style: --perms 000 --tmpfs, then --remount-ro",
       "--ro-bind / / --tmpfs /tmp --perms 000 --tmpfs /tmp/sec --remount-ro /tmp/sec --unshare-pid "
       "-- sh -c 'stat -c %a /tmp/sec; touch /tmp/sec/a 2>/dev/null || echo refused'"},
      {"--cap-drop ALL", "--ro-bind / / --cap-drop ALL grep -E '^Cap(Eff|Prm)' /proc/self/status"},
      {"default capabilities", "--ro-bind / / grep -E '^(CapEff|NoNewPrivs)' /proc/self/status"},
      {"--cap-add after --cap-drop ALL",
       "--ro-bind / / --cap-drop ALL --cap-add CAP_CHOWN grep '^CapEff' /proc/self/status"},
      {"--unshare-net: only loopback", "--ro-bind / / --unshare-net awk 'NR>2{print $1}' /proc/net/dev"},
      {"exit status", "--ro-bind / / sh -c 'exit 3'"},
      {"killed by a signal", "--ro-bind / / sh -c 'kill -9 $$'"},
      {"killed by a signal in a PID namespace", "--ro-bind / / --unshare-pid sh -c 'kill -TERM $$'"},
      {"--clearenv keeps PWD; --setenv", "--ro-bind / / --chdir /etc --clearenv --setenv A b env"},
      {"--setenv, --unsetenv", "--ro-bind / / --setenv FOO bar --unsetenv HOME sh -c 'echo $FOO ${HOME:-unset}'"},
      {"--unshare-uts --hostname", "--ro-bind / / --unshare-uts --hostname box hostname"},
      {"--uid --gid", "--ro-bind / / --unshare-user --uid 1234 --gid 4321 sh -c 'id -u; id -g'"},
      {"--as-pid-1", "--ro-bind / / --unshare-pid --as-pid-1 sh -c 'echo $$'"},
      {"reaper: the command is PID 2", "--ro-bind / / --unshare-pid sh -c 'echo $$'"},
      {"--dir with --perms: parents follow", "--ro-bind / / --tmpfs /tmp --perms 750 --dir /tmp/a/b "
                                             "stat -c '%n %a' /tmp/a /tmp/a/b"},
      {"--tmpfs with --perms 604: parents lose group access",
       "--ro-bind / / --tmpfs /tmp --perms 604 --tmpfs /tmp/r/s stat -c '%n %a' /tmp/r /tmp/r/s"},
      {"--size", "--ro-bind / / --size 1048576 --tmpfs /tmp sh -c \"df -k /tmp | awk 'NR==2{print \\$2}'\""},
      {"--file and --bind-data modes",
       "--ro-bind / / --tmpfs /tmp --file 3 /tmp/f --bind-data 4 /tmp/b "
       "sh -c 'stat -c %a /tmp/f /tmp/b; cat /tmp/f /tmp/b' 3<{ws}/data 4<{ws}/data"},
      {"--symlink", "--ro-bind / / --tmpfs /tmp --symlink /etc/hostname /tmp/l readlink /tmp/l"},
      {"--chmod", "--ro-bind / / --tmpfs /tmp --dir /tmp/d --chmod 711 /tmp/d stat -c %a /tmp/d"},
      {"--bind-try with a missing source",
       "--ro-bind / / --bind-try /nonexistent-nsrun /x sh -c 'test -e /x && echo yes || echo no'"},
      {"--bind is writable, --ro-bind is not",
       "--ro-bind / / --bind {ws} /mnt --ro-bind {ws} /srv sh -c 'echo w > /mnt/w; echo r > /srv/r || echo ro'",
       false, "{ws}/w"},
      {"--dev-bind keeps devices usable", "--ro-bind / / --dev-bind /dev /dev sh -c 'echo ok > /dev/null && echo ok'"},
      {"--dev: device nodes", "--ro-bind / / --dev /dev sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c'"},
      {"--mqueue", "--ro-bind / / --unshare-ipc --mqueue /dev/mqueue stat -f -c %T /dev/mqueue"},
      {"--proc in a PID namespace", "--ro-bind / / --unshare-pid --proc /proc sh -c 'set -- /proc/[0-9]*; echo $#'"},
      {"--unshare-all --share-net", "--ro-bind / / --unshare-all --share-net sh -c 'id -u; hostname >/dev/null && echo ok'"},
      {"--disable-userns", "--ro-bind / / --unshare-user --disable-userns sh -c 'unshare -U true 2>/dev/null; echo $?'"},
      {"--disable-userns with --assert-userns-disabled",
       "--ro-bind / / --unshare-user --disable-userns --assert-userns-disabled echo ok"},
      {"--remount-ro of a bind", "--ro-bind / / --bind {ws} /mnt --remount-ro /mnt sh -c 'touch /mnt/x || echo ro'",
       false, "{ws}/x"},
      {"--args", "--args 3 sh -c 'echo $0' 3<{ws}/args", false},
  });
}

TEST_CASE("bwrap dialect: error messages and exit statuses match bwrap", "[bwrap][differential][errors]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  struct ErrCase {
    std::string name, args;
    bool root_only = false;
  };
  const std::vector<ErrCase> cases{
      {"missing bind source", "--ro-bind / / --bind /nonexistent-nsrun /x true"},
      {"unknown option", "--frob true"},
      {"invalid fd", "--ro-bind / / --info-fd abc true"},
      {"command not found", "--ro-bind / / /nonexistent-nsrun-cmd"},
      {"command not executable", "--ro-bind / / /etc/passwd"},
      {"missing --chdir", "--ro-bind / / --chdir /nonexistent-nsrun true"},
      {"--dir without argument", "--dir"},
      {"--bind with one argument", "--bind /a"},
      {"--perms out of range", "--perms 99999 --dir /x true"},
      {"--perms before a bind", "--perms 700 --ro-bind / / true"},
      {"--size before --dir", "--size 10 --dir /x true"},
      {"--size zero", "--size 0 --tmpfs /x true"},
      {"--uid without a user namespace", "--uid 5 --ro-bind / / true", true},
      {"--hostname without a UTS namespace", "--ro-bind / / --hostname x true"},
      {"--as-pid-1 without a PID namespace", "--ro-bind / / --as-pid-1 true"},
      {"--disable-userns without --unshare-user", "--ro-bind / / --disable-userns true", true},
      {"--assert-userns-disabled when it is not", "--ro-bind / / --unshare-user --assert-userns-disabled true"},
      {"--seccomp with --add-seccomp-fd", "--seccomp 0 --add-seccomp-fd 0 true"},
      {"unknown capability", "--cap-add CAP_FOO true"},
      {"--exec-label without SELinux", "--exec-label foo --ro-bind / / true"},
      {"--symlink over something else", "--ro-bind / / --symlink a /tmp true"},
      {"--args from a closed fd", "--args 77 true"},
      {"no command", "--ro-bind / /"},
  };
  for (const auto& c : cases) {
    if (c.root_only && !is_root()) continue;
    DYNAMIC_SECTION(c.name) {
      RunResult want = run_bwrap(oracle, c.args, {});
      RunResult got = run_bwrap(shim.path, c.args, {});
      INFO("args: " << c.args);
      CHECK(got.exit_code == want.exit_code);
      CHECK(got.exit_code == 1);
      CHECK(got.out == want.out);
      if (c.name == "no command") {
        CHECK(got.err.starts_with("usage: "));
      } else {
        CHECK(got.err == want.err);
      }
    }
  }
}

TEST_CASE("bwrap dialect: --info-fd and --json-status-fd carry bwrap's fields", "[bwrap][differential][status]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("ws");
  auto keys = [](const std::string& text) {
    std::string out;
    for (std::size_t at = 0; (at = text.find('"', at)) != std::string::npos;) {
      std::size_t end = text.find('"', at + 1);
      out += text.substr(at + 1, end - at - 1) + " ";
      at = end + 1;
    }
    return out;
  };
  for (const std::string& bwrap : {std::string(oracle), shim.path}) {
    const std::string info = ws / "info", json = ws / "json";
    RunResult r = run_bwrap(bwrap,
                            fmt::format("--ro-bind / / --unshare-pid --unshare-net --unshare-ipc --info-fd 3 "
                                        "--json-status-fd 4 sh -c 'readlink /proc/self/ns/pid; exit 7' 3>{} 4>{}",
                                        info, json),
                            {});
    INFO(bwrap << " stderr: " << r.err);
    CHECK(r.exit_code == 7);
    const std::string info_text = read_file(info), json_text = read_file(json);
    CHECK(keys(info_text) == "child-pid ipc-namespace mnt-namespace net-namespace pid-namespace ");
    CHECK(info_text.starts_with("{\n    \"child-pid\": "));
    CHECK(count_lines(json_text) == 2);
    CHECK(json_text.ends_with("{ \"exit-code\": 7 }\n"));
    // The pid namespace reported is the one the command is in.
    const std::string ns = chomp(r.out);
    const auto at = info_text.find("\"pid-namespace\": ");
    REQUIRE(at != std::string::npos);
    const std::string inode = info_text.substr(at + 17, info_text.find_first_of(",\n}", at + 17) - at - 17);
    CHECK(ns == fmt::format("pid:[{}]", inode));
  }
}

TEST_CASE("bwrap dialect: options newer than the oracle, per the manual", "[bwrap][newer]") {
  require_userns();
  BwrapShim shim;
  TempDir ws("ws");
  make_dir(ws / "low");
  make_dir(ws / "high");
  make_dir(ws / "up");
  make_dir(ws / "work");
  write_file(ws / "low/a", "low\n");
  write_file(ws / "low/b", "only-low\n");
  write_file(ws / "high/a", "high\n");

  SECTION("--ro-overlay: the last --overlay-src wins, read-only") {
    RunResult r = run_bwrap(shim.path,
                            fmt::format("--ro-bind / / --overlay-src {0}/low --overlay-src {0}/high --ro-overlay /mnt "
                                        "sh -c 'cat /mnt/a /mnt/b; touch /mnt/c 2>/dev/null || echo ro'",
                                        ws.path()),
                            {});
    INFO(r.err);
    CHECK(r.out == "high\nonly-low\nro\n");
    CHECK(r.exit_code == 0);
  }
  SECTION("--tmp-overlay: writes vanish, the host layer is untouched") {
    RunResult r = run_bwrap(shim.path,
                            fmt::format("--ro-bind / / --overlay-src {}/low --tmp-overlay /mnt "
                                        "sh -c 'echo new > /mnt/a; cat /mnt/a'", ws.path()),
                            {});
    INFO(r.err);
    CHECK(r.out == "new\n");
    CHECK(read_file(ws / "low/a") == "low\n");
  }
  SECTION("--overlay: writes land in RWSRC on the host") {
    RunResult r = run_bwrap(shim.path,
                            fmt::format("--ro-bind / / --overlay-src {0}/low --overlay {0}/up {0}/work /mnt "
                                        "sh -c 'echo new > /mnt/c; cat /mnt/b'", ws.path()),
                            {});
    INFO(r.err);
    CHECK(r.out == "only-low\n");
    CHECK(read_file(ws / "up/c") == "new\n");
    CHECK_FALSE(file_exists(ws / "low/c"));
  }
  SECTION("--argv0") {
    RunResult r = run_bwrap(shim.path, "--ro-bind / / --argv0 custom-name /bin/sh -c 'tr \"\\0\" \" \" < /proc/$$/cmdline'",
                            {});
    INFO(r.err);
    CHECK(r.out.starts_with("custom-name -c "));
  }
  SECTION("--level-prefix") {
    RunResult r = run_bwrap(shim.path, "--level-prefix --ro-bind / / --bind /nonexistent-nsrun /x true", {});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "<3>bwrap: Can't find source path /nonexistent-nsrun: No such file or directory\n");
  }
  SECTION("--symlink is idempotent for the same target only") {
    RunResult same = run_bwrap(shim.path, "--ro-bind / / --tmpfs /tmp --symlink a /tmp/l --symlink a /tmp/l readlink /tmp/l", {});
    CHECK(same.out == "a\n");
    CHECK(same.exit_code == 0);
    RunResult other = run_bwrap(shim.path, "--ro-bind / / --tmpfs /tmp --symlink a /tmp/l --symlink b /tmp/l true", {});
    CHECK(other.exit_code == 1);
    CHECK(other.err == "bwrap: Can't make symlink at /tmp/l: existing destination is a\n");
  }
  SECTION("--bind-fd") {
    RunResult ok = run_bwrap(shim.path, fmt::format("--ro-bind / / --bind-fd 3 /mnt cat /mnt/low/a 3<{}", ws.path()), {});
    INFO(ok.err);
    CHECK(ok.out == "low\n");
  }
  SECTION("--version and nsrun bwrap") {
    RunResult v = run_bwrap(shim.path, "--version", {});
    CHECK(v.out.starts_with("bubblewrap 0.11"));
    CHECK(v.out.find("nsrun") != std::string::npos);
    RunResult sub = nsrun({"bwrap", "--ro-bind", "/", "/", "sh", "-c", "exit 4"});
    CHECK(sub.exit_code == 4);
    RunResult explain = nsrun({"explain", "--bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "true"});
    CHECK(explain.exit_code == 0);
    CHECK(explain.out.find("tmpfs /tmp") != std::string::npos);
  }
}

TEST_CASE("bwrap dialect: a Codex-shaped launcher finds and uses nsrun as bwrap", "[bwrap][harness]") {
  require_userns();
  BwrapShim shim;
  TempDir ws("ws");
  const std::string script = R"(set -e
bw=$(command -v bwrap)
[ "$bw" = "$SHIM" ] || { echo "found $bw"; exit 10; }
help=$("$bw" --help)
case "$help" in *--as-pid-1*) ;; *) echo "no --as-pid-1"; exit 11 ;; esac
case "$help" in *--perms*) ;; *) echo "no --perms"; exit 12 ;; esac
"$bw" --new-session --die-with-parent --ro-bind / / --dev /dev --bind "$WS" "$WS" --unshare-user --unshare-pid \
  --proc /proc --perms 700 --tmpfs /tmp --chdir "$WS" -- sh -c 'echo done > result; stat -c %a /tmp'
)";
  RunOptions opts = at(ws);
  const char* path = std::getenv("PATH");
  opts.env = {fmt::format("PATH={}:{}", shim.dir.path(), path ? path : "/usr/bin:/bin"), "SHIM=" + shim.path,
              "WS=" + ws.path()};
  RunResult r = run({"/bin/sh", "-c", script}, opts);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "700\n");
  CHECK(read_file(ws / "result") == "done\n");
}

namespace {

// The member of `holder`'s process group whose command name is `comm`.
pid_t member_named(const Process& holder, const std::string& comm) {
  pid_t found = -1;
  const bool seen = eventually([&] {
    for (pid_t m : processes_in_group(holder.pid()))
      if (file_exists(fmt::format("/proc/{}/comm", m)) && chomp(read_file(fmt::format("/proc/{}/comm", m))) == comm)
        return found = m, true;
    return false;
  });
  REQUIRE(seen);
  return found;
}

// The oracle and nsrun on the same command line (fds opened by sh):
// stdout, status and, when `same_stderr`, stderr must agree.
void compare(const BwrapShim& shim, const std::string& args, bool same_stderr = false) {
  RunResult want = run_bwrap(oracle, args, {});
  RunResult got = run_bwrap(shim.path, args, {});
  INFO("args: " << args);
  INFO("bwrap stderr: " << want.err);
  INFO("nsrun stderr: " << got.err);
  CHECK(got.out == want.out);
  CHECK(got.exit_code == want.exit_code);
  if (same_stderr) CHECK(got.err == want.err);
}

}  // namespace

TEST_CASE("bwrap dialect: --userns, --userns2 and --pidns join existing namespaces", "[bwrap][differential][userns]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  // A user namespace with root mapped to the caller, and a PID namespace it
  // owns, held by a sleeping process; a second user namespace nested in a
  // first, for --userns2.
  Process pid_holder({"unshare", "-U", "--map-root-user", "--pid", "--fork", "sh", "-c", "echo ready; exec sleep 1000"});
  CHECK(pid_holder.wait_for_line("ready") == "ready");
  const pid_t inner = member_named(pid_holder, "sleep");
  const std::string user = fmt::format("/proc/{}/ns/user", inner), pid = fmt::format("/proc/{}/ns/pid", inner);
  Process nested({"unshare", "-U", "--map-root-user", "sh", "-c",
                  "unshare -U --map-root-user sleep 1000 & echo ready; wait"});
  CHECK(nested.wait_for_line("ready") == "ready");
  const std::string outer_user = fmt::format("/proc/{}/ns/user", member_named(nested, "sh"));
  const std::string inner_user = fmt::format("/proc/{}/ns/user", member_named(nested, "sleep"));
  const std::string show = "sh -c 'cat /proc/self/uid_map; readlink /proc/self/ns/user /proc/self/ns/pid; id -u'";

  SECTION("--userns: the payload is in that namespace, with its maps") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 {} 3<{}", show, user));
    RunResult r = run_bwrap(shim.path, fmt::format("--ro-bind / / --userns 3 {} 3<{}", show, user), {});
    CHECK(r.out.find(read_link(user)) != std::string::npos);
  }
  SECTION("--userns with new namespaces owned by it") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --unshare-pid --unshare-net --unshare-ipc --unshare-uts "
                              "--proc /proc sh -c 'echo $$; set -- /proc/[0-9]*; echo $#; readlink /proc/self/ns/user' "
                              "3<{}",
                              user));
  }
  SECTION("--userns --pidns: the payload is in that PID namespace") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 {} 3<{} 4<{}", show, user, pid));
    RunResult r = run_bwrap(shim.path, fmt::format("--ro-bind / / --userns 3 --pidns 4 {} 3<{} 4<{}", show, user, pid), {});
    CHECK(r.out.find(read_link(pid)) != std::string::npos);
  }
  SECTION("--userns --userns2: set up in the outer namespace, run in the inner one") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --userns2 4 {} 3<{} 4<{}", show, outer_user, inner_user));
    RunResult r = run_bwrap(shim.path,
                            fmt::format("--ro-bind / / --userns 3 --userns2 4 {} 3<{} 4<{}", show, outer_user, inner_user), {});
    CHECK(r.out.find(read_link(inner_user)) != std::string::npos);
  }
  SECTION("--pidns --unshare-pid: a new PID namespace inside that one") {
    // NSpid (read through the host's /proc) lists one pid per level:
    // ours, the held namespace, the new one.
    const std::string depth = "awk '/^NSpid/{print NF-1}' /proc/self/status";
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 {} 3<{} 4<{}", depth, user, pid));
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 --unshare-pid {} 3<{} 4<{}", depth, user, pid));
    RunResult r = run_bwrap(shim.path, fmt::format("--ro-bind / / --userns 3 --pidns 4 --unshare-pid {} 3<{} 4<{}", depth, user, pid), {});
    CHECK(r.out == "3\n");
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 --unshare-pid --proc /proc "
                              "sh -c 'echo $$; set -- /proc/[0-9]*; echo $#; readlink /proc/self/ns/user' 3<{} 4<{}",
                              user, pid));
  }
  SECTION("--uid and --gid with --userns switch ids inside it") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --uid 0 --gid 0 sh -c 'id -u; id -g' 3<{}", user), true);
    compare(shim, fmt::format("--ro-bind / / --userns 3 --uid 5 true 3<{}", user), true);  // unmapped: EINVAL
  }
  SECTION("exit status") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 sh -c 'exit 7' 3<{} 4<{}", user, pid));
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 --unshare-pid sh -c 'exit 7' 3<{} 4<{}", user, pid));
    compare(shim, fmt::format("--ro-bind / / --userns 3 --pidns 4 --unshare-pid sh -c 'kill -TERM $$' 3<{} 4<{}", user, pid));
  }
  SECTION("errors, in bwrap's words, exit 1") {
    compare(shim, fmt::format("--ro-bind / / --userns 3 --unshare-user true 3<{}", user), true);
    compare(shim, fmt::format("--ro-bind / / --unshare-user-try --userns 3 true 3<{}", user), true);
    compare(shim, fmt::format("--ro-bind / / --userns 3 --disable-userns true 3<{}", user), true);
    compare(shim, "--ro-bind / / --userns 3 true 3</etc/passwd", true);  // not a namespace: EINVAL
    compare(shim, "--ro-bind / / --userns 9 true", true);                 // closed: EBADF
    // The inner namespace is no ancestor of the outer one.
    compare(shim, fmt::format("--ro-bind / / --userns 3 --userns2 4 true 3<{} 4<{}", inner_user, outer_user), true);
    compare(shim, fmt::format("--ro-bind / / --userns 3 --userns2 9 true 3<{}", user), true);
    // bwrap adds a second line here (its intermediate process dies); the first is the same.
    RunResult r = run_bwrap(shim.path, "--ro-bind / / --pidns 4 true 4</etc/passwd", {});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "bwrap: Setting pidns failed: Invalid argument\n");
  }
}
