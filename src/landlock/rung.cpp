#include "landlock/rung.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "landlock/kernel.hpp"
#include "ns/channel.hpp"
#include "ns/credentials.hpp"
#include "ns/reaper.hpp"
#include "seccomp/filter.hpp"
#include "sys/fd.hpp"

namespace nsrun::landlock {

namespace {

// The private temporary directory: mkdtemp under the caller's TMPDIR (when
// it is an absolute directory) or /tmp, so its name is unpredictable.
Result<std::string> make_tmpdir() {
  std::string base = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && t[0] == '/') {
    struct stat st{};
    if (::stat(t, &st) == 0 && S_ISDIR(st.st_mode)) base = t;
  }
  std::string templ = base + "/nsrun-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return fail(sys_error("mkdtemp", templ));
  return templ;
}

// Best effort, after every process of the run is gone. Directories the
// command made unreadable are opened up first so the removal can descend.
void remove_tree(const std::string& dir) {
  // The usual case, a command that left nothing behind: one rmdir instead
  // of two walks of the tree (about twenty system calls).
  if (::rmdir(dir.c_str()) == 0) return;
  ::nftw(dir.c_str(), [](const char* p, const struct stat* st, int type, FTW*) {
    if (type == FTW_D || type == FTW_DNR) ::chmod(p, (st->st_mode & 07777) | 0700);
    return 0;
  }, 16, FTW_PHYS | FTW_MOUNT);
  const int rc = ::nftw(dir.c_str(), [](const char* p, const struct stat*, int, FTW*) {
    return ::remove(p) == 0 || errno == ENOENT ? 0 : 1;
  }, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  if (rc != 0) fmt::print(stderr, "nsrun: warning: could not remove the private TMPDIR {}\n", printable(dir));
}

// Without a PID namespace nothing ends the command's background processes
// for us: nsrun is their subreaper, so every one of them is, or becomes, our
// child. Kill and reap until none is left.
void end_leftovers() {
  const pid_t self = ::getpid();
  while (true) {
    // The usual case, no process left, costs one call and no /proc scan.
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, WNOHANG);
    if (reaped < 0 && errno == ECHILD) return;
    if (reaped > 0) continue;
    DIR* proc = ::opendir("/proc");
    if (proc != nullptr) {
      while (dirent* e = ::readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0') continue;
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
        char buf[512];
        const ssize_t n = fd ? ::read(fd.get(), buf, sizeof buf) : -1;
        if (n <= 0) continue;
        if (parent_in_stat(std::string_view(buf, static_cast<std::size_t>(n))) == self)
          ::kill(static_cast<pid_t>(pid), SIGKILL);
      }
      ::closedir(proc);
    }
    if (::waitpid(-1, &status, 0) < 0 && errno == ECHILD) return;
  }
}

void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  const std::string prefix = fmt::format("{}=", name);
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(prefix + std::string(value));
}

}  // namespace

pid_t parent_in_stat(std::string_view stat) {
  // "pid (comm) state ppid ...": scanf would drag glibc's whole scanf and
  // strtod family into the static binary for this one field.
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return -1;
  std::string_view rest = stat.substr(paren + 1);
  if (rest.size() < 4 || rest[0] != ' ' || rest[2] != ' ') return -1;
  rest.remove_prefix(3);
  pid_t ppid = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ppid);
  if (ec != std::errc{} || ppid < 0) return -1;
  if (end != rest.data() + rest.size() && *end != ' ' && *end != '\n') return -1;
  return ppid;
}

std::vector<std::string> terminals() {
  std::vector<std::string> out;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 0) continue;
    char name[256];
    if (::ttyname_r(fd, name, sizeof name) != 0) continue;
    if (std::find(out.begin(), out.end(), std::string_view(name)) == out.end()) out.emplace_back(name);
  }
  return out;
}

Readiness assess(const Policy& policy) {
  Readiness r;
  auto abi = kernel_abi();
  if (!abi) {
    r.reason = "landlock-missing";
    r.detail = abi.error().message();
    return r;
  }
  r.abi = *abi;
  auto ruleset = make_ruleset(policy, *abi, Inputs{terminals(), {}});
  if (!ruleset) {
    r.reason = "landlock-cannot-express";
    r.detail = ruleset.error().item;
    return r;
  }
  r.ruleset = std::move(*ruleset);
  return r;
}

LaunchOutcome run(Prepared& p, const Policy& policy, Readiness ready) {
  LaunchOutcome out;
  // Without a network namespace, --network none is the filter's to keep.
  auto filter = compile_filter(policy, FilterRung::landlock);
  if (!filter) {
    out.error = filter.error();
    out.timeline = p.timeline;
    return out;
  }
  p.seccomp = std::move(*filter);
  auto tmpdir = make_tmpdir();
  if (!tmpdir) {
    out.error = tmpdir.error();
    out.timeline = p.timeline;
    return out;
  }
  // From here every way out removes the directory.
  struct Cleanup {
    std::string dir;
    ~Cleanup() { remove_tree(dir); }
  } cleanup{*tmpdir};

  auto ruleset = make_ruleset(policy, ready.abi, Inputs{terminals(), *tmpdir});
  Result<Fd> fd = ruleset ? build(*ruleset) : fail(Error{"landlock", 0, {}, "cannot express " + ruleset.error().item});
  p.timeline.mark("landlock-plan");
  if (!fd) {
    out.error = fd.error();
    out.timeline = p.timeline;
    return out;
  }
  set_env(p.env, "TMPDIR", *tmpdir);

  auto channel = make_channel();
  if (!channel) {
    out.error = channel.error();
    out.timeline = p.timeline;
    return out;
  }
  // Orphans of the command come to us, so none outlives the run.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const sigset_t original_mask = block_for_launch();
  CommandSetup setup;
  setup.landlock_ruleset = fd->get();
  setup.close_in_child = channel->parent.get();
  const pid_t child = spawn_command(channel->child.get(), p, original_mask, setup);
  if (child < 0) {
    out.error = sys_error("fork", "command");
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    out.timeline = p.timeline;
    return out;
  }
  channel->child.reset();
  fd->reset();
  out = supervise(child, channel->parent.get(), p, original_mask);
  if (out.command_started) end_leftovers();
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  return out;
}

}  // namespace nsrun::landlock
