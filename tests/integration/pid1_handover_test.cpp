// What the re-exec'd PID 1 holds, seen by the caller who made the sandbox
// (who may look: PID 1's memory belongs to the sandbox's user namespace).
// A dynamic nsrun's PID 1 execs before the root is built (its loader is
// the host's), so the pivot must have moved its root and working directory
// into the new root, it must keep no fd on a host directory, and the lock
// fds opened in the finished root must have reached it with their locks.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// The nsruns whose PID 1 re-execs: the build's (dynamic) and the static one.
std::vector<std::string> nsruns() {
  std::vector<std::string> all{nsrun_path()};
  if (auto s = nsrun_static_path()) all.push_back(*s);
  else WARN("nsrun-static was not built: only the dynamic nsrun's PID 1 is looked at (tools/run-tests.sh builds it)");
  return all;
}

std::string child_pid(const std::string& info_json) {
  const std::string info = read_file(info_json);
  const auto at_pid = info.find("\"child-pid\":");
  REQUIRE(at_pid != std::string::npos);
  return std::to_string(std::stol(info.substr(at_pid + 12)));
}

std::string cmdline_word(const std::string& pid, std::size_t n) {
  const std::string all = read_file("/proc/" + pid + "/cmdline");
  std::size_t from = 0;
  for (std::size_t i = 0; i < n && from != std::string::npos; ++i) {
    from = all.find('\0', from);
    if (from != std::string::npos) ++from;
  }
  if (from == std::string::npos || from >= all.size()) return {};
  return all.substr(from, all.find('\0', from) - from);
}

// Whether an ELF executable names a program interpreter.
bool has_interpreter(const std::string& path) {
  const std::string bytes = read_file(path);
  Elf64_Ehdr eh;
  REQUIRE(bytes.size() >= sizeof eh);
  std::memcpy(&eh, bytes.data(), sizeof eh);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    REQUIRE(bytes.size() >= eh.e_phoff + (i + 1) * sizeof ph);
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_INTERP) return true;
  }
  return false;
}

struct Holder {
  short type = F_UNLCK;
  pid_t pid = 0;
};

Holder lock_holder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  struct flock l{};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  const int r = ::fcntl(fd, F_GETLK, &l);
  ::close(fd);
  REQUIRE(r == 0);
  return {l.l_type, l.l_type == F_UNLCK ? 0 : l.l_pid};
}

}  // namespace

