// The escape suite: a command that actively tries to get out. Each attack is
// one nsrun-probe attempt inside; each test asserts that the attempt failed
// (with the errno the kernel or the filter gave) AND that nothing changed on
// the host. Where a control run shows the attack would work without the
// defence (no filter, a passed fd, a shared network), the test runs it too,
// so a passing test cannot be a broken measurement.
//
// Every attack runs once per rung. The Landlock rung variant SKIPs loudly
// while nsrun does not accept `--backend landlock`; on that rung there is no
// PID, mount or network namespace, so its assertions are what Landlock and
// the filter promise (no write outside the writable roots, no ptrace of an
// outside process, scoped signals and abstract sockets from ABI 6).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// The kernel's Landlock ABI (0: none), asked directly, not through nsrun.
int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// nsrun RUNG-OPTIONS OPTIONS -- nsrun-probe ARGS, from `cwd`.
RunResult attempt(Rung rung, const std::vector<std::string>& options, const std::vector<std::string>& probe_args,
                  const TempDir& cwd) {
  std::vector<std::string> args = concat(rung_options(rung), options);
  args.push_back("--");
  args.push_back(probe_path());
  args.insert(args.end(), probe_args.begin(), probe_args.end());
  return nsrun(args, at(cwd));
}

// The probe said the attempt was refused (exit 1, `error ...`), not `ok`.
void check_refused(const RunResult& r, std::string_view expected = {}) {
  INFO("stdout: " << r.out << "stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK((r.out.starts_with("error ") || r.out.find(" error ") != std::string::npos));
  if (!expected.empty()) CHECK(chomp(r.out) == expected);
}

#define ESCAPE_CASE(fn, title, tags)                                          \
  TEST_CASE(title " (namespace rung)", "[escape]" tags) { fn(Rung::namespaces); } \
  TEST_CASE(title " (landlock rung)", "[escape][landlock]" tags) { fn(Rung::landlock); }

// ---------------------------------------------------------------- terminal

// Runs `argv` on a new pseudo-terminal as its controlling terminal (stdin,
// stdout, stderr), like an interactive shell would, and returns the exit
// status, what it wrote, and how many bytes wait in the terminal's input
// queue afterwards: keystrokes injected with TIOCSTI land there and would be
// read by the caller's shell once the sandbox exits.
struct PtyRun {
  int exit_code = -1;
  std::string output;
  int pending_input = -1;
};

PtyRun run_on_pty(const std::vector<std::string>& argv) {
  int master = -1, slave = -1;
  REQUIRE(openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(slave, F_SETFD, FD_CLOEXEC);
  // Raw: an injected byte is readable at once, without a newline, and is
  // not echoed into the output.
  termios t{};
  REQUIRE(tcgetattr(slave, &t) == 0);
  cfmakeraw(&t);
  REQUIRE(tcsetattr(slave, TCSANOW, &t) == 0);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  PtyRun out;
  // The test keeps the slave open (to look at its input queue), so the
  // master never reports a hang-up: the child's exit comes from a pidfd.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  REQUIRE(pidfd >= 0);
  auto drain_master = [&] {
    char buf[4096];
    for (pollfd p{master, POLLIN, 0}; poll(&p, 1, 0) == 1 && (p.revents & POLLIN);) {
      ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) break;
      out.output.append(buf, static_cast<size_t>(n));
    }
  };
  for (;;) {
    pollfd fds[2] = {{master, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int rc = poll(fds, 2, 30000);
    REQUIRE(rc >= 0);
    if (rc == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      close(pidfd);
      FAIL("timed out waiting for the command on the pseudo-terminal: " << out.output);
    }
    drain_master();
    if (fds[1].revents & POLLIN) break;
  }
  close(pidfd);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  drain_master();
  REQUIRE(ioctl(slave, FIONREAD, &out.pending_input) == 0);
  close(master);
  close(slave);
  return out;
}

void tiocsti_injection(Rung rung) {
  const auto options = rung_options(rung);
  TempDir ws;
  for (const char* variant : {"plain", "high"}) {
    DYNAMIC_SECTION("TIOCSTI " << variant) {
      std::vector<std::string> argv{nsrun_path(), "--workspace", ws.path(), "--chdir", ws.path()};
      argv = concat(argv, options);
      argv = concat(argv, {"--", probe_path(), "tiocsti", variant});
      PtyRun r = run_on_pty(argv);
      INFO("output: " << r.output);
      CHECK(r.exit_code == 1);
      CHECK(r.output.find("error EPERM") != std::string::npos);
      CHECK(r.pending_input == 0);

      if (rung == Rung::namespaces) {
        // Control: without the filter the same probe does inject (where the
        // kernel still allows TIOCSTI), so the queue check above measures.
        argv = {nsrun_path(), "--workspace", ws.path(), "--chdir", ws.path(), "--seccomp", "none", "--", probe_path(), "tiocsti",
                variant};
        PtyRun control = run_on_pty(argv);
        INFO("control output: " << control.output);
        if (control.output.find("ok") != std::string::npos) CHECK(control.pending_input == 1);
        else WARN("TIOCSTI is refused by this kernel itself (dev.tty.legacy_tiocsti=0?): " << control.output);
      }
    }
  }
}
ESCAPE_CASE(tiocsti_injection, "keystroke injection with TIOCSTI, plain and with high bits", "[tty]")

// ---------------------------------------------------------------- processes outside

void proc_magic_links_of_outside_process(Rung rung) {
  TempDir ws("ws");
  TempDir host("host");
  std::string victim = host / "victim";
  write_file(victim, "original");
  // A host process whose cwd is the host directory, and this test's own
  // descriptor on a host file.
  Process sleeper({probe_path(), "sleep-forever", unique_token("cwd-sleeper")}, at(host));
  sleeper.wait_for_line("sleeping");
  int fd = open(victim.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const pid_t s = sleeper.pid();
  const std::vector<std::vector<std::string>> attempts{
      {"write", fmt::format("/proc/{}/cwd/via-cwd", s), "x"},
      {"write", fmt::format("/proc/{}/root{}", s, host / "via-root"), "x"},
      {"write", fmt::format("/proc/{}/fd/{}", getpid(), fd), "overwritten"},
      {"write", fmt::format("/proc/{}/root{}", getpid(), host / "via-self-root"), "x"},
  };
  for (const auto& a : attempts) {
    INFO(join(a));
    RunResult r = attempt(rung, {}, a, ws);
    // Namespace rung: the pids are not in the sandbox's PID namespace.
    check_refused(r, rung == Rung::namespaces ? "error ENOENT" : "");
  }
  close(fd);
  CHECK_FALSE(file_exists(host / "via-cwd"));
  CHECK_FALSE(file_exists(host / "via-root"));
  CHECK_FALSE(file_exists(host / "via-self-root"));
  CHECK(read_file(victim) == "original");
}
ESCAPE_CASE(proc_magic_links_of_outside_process, "writes through /proc/<pid>/root, cwd and fd/N of an outside process",
            "[proc]")

std::string status_field(pid_t pid, std::string_view field) {
  std::string status = read_file(fmt::format("/proc/{}/status", pid));
  auto at = status.find(std::string(field) + ":");
  if (at == std::string::npos) return {};
  auto eol = status.find('\n', at);
  std::string value = status.substr(at + field.size() + 1, eol - at - field.size() - 1);
  value.erase(0, value.find_first_not_of(" \t"));
  return value;
}

void ptrace_kill_vm_read_outside(Rung rung) {
  TempDir ws;
  Process sleeper({probe_path(), "sleep-forever", unique_token("victim")});
  sleeper.wait_for_line("sleeping");
  const std::string pid = std::to_string(sleeper.pid());
  const std::string expected = rung == Rung::namespaces ? "error ESRCH" : "";

  check_refused(attempt(rung, {}, {"ptrace", pid}, ws), rung == Rung::namespaces ? expected : "error EPERM");
  check_refused(attempt(rung, {}, {"vm-read", pid}, ws), rung == Rung::namespaces ? expected : "error EPERM");
  if (rung == Rung::landlock && landlock_abi() < 6) {
    WARN("Landlock ABI " << landlock_abi() << " < 6: signals are not scoped on this kernel; kill not attempted");
  } else {
    check_refused(attempt(rung, {}, {"kill", pid, "9"}, ws), expected);
  }
  // The victim is alive, not stopped, not traced.
  CHECK(kill(sleeper.pid(), 0) == 0);
  CHECK(status_field(sleeper.pid(), "TracerPid") == "0");
  CHECK(status_field(sleeper.pid(), "State").starts_with("S"));
}
ESCAPE_CASE(ptrace_kill_vm_read_outside, "ptrace, kill and process_vm_readv of an outside process", "[proc]")

// ---------------------------------------------------------------- mounts

void nested_userns_mounts(Rung rung) {
  TempDir ws("ws");
  TempDir host("host");  // outside the workspace: read-only inside
  // The new mount API too: mount_setattr clearing the read-only flag in
  // place, on a detached clone (open_tree) attached back with move_mount,
  // and a tmpfs made with fsopen/fsmount attached over the path.
  for (const char* action : {"remount-rw", "mount-over", "umount", "setattr-rw", "clone-rw", "fsmount-over"}) {
    DYNAMIC_SECTION(action) {
      const std::string file = unique_token("nested");
      const bool over = std::string_view(action) == "mount-over" || std::string_view(action) == "fsmount-over";
      // The default filter: no nested user namespace at all.
      // The root for a remount (a remount needs a mount point); a host
      // directory outside the workspace for the others.
      const bool at_root = std::string_view(action) == "remount-rw" || std::string_view(action) == "setattr-rw";
      const std::string target = at_root ? "/" : host.path();
      RunResult r = attempt(rung, {}, {"nested-userns", action, target, file}, ws);
      check_refused(r, "unshare error EPERM");

      // Allowed nested namespaces: on the Landlock rung the filter (and
      // Landlock) still refuse the mount family; on the namespace rung the
      // filter lets it through for nested sandboxes, and the kernel's
      // locked-mount rules hold, as with no filter at all. A remount
      // cannot clear the read-only flag it inherited locked, a locked
      // mount cannot be unmounted to reveal what is under it, and a mount
      // over a path lives in the nested mount namespace only.
      for (const bool filter : {true, false}) {
        std::vector<std::string> options = {"--allow-nested-userns"};
        if (!filter) options.insert(options.end(), {"--seccomp", "none"});
        r = attempt(rung, options, {"nested-userns", action, target, file}, ws);
        INFO((filter ? "default filter: " : "no filter: ") << r.out << r.err);
        if (filter && rung == Rung::landlock)
          CHECK(r.out.starts_with("unshare ok " + std::string(action) + " error EPERM write error"));
        // A tmpfs mounted over the path takes the write (in that private
        // namespace, so the host check below still holds); the others must
        // leave the path read-only.
        if (!over) CHECK(r.out.find("write ok") == std::string::npos);
        if (rung == Rung::namespaces) {
          if (std::string_view(action) == "remount-rw") CHECK(r.out.starts_with("unshare ok remount-rw error EPERM"));
          if (std::string_view(action) == "umount") CHECK(r.out.starts_with("unshare ok umount error EINVAL"));
          // The read-only flag came in locked: no interface clears it.
          if (std::string_view(action) == "setattr-rw") CHECK(r.out.starts_with("unshare ok setattr-rw error EPERM"));
          if (std::string_view(action) == "clone-rw") CHECK(r.out.starts_with("unshare ok clone-rw error EPERM"));
        }
        CHECK_FALSE(file_exists(host / file));
        CHECK_FALSE(file_exists("/" + file));
      }
    }
  }
}
ESCAPE_CASE(nested_userns_mounts, "a nested user namespace used to remount rw, mount over a path, unmount a ro bind",
            "[mount][userns]")

// A nested user namespace clones the mount a hidden credential's cover sits
// on without the mounts below it (open_tree without AT_RECURSIVE) and reads
// the file through the clone: the kernel refuses a clone that would drop a
// locked mount (EINVAL); on the Landlock rung the clone's paths get no
// right. Control: with nothing hidden the same clone reads the file.
void nested_userns_clone_under_cover(Rung rung) {
  TempDir ws("ws");
  TempDir home("home");
  make_dir(home / ".ssh", 0700);
  write_file(home / ".ssh/id_ed25519", "SECRET-KEY\n", 0600);
  RunOptions opts = at(ws);
  opts.env = {"HOME=" + home.path()};
  for (const bool filter : {true, false}) {
    std::vector<std::string> args = concat(rung_options(rung), {"--allow-nested-userns"});
    if (!filter) args.insert(args.end(), {"--seccomp", "none"});
    for (const auto& [dir, name] : {std::pair<std::string, std::string>{home.path(), ".ssh/id_ed25519"},
                                    {home.path() + "/.ssh", "id_ed25519"},
                                    {"/", home.path().substr(1) + "/.ssh/id_ed25519"}}) {
      RunResult r = nsrun(concat(args, {"--", probe_path(), "nested-reveal", dir, name}), opts);
      INFO(dir << " " << name << ": " << r.out << r.err);
      CHECK(r.out.starts_with("unshare ok open_tree "));
      CHECK(r.out.find("SECRET") == std::string::npos);
      if (rung == Rung::namespaces && !filter && dir == home.path())
        CHECK(r.out == "unshare ok open_tree error EINVAL\n");
    }
  }
  if (rung == Rung::namespaces) {
    RunResult shown = nsrun(concat(rung_options(rung), {"--allow-nested-userns", "--seccomp", "none", "--hide-defaults",
                                                        "none", "--", probe_path(), "nested-reveal", home.path(),
                                                        ".ssh/id_ed25519"}),
                            opts);
    INFO(shown.err);
    CHECK(shown.out == "unshare ok open_tree ok read ok SECRET-KEY\n");
  }
}
ESCAPE_CASE(nested_userns_clone_under_cover, "a nested user namespace clones a mount without the cover over a hidden "
            "credential", "[mount][userns][credentials]")

void direct_mounts(Rung rung) {
  TempDir ws("ws");
  TempDir host("host");
  check_refused(attempt(rung, {}, {"mount-tmpfs", host.path()}, ws), "error EPERM");
  check_refused(attempt(rung, {}, {"remount-rw", "/"}, ws), "error EPERM");
  check_refused(attempt(rung, {}, {"umount", "/proc"}, ws), "error EPERM");
  check_refused(attempt(rung, {}, {"pivot-root", ws.path(), ws.path()}, ws), "error EPERM");
  check_refused(attempt(rung, {}, {"open-tree-move", "/", host.path()}, ws), "open_tree error EPERM");
  // Nothing arrived on the host directory.
  RunResult ls = run({probe_path(), "list", host.path()});
  CHECK(ls.out == "\n");
}
ESCAPE_CASE(direct_mounts, "mount, pivot_root, open_tree+move_mount directly", "[mount]")

// ---------------------------------------------------------------- devices, /sys, /proc/sys

void devices(Rung rung) {
  TempDir ws("ws");
  check_refused(attempt(rung, {}, {"mknod-block", ws / "sda"}, ws), rung == Rung::namespaces ? "error EPERM" : "");
  CHECK_FALSE(file_exists(ws / "sda"));
  for (const char* disk : {"/dev/vda", "/dev/sda", "/dev/nvme0n1"}) {
    if (!file_exists(disk)) continue;
    INFO(disk);
    check_refused(attempt(rung, {}, {"open-write", disk}, ws));
    check_refused(attempt(rung, {}, {"read", disk}, ws));
  }
}
ESCAPE_CASE(devices, "mknod of a block device; opening the host's disks", "[dev]")

void sys_and_proc_sys(Rung rung) {
  TempDir ws("ws");
  // Each write would set the value already there: harmless even if the
  // sandbox failed, and a change would still be visible in the errno.
  for (const char* knob : {"/sys/class/net/lo/mtu", "/proc/sys/vm/overcommit_ratio", "/proc/sys/kernel/ctrl-alt-del"}) {
    if (!file_exists(knob)) continue;
    INFO(knob);
    const std::string before = read_file(knob);
    RunResult r = attempt(rung, {}, {"write", knob, chomp(before)}, ws);
    check_refused(r, rung == Rung::namespaces ? "error EROFS" : "");
    CHECK(read_file(knob) == before);
  }
  // sysrq 'h' only prints help to the kernel log, should it get through.
  check_refused(attempt(rung, {}, {"write", "/proc/sysrq-trigger", "h"}, ws));
}
ESCAPE_CASE(sys_and_proc_sys, "writes to /sys, /proc/sys and /proc/sysrq-trigger", "[proc]")

// ---------------------------------------------------------------- privileges

void setuid_binary(Rung rung) {
  const auto options = rung_options(rung);
  TempDir ws("ws");
  if (geteuid() == 0) {
    // A setuid copy of the probe owned by another user: outside it runs
    // with that euid; inside, no_new_privs (and the id map) keep ours.
    TempDir bin("suid");
    std::string copy = bin / "probe-suid";
    write_file(copy, read_file(probe_path()), 0755);
    REQUIRE(chown(copy.c_str(), 65534, 65534) == 0);
    REQUIRE(chmod(copy.c_str(), 04755) == 0);
    RunResult outside = run({copy, "creds"}, at(ws));
    REQUIRE(outside.out.find("euid=65534") != std::string::npos);
    RunResult inside = nsrun(concat(options, {"--", copy, "creds"}), at(ws));
    INFO(inside.err);
    CHECK(inside.exit_code == 0);
    CHECK(inside.out == "uid=0 euid=0 gid=0 egid=0\n");
  } else {
    // Unprivileged: the system's setuid-root passwd reads /etc/shadow.
    if (!file_exists("/usr/bin/passwd")) unavailable("passwd", "/usr/bin/passwd is not installed");
    RunResult outside = run({"/usr/bin/passwd", "-S"}, at(ws));
    if (outside.exit_code != 0)
      unavailable("setuid-baseline", "passwd -S fails outside the sandbox too: " + outside.err);
    RunResult inside = nsrun(concat(options, {"--", "/usr/bin/passwd", "-S"}), at(ws));
    INFO(inside.out << inside.err);
    // Without its setuid bit passwd cannot read /etc/shadow: it either
    // fails or reports what /etc/passwd alone says, never the shadow
    // status line (lock state, last change date) it printed outside.
    CHECK(inside.out != outside.out);
    CHECK(inside.out.find(chomp(outside.out)) == std::string::npos);
  }
}
ESCAPE_CASE(setuid_binary, "a setuid binary does not gain privileges (no_new_privs)", "[privs]")

void inherited_fd(Rung rung) {
  const auto options = rung_options(rung);
  TempDir ws("ws");
  TempDir host("host");
  // The caller opens a host directory without CLOEXEC and starts nsrun;
  // the sandbox must not inherit it (nor let /proc/self/fd/7 reach it).
  auto via_shell = [&](const std::vector<std::string>& extra, const std::string& name) {
    std::string cmd = fmt::format("exec 7<{}; exec {}", shell_quote(host.path()), shell_quote(nsrun_path()));
    for (const auto& o : concat(options, extra)) {
      cmd += ' ';
      cmd += shell_quote(o);
    }
    cmd += fmt::format(" -- {} fd-escape 7 {}", shell_quote(probe_path()), name);
    return run({"sh", "-c", cmd}, at(ws));
  };
  RunResult r = via_shell({}, "escaped");
  check_refused(r, "fstat error EBADF");
  CHECK_FALSE(file_exists(host / "escaped"));
  RunResult link = attempt(rung, {}, {"exists", "/proc/self/fd/7"}, ws);
  CHECK(link.out == "no\n");

  if (rung == Rung::namespaces) {
    // Control: passed on purpose, the same descriptor does reach the host.
    RunResult passed = via_shell({"--pass-fd", "7"}, "passed");
    INFO(passed.out << passed.err);
    CHECK(passed.out == "ok\n");
    CHECK(file_exists(host / "passed"));
  }
}
ESCAPE_CASE(inherited_fd, "an inherited directory fd (not passed) used to reach the host", "[fd]")

// ---------------------------------------------------------------- kernel interfaces

void refused_interfaces(Rung rung) {
  TempDir ws;
  struct Case {
    std::vector<std::string> probe;
    std::string expected;
  };
  const std::vector<Case> cases{
      {{"sys", "io_uring_setup"}, "error EPERM"},  // io_uring would open files and sockets unfiltered
      {{"sys", "keyctl"}, "error EPERM"},
      {{"sys", "add_key"}, "error EPERM"},
      {{"sys", "request_key"}, "error EPERM"},
      {{"sys", "bpf"}, "error EPERM"},
      {{"sys", "perf_event_open"}, "error EPERM"},
      {{"sys", "userfaultfd"}, "error EPERM"},
      {{"sys", "kexec_load"}, "error EPERM"},
      {{"sys", "init_module"}, "error EPERM"},
      {{"sys", "acct"}, "error EPERM"},
      {{"sys", "swapoff"}, "error EPERM"},
      {{"sys", "open_by_handle_at"}, "error EPERM"},
      {{"sys", "quotactl"}, "error EPERM"},
      {{"sys", "personality", "0x0040000"}, "error EPERM"},  // ADDR_NO_RANDOMIZE
      {{"sys", "unshare-user"}, "error EPERM"},
      {{"sys", "clone-user"}, "error EPERM"},
      {{"sys", "clone3"}, "error ENOSYS"},
      {{"socket", "vsock"}, "error EPERM"},
      {{"x32-getpid"}, "error EPERM"},
  };
  for (const auto& c : cases) {
    INFO(join(c.probe));
    check_refused(attempt(rung, {}, c.probe, ws), c.expected);
  }
  // The query and PER_LINUX still work: programs call them routinely.
  RunResult query = attempt(rung, {}, {"sys", "personality", "0xffffffff"}, ws);
  CHECK(query.out == "ok\n");

  // i386 system calls through int 0x80: refused by the filter where the
  // kernel runs them at all.
  RunResult outside = run({probe_path(), "i386-getpid"});
  if (outside.out.starts_with("ok")) {
    check_refused(attempt(rung, {}, {"i386-getpid"}, ws), "error EPERM");
  } else {
    WARN("IA-32 emulation is off on this kernel (" << chomp(outside.out)
                                                   << "): the i386 attempt cannot run; the compiled "
                                                      "program's i386 refusal is covered by the unit tests");
  }
}
ESCAPE_CASE(refused_interfaces,
            "io_uring, keyrings, bpf, perf, userfaultfd, kexec, modules, personality, nested userns, AF_VSOCK, "
            "x32 are refused",
            "[seccomp]")

// ---------------------------------------------------------------- network

struct Listener {
  int fd = -1;
  ~Listener() {
    if (fd >= 0) close(fd);
  }
  // Was a connection made (and left pending) on it?
  bool has_connection() const {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }
};

void network_none(Rung rung) {
  TempDir ws;
  const std::string name = unique_token("abstract");
  Listener unix_server;
  unix_server.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(unix_server.fd >= 0);
  sockaddr_un ua{};
  ua.sun_family = AF_UNIX;
  std::memcpy(ua.sun_path + 1, name.data(), name.size());
  REQUIRE(bind(unix_server.fd, reinterpret_cast<sockaddr*>(&ua),
               static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
  REQUIRE(listen(unix_server.fd, 4) == 0);

  Listener tcp_server;
  tcp_server.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(tcp_server.fd >= 0);
  sockaddr_in ta{};
  ta.sin_family = AF_INET;
  ta.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(tcp_server.fd, reinterpret_cast<sockaddr*>(&ta), sizeof ta) == 0);
  REQUIRE(listen(tcp_server.fd, 4) == 0);
  socklen_t len = sizeof ta;
  REQUIRE(getsockname(tcp_server.fd, reinterpret_cast<sockaddr*>(&ta), &len) == 0);
  const std::string port = std::to_string(ntohs(ta.sin_port));

  RunResult r = attempt(rung, {"--network", "none"}, {"connect-abstract", name}, ws);
  if (rung == Rung::landlock && landlock_abi() < 6) {
    WARN("Landlock ABI " << landlock_abi() << " < 6: abstract unix sockets are not scoped on this kernel");
  } else {
    check_refused(r, rung == Rung::namespaces ? "error ECONNREFUSED" : "error EPERM");
    CHECK_FALSE(unix_server.has_connection());
  }
  r = attempt(rung, {"--network", "none"}, {"connect-tcp", port}, ws);
  check_refused(r, rung == Rung::namespaces ? "error ECONNREFUSED" : "error EPERM");
  CHECK_FALSE(tcp_server.has_connection());

  if (rung == Rung::namespaces) {
    // The sandbox's own loopback works: lo is up with 127.0.0.1.
    r = attempt(rung, {"--network", "none"}, {"tcp-self"}, ws);
    INFO(r.err);
    CHECK(r.out == "ok\n");
    // Control: with the network shared both servers are reached.
    r = attempt(rung, {}, {"connect-tcp", port}, ws);
    CHECK(r.out == "ok\n");
    CHECK(tcp_server.has_connection());
    r = attempt(rung, {}, {"connect-abstract", name}, ws);
    CHECK(r.out == "ok\n");
    CHECK(unix_server.has_connection());
  }
}
ESCAPE_CASE(network_none, "network none: host abstract unix socket and loopback TCP server are out of reach",
            "[net]")

// ---------------------------------------------------------------- files

void planted_symlink(Rung rung) {
  TempDir ws("ws");
  TempDir host("host");
  REQUIRE(symlink((host / "target").c_str(), (ws / "link").c_str()) == 0);
  REQUIRE(symlink(host.path().c_str(), (ws / "dirlink").c_str()) == 0);
  const std::string expected = rung == Rung::namespaces ? "error EROFS" : "";
  check_refused(attempt(rung, {}, {"write", ws / "link", "escaped"}, ws), expected);
  check_refused(attempt(rung, {}, {"write", ws / "dirlink/file", "escaped"}, ws), expected);
  check_refused(attempt(rung, {}, {"mkdir", ws / "dirlink/dir"}, ws), expected);
  CHECK_FALSE(file_exists(host / "target"));
  CHECK_FALSE(file_exists(host / "file"));
  CHECK_FALSE(file_exists(host / "dir"));
}
ESCAPE_CASE(planted_symlink, "a symlink planted in the workspace pointing outside, then written through", "[fs]")

void write_to_nsrun_binary(Rung rung) {
  const auto options = rung_options(rung);
  TempDir ws("ws");
  TempDir bin("bin");
  // A copy the test owns, so that a successful write would show.
  std::string copy = bin / "nsrun";
  write_file(copy, read_file(nsrun_path()), 0755);
  const std::string original = read_file(copy);
  for (const char* target : {"/proc/1/exe", "/proc/self/exe"}) {
    INFO(target);
    RunResult r = run(concat(concat({copy}, options), {"--", probe_path(), "open-write", target}), at(ws));
    check_refused(r);
  }
  // Through the sandbox's PID 1 (nsrun's reaper) with its fd table and root.
  RunResult r = run(concat(concat({copy}, options), {"--", probe_path(), "write", "/proc/1/root" + copy, "x"}), at(ws));
  check_refused(r);
  CHECK(read_file(copy) == original);
}
ESCAPE_CASE(write_to_nsrun_binary, "a write to the nsrun binary through /proc/1/exe or /proc/self/exe", "[proc]")

}  // namespace
