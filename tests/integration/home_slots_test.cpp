// The home layer's work slots (src/layers/work_slots.hpp): each launch on a
// layer holds a work directory of its own while it runs (overlayfs's rule;
// concurrent launches share only the upper layer, and all their writes land),
// reuses a free one rather than making one, and leaves nothing behind: a
// launch killed with SIGKILL (nsrun and its PID 1) frees its slot for the
// next, the slots past the kept ones go after their run, and what the kernel
// would not clean in a slot (it would mount the home read-only) is cleaned
// before the mount.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

constexpr unsigned kept_slots = 8;  // layers::kept_work_slots

struct Layer {
  TempDir ws{"slot-ws"};
  TempDir state{"slot-state"};
  TempDir home{"slot-home"};
  RunOptions opts() const {
    RunOptions o = at(ws);
    o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path(), "XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
    return o;
  }
  std::vector<std::string> args(const std::string& script) const {
    return {nsrun_path(), "--home", "cow", "--home-layer", "slots", "--", "sh", "-c", script};
  }
  std::string dir() const { return state / "nsrun/home/slots"; }
  // The layer directory's entries but its upper and redirect directories.
  std::vector<std::string> slots() const {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir().c_str());
    REQUIRE(d != nullptr);
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != ".." && n != "upper" && n != "redirect") out.push_back(n);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::vector<std::string> slot_names(unsigned n) {
  std::vector<std::string> out;
  for (unsigned i = 0; i < n; ++i) out.push_back("work-" + std::to_string(i));
  std::sort(out.begin(), out.end());
  return out;
}

// Whether someone holds the flock nsrun takes on a slot.
bool locked(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return busy;
}

