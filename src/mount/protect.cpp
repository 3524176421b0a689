#include "mount/protect.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <memory>

#include <fmt/core.h>

#include "policy/protect.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

constexpr uint64_t sealed_attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;

Result<void> attach_on(int mnt, int dest, std::string_view path) {
  if (::move_mount(mnt, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return fail(sys_error("protect: mount on", path));
  return {};
}

// Only ever sets flags: clearing one the kernel locked is EPERM.
Result<void> set_flags(int mnt, uint64_t attrs, bool recursive, std::string_view path) {
  struct mount_attr a{};
  a.attr_set = attrs;
  if (::mount_setattr(mnt, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a) != 0)
    return fail(sys_error("protect: mount_setattr", path));
  return {};
}

// A clone of `at` (with what is mounted below it when `recursive`) with
// `attrs` set: one system call where the kernel has open_tree_attr, the
// errors named as the two calls name them.
Result<Fd> clone_flagged(int at, bool recursive, uint64_t attrs, std::string_view what, std::string_view path) {
  const char* failed = nullptr;
  Fd tree(sys::open_tree_attrs(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
                               attrs, &failed));
  if (tree) return tree;
  if (failed != nullptr && std::string_view(failed) == "mount_setattr") return fail(sys_error("protect: mount_setattr", path));
  return fail(sys_error(what, path));
}

// `at` bound read-only on itself, with what is mounted below it: writes are
// EROFS, and as a mount point it cannot be removed, renamed or replaced by
// a rename onto it (EBUSY), nor hard-linked elsewhere (EXDEV).
Result<void> read_only_on_itself(int at, std::string_view path) {
  auto tree = clone_flagged(at, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "protect: bind", path);
  if (!tree) return fail(tree.error());
  return attach_on(tree->get(), at, path);
}

// A symlink at (or on the way to) a protected path: the link is not
// followed (it could lead anywhere, out of the root too); /dev/null goes on
// the link itself, sealed (nodev: opening it is EACCES). Through the name the
// command reaches nothing, and it cannot remove or retarget the link.
Result<void> cover_link(int host, int link, std::string_view path) {
  Fd null(sys::openat2(host, "dev/null", O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS));
  if (!null) return fail(sys_error("protect: open", "/dev/null"));
  auto tree = clone_flagged(null.get(), false, sealed_attrs, "protect: bind /dev/null on", path);
  if (!tree) return fail(tree.error());
  return attach_on(tree->get(), link, path);
}

// A directory every name of which is one of its own entries bound on a
// read-only tmpfs: the entries stay what they are (a directory in it stays
// writable below), but no new name can be made in the directory, by
// open(O_CREAT), mkdir, mknod, symlink, link or rename (EROFS), and none of
// its entries can be removed or renamed (EBUSY). A missing protected name in
// it therefore cannot come to exist. Nothing is written on the host: the
// tmpfs lives in this mount namespace only.
Result<void> seal_directory(int dir, std::string_view path) {
  struct stat st{};
  if (::fstat(dir, &st) != 0) return fail(sys_error("protect: stat", path));
  // Already sealed (for another protected name in it), or read-only anyway.
  struct statvfs vfs{};
  if (::fstatvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) return {};
  Fd fs(::fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!fs) return fail(sys_error("protect: tmpfs for", path));
  const std::string mode = fmt::format("{:o}", st.st_mode & 07777);
  if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "mode", mode.c_str(), 0) != 0 ||
      ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "size", "1m", 0) != 0 ||
      ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return fail(sys_error("protect: tmpfs for", path));
  Fd view(::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (!view) return fail(sys_error("protect: tmpfs for", path));
  // Attached first: binds can only go on mounts of this namespace. `dir`
  // still names the directory below, so its entries are read from there.
  if (auto r = attach_on(view.get(), dir, path); !r) return r;
  Fd listing(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!listing) return fail(sys_error("protect: list", path));
  std::unique_ptr<DIR, int (*)(DIR*)> entries(::fdopendir(listing.get()), ::closedir);
  if (!entries) return fail(sys_error("protect: list", path));
  (void)listing.release();  // the DIR owns it now
  while (dirent* e = ::readdir(entries.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string where = fmt::format("{}/{}", path, name);
    struct stat es{};
    if (::fstatat(dir, name.c_str(), &es, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("protect: stat", where));
    if (S_ISLNK(es.st_mode)) {
      // A copy of the link: the tmpfs is read-only, so it cannot be changed.
      char target[4096];
      const ssize_t n = ::readlinkat(dir, name.c_str(), target, sizeof target - 1);
      if (n < 0) return fail(sys_error("protect: readlink", where));
      target[n] = '\0';
      if (::symlinkat(target, view.get(), name.c_str()) != 0) return fail(sys_error("protect: symlink", where));
      continue;
    }
    if (S_ISDIR(es.st_mode) ? ::mkdirat(view.get(), name.c_str(), 0700) != 0
                            : Fd(::openat(view.get(), name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600))
                                  .get() < 0)
      return fail(sys_error("protect: mount point", where));
    Fd tree(::open_tree(dir, name.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW));
    if (!tree) return fail(sys_error("protect: bind", where));
    Fd point(::openat(view.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!point) return fail(sys_error("protect: open", where));
    if (auto r = attach_on(tree.get(), point.get(), where); !r) return r;
  }
  // The tmpfs alone; the entries bound on it keep their own flags.
  return set_flags(view.get(), MOUNT_ATTR_RDONLY, false, path);
}

// A directory on the way to a protected path becomes a mount point (bound
// on itself), so it cannot be renamed away and replaced by a new one with
// the protected name inside (rename of a mount point is EBUSY). One that
// is a mount already (the writable root, an earlier pin) stays as it is.
Result<void> pin_directory(int parent, const std::string& name, Fd& dir, std::string_view path) {
  struct statx sx{};
  if (::statx(dir.get(), "", AT_EMPTY_PATH, STATX_INO, &sx) != 0) return fail(sys_error("protect: statx", path));
  if ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT)) return {};
  Fd tree(::open_tree(dir.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (!tree) return fail(sys_error("protect: bind", path));
  if (auto r = attach_on(tree.get(), dir.get(), path); !r) return r;
  // The same name again, now the new mount's root.
  Fd again(sys::openat2(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC, 0,
                        RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH));
  struct stat a{}, b{};
  if (!again || ::fstat(again.get(), &a) != 0 || ::fstat(dir.get(), &b) != 0 || a.st_ino != b.st_ino ||
      a.st_dev != b.st_dev)
    return fail(Error{"protect", ESTALE, std::string(path), "the directory changed while it was pinned"});
  dir = std::move(again);
  return {};
}

std::string relative(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path.empty() ? std::string(".") : std::string(path);
}

}  // namespace

Result<void> protect_path(int root, int host, const MountStep& s, ProtectRoot& last) {
  // The writable root as the new root shows it, through no symlink; once
  // for all the protect steps of one root.
  if (last.source != s.source || !last.top) {
    last.source = s.source;
    last.walker = ProtectWalker();
    last.top = Fd(sys::openat2(root, relative(s.source).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS));
  }
  const Fd& top = last.top;
  // A root that is not there (an optional bind) has nothing to protect.
  if (!top && errno == ENOENT) return {};
  if (!top && errno == ELOOP)
    return fail(Error{"protect", ELOOP, s.source,
                      "a symlink in the path of the writable root (was it renamed or replaced while the sandbox "
                      "was built?)"});
  if (!top) return fail(sys_error("protect: open", s.source));
  struct Pinner : DirPinner {
    std::string_view path;
    Result<void> pin(int parent, const std::string& name, Fd& dir) override {
      return pin_directory(parent, name, dir, path);
    }
  } pinner;
  pinner.path = s.dest;
  auto walk = last.walker.walk(top.get(), s.data, &pinner);
  if (!walk) return fail(walk.error());
  switch (walk->decision.state) {
    case ProtectState::read_only: return read_only_on_itself(walk->at.get(), s.dest);
    case ProtectState::covered: {
      if (!walk->link) return read_only_on_itself(walk->at.get(), s.dest);
      // What the host's tools reach through the link, when that stays
      // inside this root (RESOLVE_BENEATH: an absolute or escaping link
      // resolves to nothing here): kept read-only too, under its own name.
      // The cover never depends on it.
      Fd target(sys::openat2(top.get(), s.data.c_str(), O_PATH | O_CLOEXEC, 0,
                             RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS));
      if (auto r = cover_link(host, walk->at.get(), s.dest); !r) return r;
      if (target) return read_only_on_itself(target.get(), s.dest + " (the link's target)");
      return {};
    }
    case ProtectState::sealed:
      return seal_directory(walk->at.get(), fmt::format("{}/{}", s.source, walk->decision.sealed_dir));
    case ProtectState::not_kept:
    case ProtectState::unreachable: return {};
  }
  return {};
}

}  // namespace nsrun
