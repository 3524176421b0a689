// The sandbox's PID 1 (nsrun's reaper) holds what the command must never
// have: the caller's environment and policy in its memory (a fork of
// nsrun), and its fds (the status channel to nsrun, lock fds). The command
// tries every way to it, as itself and as uid 0 of the sandbox, with and
// without capabilities. The caller who made the sandbox, on the other hand,
// opens PID 1's namespaces as bwrap's callers do (flatpak enters its
// sandboxes through the pid --info-fd gives).
#include "bwrap_oracle.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <climits>
#include <optional>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Each way in, many times over (a race with PID 1's start is part of the
// attack); prints what got through, then `cmdline` (PID 1's, world-readable,
// to tell which PID 1 was attacked) and `done`.
constexpr std::string_view attack_py = R"PY(
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
got = set()
def attempt(what, fn):
    try:
        if fn() is not False: got.add(what)
    except OSError:
        pass
def ptrace(req):
    if libc.ptrace(req, 1, 0, 0) != 0: return False
    # Let go of it (stopped, then detached), so a breach fails the test
    # instead of leaving the sandbox hung.
    if req == 0x4206: libc.ptrace(0x4207, 1, 0, 0)
    os.waitpid(1, 0x40000000)
    libc.ptrace(17, 1, 0, 0)
def opened(path, flags=os.O_RDONLY):
    os.close(os.open(path, flags))
def read(path):
    with open(path, 'rb') as f: f.read(1)
def vm_read():
    buf = ctypes.create_string_buffer(8)
    class iov(ctypes.Structure): _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
    local, remote = iov(ctypes.addressof(buf), 8), iov(0x400000, 8)
    if libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0 and ctypes.get_errno() == 1:
        return False
def pidfd_getfd():
    pidfd = libc.syscall(434, 1, 0)
    if pidfd < 0: return False
    ok = False
    for n in range(64):
        fd = libc.syscall(438, pidfd, n, 0)
        if fd >= 0: os.close(fd); ok = True
    os.close(pidfd)
    return ok if ok else False
for round in range(200):
    attempt('ptrace-attach', lambda: ptrace(16))
    attempt('ptrace-seize', lambda: ptrace(0x4206))
    if round % 10: continue
    attempt('vm-read', vm_read)
    attempt('pidfd-getfd', pidfd_getfd)
    for f in ('mem', 'environ', 'auxv', 'maps', 'stack', 'syscall', 'pagemap', 'io'):
        attempt('read /proc/1/' + f, lambda: read('/proc/1/' + f))
    attempt('open /proc/1/mem for writing', lambda: opened('/proc/1/mem', os.O_WRONLY))
    for l in ('exe', 'cwd', 'root'):
        attempt('readlink /proc/1/' + l, lambda: os.readlink('/proc/1/' + l))
    attempt('open /proc/1/exe', lambda: opened('/proc/1/exe'))
    attempt('list /proc/1/root', lambda: os.listdir('/proc/1/root/'))
    for n in range(64):
        attempt('open /proc/1/fd/N', lambda: opened('/proc/1/fd/%d' % n))
        attempt('readlink /proc/1/fd/N', lambda: os.readlink('/proc/1/fd/%d' % n))
        attempt('read /proc/1/fdinfo/N', lambda: read('/proc/1/fdinfo/%d' % n))
    for ns in ('user', 'pid', 'mnt', 'net', 'ipc', 'uts', 'cgroup', 'time', 'pid_for_children'):
        attempt('open /proc/1/ns/' + ns, lambda: opened('/proc/1/ns/' + ns))
        attempt('readlink /proc/1/ns/' + ns, lambda: os.readlink('/proc/1/ns/' + ns))
for what in sorted(got): print('got', what)
print('cmdline', open('/proc/1/cmdline', 'rb').read().split(b'\0')[1].decode() or '-')
print('done')
)PY";

// The nsruns to attack: the build's and, when it was built, the static one
// (a static PID 1 re-execs inside the finished root, a dynamic one before
// the root is built, while its loader is in view).
std::vector<std::string> nsruns() {
  std::vector<std::string> all{nsrun_path()};
  if (auto s = nsrun_static_path()) all.push_back(*s);
  else WARN("nsrun-static was not built: the re-exec'd PID 1 is not attacked here (tools/run-tests.sh builds it)");
  return all;
}

bool is_static(const std::string& nsrun) { return nsrun.ends_with("-static"); }