// The processes whose parent is `pid` (/proc/<n>/stat's fourth field).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    const pid_t n = static_cast<pid_t>(std::atoi(e->d_name));
    if (n <= 0) continue;
    const int fd = ::open(("/proc/" + std::to_string(n) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t len = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (len <= 0) continue;
    const std::string stat(buf, static_cast<std::size_t>(len));
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %*c %d", &ppid) == 1 && ppid == pid) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace

TEST_CASE("cow home: concurrent launches on one layer each hold a work slot of their own, all their writes land; "
          "the slot past the kept ones goes after its run",
          "[home][cow][slots]") {
  require_userns();
  Layer l;
  // Each command waits for a line on a FIFO in the workspace: the test
  // holds all of them running at once, then lets them go.
  const std::string fifo = l.ws / "go";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int go = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(go >= 0);
  const unsigned n = kept_slots + 1;
  std::vector<std::unique_ptr<Process>> runs;
  for (unsigned i = 0; i < n; ++i)
    runs.push_back(std::make_unique<Process>(
        l.args("echo " + std::to_string(i) + " > ~/from-" + std::to_string(i) + " && echo ready && read x < go && "
               "echo " + std::to_string(i) + " >> ~/from-" + std::to_string(i)),
        l.opts()));
  for (auto& p : runs) p->wait_for_line("ready");
  // All running: as many slots as launches, each locked by its launch.
  const auto during = l.slots();
  CHECK(during == slot_names(n));
  for (const auto& s : during) CHECK(locked(l.dir() + "/" + s));
  std::string lines;
  for (unsigned i = 0; i < n; ++i) lines += "go\n";
  REQUIRE(::write(go, lines.data(), lines.size()) == static_cast<ssize_t>(lines.size()));
  for (auto& p : runs) {
    RunResult r = p->wait();
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  ::close(go);
  for (unsigned i = 0; i < n; ++i) {
    const std::string v = std::to_string(i);
    CHECK(read_file(l.dir() + "/upper/from-" + v) == v + "\n" + v + "\n");
    CHECK(!file_exists(l.home / ("from-" + v)));
  }
  // The kept slots stay for the next launches, unlocked; the overflow
  // slot is gone.
  const auto after = l.slots();
  CHECK(after == slot_names(kept_slots));
  for (const auto& s : after) CHECK(!locked(l.dir() + "/" + s));
  RunResult next = nsrun({"--home", "cow", "--home-layer", "slots", "--", "cat", l.home / "from-3"}, l.opts());
  CHECK(next.out == "3\n3\n");
  CHECK(l.slots() == slot_names(kept_slots));
}

TEST_CASE("cow home: a launch killed with SIGKILL (nsrun and its PID 1) leaves its slot free for the next; "
          "slots do not accumulate",
          "[home][cow][slots]") {
  require_userns();
  Layer l;
  for (int i = 0; i < 4; ++i) {
    Process p(l.args("echo x >> ~/kills; echo ready; exec sleep 60"), l.opts());
    p.wait_for_line("ready");
    std::vector<int> pidfds;
    for (pid_t c : children_of(p.pid())) {
      const int fd = static_cast<int>(::syscall(SYS_pidfd_open, c, 0));
      if (fd >= 0) pidfds.push_back(fd);
    }
    REQUIRE(!pidfds.empty());  // the sandbox's PID 1, as the host sees it
    p.signal(SIGKILL);
    for (int fd : pidfds) ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
    p.wait();
    for (int fd : pidfds) {
      struct pollfd pfd{fd, POLLIN, 0};
      CHECK(::poll(&pfd, 1, 10000) == 1);
      ::close(fd);
    }
    // Everything of the killed launch has exited: its slot is free, and
    // the next launch takes it again rather than making another.
    CHECK(l.slots() == slot_names(1));
    CHECK(!locked(l.dir() + "/work-0"));
  }
  CHECK(read_file(l.dir() + "/upper/kills") == "x\nx\nx\nx\n");

  // Killed at any moment (before, during or after the mount), with only
  // nsrun signalled: its PID 1 dies with it. Once all have exited no slot
  // is held, none is past the kept ones, and a launch runs and writes.
  for (int i = 0; i < 10; ++i) {
    Process p(l.args("echo y >> ~/later; echo ready; exec sleep 60"), l.opts());
    if (i % 2 == 1) p.wait_for_line("ready");
    p.signal(SIGKILL);
    p.wait();
  }
  CHECK(eventually([&] {
    for (const auto& s : l.slots())
      if (locked(l.dir() + "/" + s)) return false;
    return true;
  }));
  for (const auto& s : l.slots()) {
    INFO(s);
    CHECK(s.starts_with("work-"));
    CHECK(std::stoul(s.substr(5)) < kept_slots);
  }
  RunResult r = nsrun({"--home", "cow", "--home-layer", "slots", "--", "sh", "-c", "echo z > ~/ok && cat ~/ok"},
                      l.opts());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "z\n");
}

TEST_CASE("cow home: a slot the kernel would not clean is cleaned before the mount (the home stays writable); "
          "older nsrun's per-launch work directories go",
          "[home][cow][slots]") {
  require_userns();
  Layer l;
  // An older nsrun's leftovers: a work directory per launch (work/work
  // at mode 0, as overlayfs leaves it) and one caught before its rename.
  make_dir(l.state / "nsrun", 0700);
  make_dir(l.state / "nsrun/home", 0700);
  make_dir(l.dir(), 0700);
  make_dir(l.dir() + "/work-0123456789ab", 0700);
  make_dir(l.dir() + "/work-0123456789ab/work", 0);
  make_dir(l.dir() + "/.new-0123456789ab", 0700);
  RunResult first = nsrun({"--home", "cow", "--home-layer", "slots", "--", "sh", "-c", "echo 1 > ~/f"}, l.opts());
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(l.slots() == slot_names(1));

  // overlayfs empties work/work when it mounts, but one directory level
  // deep only; deeper, it mounts the layer read-only. Plant both.
  const std::string work = l.dir() + "/work-0/work";
  REQUIRE(::chmod(work.c_str(), 0700) == 0);
  write_file(work + "/file", "junk\n");
  make_dir(work + "/d");
  make_dir(work + "/d/e");
  write_file(work + "/d/e/f", "junk\n");
  RunResult r = nsrun({"--home", "cow", "--home-layer", "slots", "--", "sh", "-c", "echo 2 >> ~/f && cat ~/f"},
                      l.opts());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "1\n2\n");
  CHECK(read_file(l.dir() + "/upper/f") == "1\n2\n");
  CHECK(!file_exists(l.home / "f"));
  REQUIRE(::chmod(work.c_str(), 0700) == 0);
  RunResult left = run({"ls", "-A", work});
  CHECK(left.out.empty());
  CHECK(l.slots() == slot_names(1));

  // Level-one junk alone (a file): the kernel's own cleaning, which the
  // reuse relies on; if it stopped, the layer would mount read-only and
  // this launch would not write.
  write_file(work + "/file", "junk\n");
  RunResult again = nsrun({"--home", "cow", "--home-layer", "slots", "--", "sh", "-c", "echo 3 >> ~/f && cat ~/f"},
                          l.opts());
  INFO(again.err);
  CHECK(again.out == "1\n2\n3\n");
  REQUIRE(::chmod(work.c_str(), 0700) == 0);
  CHECK(run({"ls", "-A", work}).out.empty());
}

// The benchmark: `nsrun bench` has a home-cow row, the default
// launch on one layer of its own (nsrun-bench), measured against
// workspace-write with the home read-only (no layer of its own). No figure
// is asserted.
TEST_CASE("nsrun bench: the home-cow row runs the copy-on-write home on the nsrun-bench layer; workspace-write "
          "makes no layer",
          "[bench][home][slots]") {
  require_userns();
  TempDir state("slot-bench-state");
  RunOptions o;
  o.env = {"XDG_STATE_HOME=" + state.path()};
  o.timeout = 60s;
  RunResult ws = nsrun({"bench", "-n", "2", "--warmup", "1", "--rows", "workspace-write"}, o);
  INFO(ws.out << ws.err);
  REQUIRE(ws.exit_code == 0);
  CHECK(!file_exists(state / "nsrun/home"));
  RunResult r = nsrun({"bench", "-n", "2", "--warmup", "1", "--rows", "workspace-write,home-cow"}, o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("nsrun home-cow") != std::string::npos);
  CHECK(r.out.find("nsrun workspace-write") != std::string::npos);
  RunResult list = run({"ls", "-A", state / "nsrun/home"});
  CHECK(list.out == "nsrun-bench\n");
  CHECK(file_exists(state / "nsrun/home/nsrun-bench/upper"));
  CHECK(file_exists(state / "nsrun/home/nsrun-bench/work-0"));
}

// The kernel's fallback when it cannot empty a work directory is to mount
// the layer read-only, with only a kernel log line. A writable layer asked
// for and mounted read-only must be the overlay refused, said as such
// (the home's fallback: read-only, caches redirected), never a home that is
// silently read-only. An immutable file in work/work (only root can make
// one) is something neither the kernel nor nsrun can remove.
TEST_CASE("cow home: a layer the kernel would mount only read-only is the overlay refused, stated; the real home "
          "untouched",
          "[home][cow][slots]") {
  require_userns();
  if (::geteuid() != 0) unavailable("chattr +i", "only root can make a file immutable");
  Layer l;
  write_file(l.home / ".bashrc", "# real\n");
  RunResult first = nsrun({"--home", "cow", "--home-layer", "slots", "--", "true"}, l.opts());
  REQUIRE(first.exit_code == 0);
  const std::string work = l.dir() + "/work-0/work";
  REQUIRE(::chmod(work.c_str(), 0700) == 0);
  write_file(work + "/stuck", "");
  RunResult attr = run({"chattr", "+i", work + "/stuck"});
  if (attr.exit_code != 0) unavailable("chattr +i", "this file system refused it: " + attr.err);
  RunResult r = nsrun({"--home", "cow", "--home-layer", "slots", "--", "sh", "-c",
                       "echo x >> ~/.bashrc 2>/dev/null && echo wrote; echo \"$XDG_CACHE_HOME\""},
                      l.opts());
  run({"chattr", "-i", work + "/stuck"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("wrote") == std::string::npos);
  CHECK(r.out.find(l.dir() + "/redirect") != std::string::npos);
  CHECK(r.err.find("no overlay for the home here (overlay-unavailable") != std::string::npos);
  CHECK(r.err.find("read-only") != std::string::npos);
  CHECK(read_file(l.home / ".bashrc") == "# real\n");
}
