// The watch's listener side (seccomp/writes.hpp): nsrun, outside the
// sandbox, reads the paths of a waiting call and lets it continue.
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/core.h>

#include "seccomp/notify.hpp"
#include "seccomp/precompiled.hpp"
#include "seccomp/writes.hpp"

namespace nsrun {

namespace {

// Distinct paths kept; beyond it only counted (a command making a million
// names outside must not grow nsrun without bound).
constexpr std::size_t max_attempts = 256;

// A NUL-terminated string from the command's memory, read a page at a time
// (a string near the end of a mapping must not fail for the bytes after
// it). process_vm_readv needs what ptrace needs: nsrun started the
// command and owns its user namespace. Empty on failure.
std::string read_string(pid_t pid, uint64_t address) {
  std::string out;
  if (address == 0) return out;
  constexpr std::size_t page = 4096;
  char buf[page];
  while (out.size() < PATH_MAX) {
    const std::size_t chunk = page - (address % page);
    iovec local{buf, chunk};
    iovec remote{reinterpret_cast<void*>(address), chunk};
    const ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return {};
    const auto* end = static_cast<const char*>(std::memchr(buf, '\0', static_cast<std::size_t>(n)));
    if (end != nullptr) {
      out.append(buf, static_cast<std::size_t>(end - buf));
      return out;
    }
    out.append(buf, static_cast<std::size_t>(n));
    address += static_cast<uint64_t>(n);
  }
  return {};
}

bool read_u64(pid_t pid, uint64_t address, uint64_t& out) {
  iovec local{&out, sizeof out};
  iovec remote{reinterpret_cast<void*>(address), sizeof out};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof out);
}

// The cwd or an fd of the command, as the command sees it: the kernel
// prints the path from the root of the command's mount namespace.
std::string proc_link(pid_t pid, std::string_view what) {
  const std::string link = fmt::format("/proc/{}/{}", pid, what);
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string dir_of(pid_t pid, uint64_t dirfd_arg, int dirfd_index) {
  const int dirfd = static_cast<int>(dirfd_arg);  // an int: the low 32 bits
  if (dirfd_index < 0 || dirfd == AT_FDCWD) return proc_link(pid, "cwd");
  return proc_link(pid, fmt::format("fd/{}", dirfd));
}

}  // namespace

int guard_errno(const WriteScope& scope, std::string_view syscall, const std::vector<std::string>& paths) {
  if (scope.landlock || (syscall != "rename" && syscall != "renameat" && syscall != "renameat2")) return 0;
  auto below = [](std::string_view path, std::string_view dir) {
    return path.size() > dir.size() && path.starts_with(dir) && (dir == "/" || path[dir.size()] == '/');
  };
  for (const auto& p : paths) {
    if (p.empty() || p.front() != '/' || classify(scope, p) != WritePlace::protected_) continue;
    // The held path itself, or a directory on the way to it (the executor
    // binds each on itself): a mount point, EBUSY from the kernel.
    for (const auto& h : scope.held)
      if (p == h || below(h, p)) return EROFS;
  }
  return 0;
}

void WriteLog::answer(int listener, const seccomp_notif& n, std::vector<WriteAttempt>* recorded) {
  const seccomp_notif* notif = &n;
  const pid_t pid = static_cast<pid_t>(notif->pid);
  const auto& args = notif->data.args;
  const std::string_view syscall = precompiled_syscall_name(notif->data.nr);
  const WriteCallShape* shape = write_call_shape(syscall);

  // Read while the call waits: after the answer the memory is the
  // command's again. Still racy (another thread may write it meanwhile):
  // what is read is an observation only.
  std::vector<std::string> paths;
  bool wants = shape != nullptr;
  if (wants && shape->open_how >= 0) {
    uint64_t flags = 0;
    wants = read_u64(pid, args[shape->open_how], flags) &&
            (flags & static_cast<uint64_t>(O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
  }
  if (wants) {
    if (shape->fd >= 0) paths.push_back(proc_link(pid, fmt::format("fd/{}", static_cast<int>(args[shape->fd]))));
    for (const PathArg& a : {shape->first, shape->second}) {
      if (a.path < 0) continue;
      const std::string named = read_string(pid, args[a.path]);
      if (named.empty()) {
        // AT_EMPTY_PATH: the dirfd itself.
        if (shape->flags >= 0 && (args[shape->flags] & AT_EMPTY_PATH) != 0 && a.dirfd >= 0)
          paths.push_back(dir_of(pid, args[a.dirfd], a.dirfd));
        continue;
      }
      if (named.front() == '/') {
        paths.push_back(named);
        continue;
      }
      // A dirfd that names nothing (closed, a bad number): the kernel fails
      // the call (EBADF), and the name is nowhere; resolved against "" it
      // would be listed at the root.
      const std::string base = dir_of(pid, a.dirfd >= 0 ? args[a.dirfd] : 0, a.dirfd);
      if (!base.empty()) paths.push_back(resolve_path(base, named));
    }
  }
  for (auto& p : paths)
    if (!p.empty() && p.front() == '/') p = resolve_path("/", p);
  // The pid may have been reused while we read: only a still-waiting
  // call's pid names the process we read.
  const bool valid = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &notif->id) == 0;
  const int refused = valid ? guard_errno(scope_, syscall, paths) : 0;

  auto resp_buf = std::make_unique<unsigned char[]>(notify_sizes().resp);
  std::memset(resp_buf.get(), 0, notify_sizes().resp);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(resp_buf.get());
  resp->id = notif->id;
  resp->error = -refused;
  resp->val = 0;
  resp->flags = refused != 0 ? 0 : SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  // ENOENT: the caller is gone; nothing to answer.
  (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);

  if (!valid) return;
  for (auto& p : paths)
    if (!p.empty() && p.front() == '/') record(std::move(p), syscall, pid, refused, recorded);
}

void WriteLog::record(std::string path, std::string_view syscall, pid_t pid, int refused,
                      std::vector<WriteAttempt>* recorded) {
  const WritePlace where = classify(scope_, path);
  if (where == WritePlace::writable || where == WritePlace::kernel) return;
  // The guard alone records what it refused, and only the protected path
  // of the two a rename names.
  if (!scope_.watch_all && (refused == 0 || where != WritePlace::protected_)) return;
  if (recorded != nullptr)
    recorded->push_back(WriteAttempt{path, std::string(syscall), where, 1, pid,
                                     where == WritePlace::protected_ ? protected_entry(scope_, path) : std::string(),
                                     refused});
  auto it = std::find_if(attempts_.begin(), attempts_.end(),
                         [&](const WriteAttempt& a) { return a.path == path && a.syscall == syscall; });
  if (it != attempts_.end()) {
    ++it->count;
    if (refused != 0) it->refused = refused;
    return;
  }
  if (attempts_.size() >= max_attempts) {
    ++dropped_;
    return;
  }
  std::string entry = where == WritePlace::protected_ ? protected_entry(scope_, path) : std::string();
  attempts_.push_back(WriteAttempt{std::move(path), std::string(syscall), where, 1, pid, std::move(entry), refused});
}

}  // namespace nsrun