// Whether this nsrun's PID 1 re-execs where it may: a dynamic one does not
// on an initramfs "/", where the root is entered by chroot, which would
// leave it the host's root.
bool reexecs(const std::string& nsrun) {
  struct statfs fs{};
  REQUIRE(::statfs("/", &fs) == 0);
  return is_static(nsrun) || (fs.f_type != RAMFS_MAGIC && fs.f_type != TMPFS_MAGIC);
}

// `nsrun bwrap ARGS --info-fd 3 -- python3 attack.py`, fd 3 a file of the
// workspace.
RunResult attack(const std::string& nsrun, const std::vector<std::string>& extra, const TempDir& ws) {
  std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$@\" 3>info.json", "sh", nsrun, "bwrap", "--unshare-user",
                                "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
                                "/proc", "--info-fd", "3"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  for (const char* a : {"--", "/usr/bin/python3", "-I"}) argv.push_back(a);
  argv.push_back(ws / "attack.py");
  return run(argv, at(ws));
}

}  // namespace

TEST_CASE("attack: the command reaches neither PID 1's memory nor its fds nor its namespaces", "[pid1-reach]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("pid1-reach");
  write_file(ws / "attack.py", attack_py);
  struct Variant {
    const char* name;
    std::vector<std::string> args;
    bool reexec;  // PID 1 re-execs
  };
  const std::vector<Variant> variants{
      // bwrap keeps root's capabilities unless told otherwise.
      {"the caller's defaults", {}, !is_root()},
      {"the command as the caller's uid, no capabilities", {"--cap-drop", "ALL"}, true},
      {"the command as uid 0 of the sandbox", {"--uid", "0", "--gid", "0", "--cap-drop", "ALL"}, true},
      {"the command with CAP_SYS_ADMIN", {"--uid", "0", "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN"}, true},
      // It may ptrace anything of the sandbox's namespace: PID 1 stays out
      // of it.
      {"the command with every capability", {"--uid", "0", "--cap-add", "ALL"}, false},
  };
  for (const auto& nsrun : nsruns()) {
    for (const auto& v : variants) {
      DYNAMIC_SECTION(nsrun << ": " << v.name) {
        RunResult r = attack(nsrun, v.args, ws);
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        const bool reexec = v.reexec && reexecs(nsrun);
        CHECK(r.out == fmt::format("cmdline {}\ndone\n", reexec ? "--internal-sandbox-pid1" : "bwrap"));
      }
    }
  }
}

TEST_CASE("the caller opens the namespaces of the sandbox's PID 1, as bwrap's callers do", "[pid1-reach]") {
  require_userns();
  for (const auto& nsrun : nsruns()) {
    DYNAMIC_SECTION(nsrun) {
      TempDir ws("pid1-ns");
      REQUIRE(::mkfifo((ws / "go").c_str(), 0600) == 0);
      Process sandbox({"/bin/sh", "-c", "exec \"$@\" 3>info.json", "sh", nsrun, "bwrap", "--unshare-user",
                       "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--bind", ws.path(), ws.path(),
                       "--proc", "/proc", "--info-fd", "3", "--", "sh", "-c",
                       "readlink /proc/self/ns/pid; read x < " + ws / "go"},
                      at(ws));
      const std::string inside = sandbox.wait_for_line("pid:[");
      const std::string info = read_file(ws / "info.json");
      const auto at_pid = info.find("\"child-pid\":");
      REQUIRE(at_pid != std::string::npos);
      const std::string pid = std::to_string(std::stol(info.substr(at_pid + 12)));
      char link[PATH_MAX] = {};
      const ssize_t n = ::readlink(("/proc/" + pid + "/ns/pid").c_str(), link, sizeof link - 1);
      const int read_err = n < 0 ? errno : 0;
      const int fd = ::open(("/proc/" + pid + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
      const int open_err = fd < 0 ? errno : 0;
      if (fd >= 0) ::close(fd);
      write_file(ws / "go", "\n");
      RunResult r = sandbox.wait();
      INFO(r.err);
      CHECK(r.exit_code == 0);
      if (reexecs(nsrun) || is_root()) {
        CHECK(read_err == 0);
        CHECK(std::string(link) == inside);
        CHECK(open_err == 0);
      } else {
        // A dynamic nsrun's PID 1 on an initramfs "/" stays the fork of
        // nsrun (docs/bwrap.md).
        CHECK(read_err == EACCES);
        CHECK(open_err == EACCES);
      }
    }
  }
}
