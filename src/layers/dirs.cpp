#include "layers/dirs.hpp"

#include "sys/io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

namespace nsrun::layers {

Result<Fd> open_private_dir(const std::string& path, mode_t mode, bool create) {
  if (!path.starts_with('/')) return fail(Error{"layer directory", EINVAL, path, "not an absolute path"});
  Fd at(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!at) return fail(sys_error("open", "/"));
  std::string done;
  std::string_view rest = path;
  while (true) {
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) break;
    const std::size_t slash = rest.find('/');
    const std::string part(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    done += "/" + part;
    if (part == "." || part == "..") return fail(Error{"layer directory", EINVAL, path, "a '.' or '..' component"});
    int fd = ::openat(at.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(at.get(), part.c_str(), mode) != 0 && errno != EEXIST) return fail(sys_error("mkdir", done));
      fd = ::openat(at.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      // O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR (or ELOOP).
      struct stat st{};
      if ((errno == ENOTDIR || errno == ELOOP) && ::fstatat(at.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode))
        return fail(Error{"layer directory", ELOOP, done, "a symlink (nsrun follows none here; give the resolved path)"});
      return fail(sys_error("open", done));
    }
    at.reset(fd);
  }
  struct stat st{};
  if (::fstat(at.get(), &st) != 0) return fail(sys_error("stat", path));
  if (st.st_uid != ::geteuid())
    return fail(Error{"layer directory", EPERM, path,
                      fmt::format("owned by uid {}, not by the caller (uid {})", st.st_uid, ::geteuid())});
  return at;
}

Result<Fd> open_dir_at(int dir, const std::string& name, const std::string& shown) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail(sys_error("open", shown));
  return fd;
}

Result<std::vector<std::string>> list_dir(int dir, const std::string& shown) {
  // fdopendir() takes the fd: give it its own, opened for reading.
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(sys_error("open", shown));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    return fail(sys_error("opendir", shown, err));
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return fail(sys_error("readdir", shown, err));
  std::sort(names.begin(), names.end());
  return names;
}

Error too_deep(const std::string& shown) {
  return Error{"walk", ENAMETOOLONG, shown, fmt::format("more than {} directories deep", max_walk_depth)};
}

namespace {

// Below this depth remove_tree() moves a directory up to the top of the
// tree being removed instead of descending (the tree is the command's: any
// depth), so the recursion and the fds it holds, one a level, stay bounded.
constexpr int hoist_depth = 128;

// `top`: the tree's top directory (an fd), once opened; `depth`: of `name`.
Result<void> remove_at(int dir, const std::string& name, const std::string& shown, int top, int depth) {
  struct stat st{};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return fail(sys_error("stat", shown));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) return fail(sys_error("remove", shown));
    return {};
  }
  if (depth > hoist_depth && top >= 0) {
    // Moved, not followed: renameat() takes the name, never a link's
    // target; the top's loop below removes it from there.
    const std::string moved = fmt::format(".nsrun-deep-{}", random_hex(12));
    if (::renameat(dir, name.c_str(), top, moved.c_str()) != 0) return fail(sys_error("rename", shown));
    return {};
  }
  // overlayfs leaves work/work at mode 0; the command may have made its
  // own directories unreadable.
  // AT_SYMLINK_NOFOLLOW: a running command may swap the directory for a
  // symlink between the stat and the chmod (discard of a live run).
  if ((st.st_mode & 0700) != 0700)
    (void)::fchmodat(dir, name.c_str(), (st.st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW);
  auto sub = open_dir_at(dir, name, shown);
  if (!sub) return fail(sub.error());
  struct stat inner{};
  if (::fstat(sub->get(), &inner) != 0) return fail(sys_error("stat", shown));
  if (inner.st_dev != st.st_dev || inner.st_ino != st.st_ino)
    return fail(Error{"remove", ESTALE, shown, "replaced while being removed"});
  const int here_top = top >= 0 ? top : sub->get();
  // At the top, again until empty: what was moved up meanwhile is there.
  while (true) {
    auto names = list_dir(sub->get(), shown);
    if (!names) return fail(names.error());
    if (names->empty()) break;
    for (const auto& n : *names)
      if (auto r = remove_at(sub->get(), n, shown + "/" + n, here_top, depth + 1); !r) return r;
    if (top >= 0) break;
  }
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return fail(sys_error("remove", shown));
  return {};
}

}  // namespace

namespace {

void add_tree(int dir, const std::string& name, dev_t dev, TreeSize& out) {
  WalkLevel level;
  struct stat st{};
  if (level.too_deep() || ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (S_ISREG(st.st_mode)) {
    ++out.files;
    out.bytes += static_cast<uint64_t>(st.st_size);
    return;
  }
  if (!S_ISDIR(st.st_mode) || (dev != 0 && st.st_dev != dev)) return;
  Fd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub) return;
  auto names = list_dir(sub.get(), name);
  if (!names) return;
  for (const auto& n : *names) add_tree(sub.get(), n, st.st_dev, out);
}

}  // namespace

TreeSize tree_size(int dir, const std::string& name) {
  TreeSize out;
  add_tree(dir, name, 0, out);
  return out;
}

Result<void> remove_tree(int dir, const std::string& name, const std::string& shown) {
  return remove_at(dir, name, shown, -1, 0);
}

std::string random_hex(std::size_t hex) {
  std::string out;
  while (out.size() < hex) {
    unsigned char buf[16];
    ssize_t n = ::getrandom(buf, sizeof buf, 0);
    if (n <= 0) continue;
    for (ssize_t i = 0; i < n && out.size() < hex; ++i) out += fmt::format("{:02x}", buf[i]);
  }
  out.resize(hex);
  return out;
}

Result<void> write_atomically(int dir, const std::string& name, std::string_view text, mode_t mode,
                              const std::string& shown) {
  const std::string tmp = fmt::format(".{}.{}", name, random_hex(8));
  Fd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return fail(sys_error("create", shown));
  if (auto r = write_all(fd.get(), text, "write", shown); !r) {
    ::unlinkat(dir, tmp.c_str(), 0);
    return r;
  }
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    return fail(sys_error("rename", shown, err));
  }
  return {};
}

Result<std::string> read_at(int dir, const std::string& name, const std::string& shown) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail(sys_error("open", shown));
  return read_all(fd.get(), "read", shown, std::size_t{1} << 40);
}

}  // namespace nsrun::layers