TEST_CASE("the re-exec'd PID 1 has the sandbox's root and working directory, no host directory open, and the locks",
          "[pid1-reach]") {
  require_userns();
  for (const auto& nsrun : nsruns()) {
    DYNAMIC_SECTION(nsrun) {
      TempDir ws("pid1-handover");
      // More lock files than PID 1 takes in one message.
      const std::string go = ws / "go";
      std::vector<std::string> locks;
      for (int i = 0; i < 40; ++i) {
        locks.push_back(ws / fmt::format("lock{}", i));
        write_file(locks.back(), "");
      }
      REQUIRE(::mkfifo(go.c_str(), 0600) == 0);
      // A root with nothing of the host's but /usr, the workspace and one
      // directory of its own, and the command's directory "/". Without
      // CAP_SYS_PTRACE (root's default keeps it, and PID 1 then stays a
      // fork), and as the sandbox's uid 0: /proc/PID/fd of a non-dumpable
      // process belongs to that uid, which is then the caller's.
      std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$@\" 3>info.json", "sh", nsrun, "bwrap",
                                    "--unshare-user", "--unshare-pid", "--die-with-parent", "--uid", "0", "--gid",
                                    "0", "--cap-drop", "ALL", "--tmpfs", "/", "--ro-bind", "/usr", "/usr"};
      for (const char* top : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
        const std::string host = std::string("/") + top;
        struct stat st{};
        if (::lstat(host.c_str(), &st) != 0) continue;
        if (S_ISLNK(st.st_mode)) argv.insert(argv.end(), {"--symlink", read_link(host), host});
        else argv.insert(argv.end(), {"--ro-bind", host, host});
      }
      argv.insert(argv.end(), {"--dir", "/only-in-the-sandbox", "--bind", ws.path(), ws.path()});
      for (const auto& lock : locks) argv.insert(argv.end(), {"--lock-file", lock});
      argv.insert(argv.end(), {"--chdir", "/", "--info-fd", "3", "--", "sh", "-c", "echo ready; read x < " + go});
      Process sandbox(argv, at(ws));
      sandbox.wait_for_line("ready");
      const std::string pid = child_pid(ws / "info.json");
      const std::string proc = "/proc/" + pid;
      // PID 1 is the re-exec'd image, not the fork of nsrun.
      CHECK(cmdline_word(pid, 1) == "--internal-sandbox-pid1");

      struct stat root{}, cwd{}, mine{}, host_etc{};
      CHECK(::stat((proc + "/root/only-in-the-sandbox").c_str(), &mine) == 0);
      CHECK(::stat((proc + "/root/etc").c_str(), &host_etc) != 0);
      REQUIRE(::stat((proc + "/root").c_str(), &root) == 0);
      REQUIRE(::stat((proc + "/cwd").c_str(), &cwd) == 0);
      CHECK(cwd.st_dev == root.st_dev);
      CHECK(cwd.st_ino == root.st_ino);

      std::vector<ino_t> lock_inodes;
      dev_t lock_dev = 0;
      for (const auto& lock : locks) {
        struct stat st{};
        REQUIRE(::stat(lock.c_str(), &st) == 0);
        lock_inodes.push_back(st.st_ino);
        lock_dev = st.st_dev;
      }
      std::size_t lock_fds = 0;
      const std::vector<std::string> fds = names_in(proc + "/fd");
      REQUIRE(fds.size() >= 3);
      for (const auto& name : fds) {
        const std::string fd = proc + "/fd/" + name;
        struct stat st{};
        REQUIRE(::stat(fd.c_str(), &st) == 0);
        INFO("fd " << name << " -> " << read_link(fd));
        CHECK_FALSE(S_ISDIR(st.st_mode));
        if (std::stoi(name) <= 2) continue;
        // Above 2: its sockets and pipes, and the lock file.
        if (S_ISREG(st.st_mode)) {
          CHECK(st.st_dev == lock_dev);
          CHECK(std::ranges::find(lock_inodes, st.st_ino) != lock_inodes.end());
          ++lock_fds;
        } else {
          CHECK((S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)));
        }
      }
      CHECK(lock_fds == locks.size());
      // Each lock is PID 1's own (a record lock belongs to a process).
      for (const auto& lock : locks) {
        const Holder held = lock_holder(lock);
        INFO(lock);
        CHECK(held.type == F_RDLCK);
        CHECK(std::to_string(held.pid) == pid);
      }

      write_file(go, "\n");
      RunResult r = sandbox.wait();
      INFO(r.err);
      CHECK(r.exit_code == 0);
      for (const auto& lock : locks) CHECK(lock_holder(lock).type == F_UNLCK);
    }
  }
}

TEST_CASE("a dynamic nsrun's PID 1 re-execs with the host's program loader, in a root that has none",
          "[pid1-reach]") {
  require_userns();
  const std::string busybox = "/bin/busybox";
  if (!file_exists(busybox) || has_interpreter(busybox))
    unavailable("busybox-static", "a static /bin/busybox is the command of a root without a loader");
  for (const auto& nsrun : nsruns()) {
    DYNAMIC_SECTION(nsrun) {
      TempDir ws("pid1-noloader");
      const std::string go = ws / "go";
      REQUIRE(::mkfifo(go.c_str(), 0600) == 0);
      // Nothing of the host's in the root but busybox and the workspace:
      // no /lib64, no /usr, no loader.
      Process sandbox({"/bin/sh", "-c", "exec \"$@\" 3>info.json", "sh", nsrun, "bwrap", "--unshare-user",
                       "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--tmpfs", "/", "--ro-bind", busybox,
                       "/busybox", "--bind",
                       ws.path(), ws.path(), "--proc", "/proc", "--info-fd", "3", "--", "/busybox", "sh", "-c",
                       "/busybox readlink /proc/self/ns/pid; /busybox ls /lib64 /usr 2>&1 | /busybox wc -l; read x < " + go},
                      at(ws));
      const std::string inside = sandbox.wait_for_line("pid:[");
      const std::string pid = child_pid(ws / "info.json");
      CHECK(cmdline_word(pid, 1) == "--internal-sandbox-pid1");
      // The caller enters the sandbox through PID 1, as bwrap's callers do.
      const std::string link = read_link("/proc/" + pid + "/ns/pid");
      CHECK(link == inside);
      const int fd = ::open(("/proc/" + pid + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
      CHECK(fd >= 0);
      if (fd >= 0) ::close(fd);
      write_file(go, "\n");
      RunResult r = sandbox.wait();
      INFO(r.err);
      CHECK(r.exit_code == 0);
      // Both names missing inside: two lines of ls's complaints.
      CHECK(r.out == inside + "\n2\n");
    }
  }
}
