#include "mount/executor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "mount/protect.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

using Op = MountStep::Op;

// Paths in the plan are absolute inside the new root; openat2 wants them
// relative to the root's fd.
std::string relative(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path.empty() ? std::string(".") : std::string(path);
}

// Whether relative(path) is "." (the root itself), without making it.
bool names_top(std::string_view path) { return path.find_first_not_of('/') == std::string_view::npos; }

// bwrap's modes for a mount point it has to make (ensure_file, ensure_dir):
// a directory 0755, a file 0444. They land on the host when the parent is a
// bind of a host directory.
constexpr uint32_t file_mount_point_mode = 0444;

// bwrap builds the root with umask 0, so the modes above (and --perms) are
// exact; the caller's umask is back before anything else runs.
class ExactModes {
 public:
  ExactModes() : saved_(::umask(0)) {}
  ~ExactModes() { ::umask(saved_); }
  ExactModes(const ExactModes&) = delete;
  ExactModes& operator=(const ExactModes&) = delete;

 private:
  mode_t saved_;
};

// Symlinks met while resolving an existing destination are resolved inside
// the new root (RESOLVE_IN_ROOT), never on the host; /proc magic links are
// refused outright.
Result<Fd> open_in_root(int root, std::string_view path, int flags = O_PATH) {
  int fd = sys::openat2(root, relative(path).c_str(), flags | O_CLOEXEC, 0,
                        RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) return fail(sys_error(Operation::open, path));
  return Fd(fd);
}

// The native protections (--ro, --hide, the workspace, --writable): the path
// is resolved through no symlink at all, so a writer racing nsrun cannot
// point the protection (or the write access) elsewhere by swapping a
// directory for a link. ".." stays inside the root.
// The lookups below come in two halves: the system call, which answers an
// fd or -1 with errno, and the Error made of a failure. A destination's
// lookup misses (ENOENT) for every mount point that is then made, a
// thousand times with a thousand binds under the private /tmp: that miss
// is an answer, not an error, and makes none.
int lookup_exact(int root, std::string_view path, int flags = O_PATH) {
  return sys::openat2(root, relative(path).c_str(), flags | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
}

Error exact_error(Operation op, std::string_view path, int err) {
  if (err == ELOOP)
    return sys_error(op, path, ELOOP,
                     "a symlink in the path (nsrun follows none in a path it protects or makes writable; "
                     "give the resolved path)");
  return sys_error(op, path, err);
}

Result<Fd> open_exact(int root, std::string_view path, Operation op, int flags = O_PATH) {
  int fd = lookup_exact(root, path, flags);
  if (fd >= 0) return Fd(fd);
  return fail(exact_error(op, path, errno));
}

// open_in_root(), telling whether the lookup went through a symlink: a
// first try follows none (the common case: one system call), and only a
// path that has one is looked up again, following it inside the root.
// Its failure is sys_error(Operation::open, path, errno).
int lookup_noting_links(int root, std::string_view path, bool& followed) {
  followed = false;
  const std::string rel = relative(path);
  int fd = sys::openat2(root, rel.c_str(), O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
  if (fd >= 0 || errno != ELOOP) return fd;
  followed = true;
  return sys::openat2(root, rel.c_str(), O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

Result<Fd> open_noting_links(int root, std::string_view path, bool& followed) {
  int fd = lookup_noting_links(root, path, followed);
  if (fd >= 0) return Fd(fd);
  return fail(sys_error(Operation::open, path));
}

// Whether two fds name the same inode.
bool same_object(int a, int b) {
  struct stat x{}, y{};
  return ::fstat(a, &x) == 0 && ::fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

std::string_view parent_of(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == 0 || slash == std::string_view::npos ? std::string_view("/") : path.substr(0, slash);
}

Error changed(std::string_view path, std::string_view why) {
  return sys_error(Operation::bind, path, ESTALE,
                   fmt::format("{} (was it renamed or replaced while the sandbox was built?)", why));
}

// Creates the missing part of `path` without following any symlink (the
// CVE-2019-12439 lesson: creation must not be steerable by a planted link).
// Intermediate directories get `parent_mode`; the last component is a
// directory or, with `file`, an empty file.
Result<Fd> create_in_root(int root, std::string_view path, bool file, uint32_t mode = 0755,
                          uint32_t parent_mode = 0755) {
  // `at` is the directory reached so far: the root itself (not ours to
  // close, and not worth a dup) until the first component is opened.
  Fd dir;
  int at = root;
  std::string_view rest = path;
  std::string done;
  while (true) {
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) {
      if (at == root) {
        dir.reset(::fcntl(root, F_DUPFD_CLOEXEC, 3));
        if (!dir) return fail(sys_error(Operation::dup, path));
      }
      return dir;
    }
    const std::size_t slash = rest.find('/');
    const std::string name(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    bool last = rest.find_first_not_of('/') == std::string_view::npos;
    done += '/';
    done += name;
    if (name == "..") return fail(sys_error(Operation::create, done, EINVAL, "'..' in a path to create"));

    const uint64_t strict = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    int fd = sys::openat2(at, name.c_str(), O_PATH | O_CLOEXEC | (last && file ? 0 : O_DIRECTORY), 0, strict);
    if (fd < 0 && errno == ENOENT) {
      fd = -1;
      if (last && file) {
        // The new empty file is what the caller mounts on or leaves as it
        // is: its own fd serves (move_mount takes any fd), no reopen.
        fd = ::openat(at, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST) return fail(sys_error(Operation::create, done));
      } else if (::mkdirat(at, name.c_str(), last ? mode : parent_mode) != 0 && errno != EEXIST) {
        return fail(sys_error(Operation::mkdir, done));
      } else if (!last && parent_mode != 0755) {
        // mkdirat's mode is filtered by the umask; the rule is exact.
        int made = sys::openat2(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, strict);
        if (made >= 0) {
          (void)::fchmod(made, parent_mode);
          ::close(made);
        }
      }
      if (fd < 0)
        fd = sys::openat2(at, name.c_str(), O_PATH | O_CLOEXEC | (last && file ? 0 : O_DIRECTORY), 0, strict);
    }
    if (fd < 0) {
      if (errno == ELOOP || errno == EXDEV) return fail(sys_error(Operation::create, done, errno, "refusing to follow a symlink"));
      return fail(sys_error(Operation::open, done));
    }
    dir.reset(fd);
    at = dir.get();
  }
}

Result<void> attach(int mnt, int dest, Operation op, std::string_view what, std::string_view path) {
  if (::move_mount(mnt, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return fail(sys_error_named(op, fmt::format("mount {} on", what), path, errno));
  return {};
}

Result<void> set_attrs(int mnt, uint64_t attrs, std::string_view path) {
  if (attrs == 0) return {};
  struct mount_attr a{};
  a.attr_set = attrs;
  // Only setting flags, never clearing them, keeps the ones the kernel locked
  // when the mount came from a more privileged namespace (nosuid, nodev,
  // noexec, atime): clearing those is what makes remounts fail with EPERM.
  if (::mount_setattr(mnt, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) != 0)
    return fail(sys_error(Operation::remount, path));
  return {};
}

// A clone of the tree at `src` (with what is mounted below it when
// `recursive`), `attrs` set on it: one system call where the kernel has
// open_tree_attr. Errors as the two calls gave them: the clone's names the
// source, the flags' the destination.
Result<Fd> clone_with_attrs(int src, bool recursive, uint64_t attrs, std::string_view source, std::string_view dest) {
  const char* failed = nullptr;
  Fd tree(sys::open_tree_attrs(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
                               attrs, &failed));
  if (tree) return tree;
  if (failed != nullptr && std::string_view(failed) == "mount_setattr") return fail(sys_error(Operation::remount, dest));
  return fail(sys_error(Operation::bind, source));
}

// A new superblock through the fd-based mount API: fsopen, options, create,
// fsmount. Returns the detached mount.
Result<Fd> new_filesystem(Operation op, const char* type, std::string_view options, uint64_t attrs, std::string_view path) {
  // The error's words are formatted only when there is one; errno is
  // read before them.
  auto failed = [&](int err) { return sys_error_named(op, fmt::format("mount {} on", type), path, err); };
  Fd fs(::fsopen(type, FSOPEN_CLOEXEC));
  if (!fs) return fail(failed(errno));
  // Named after the type, as mount(8) would, rather than "none".
  ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", type, 0);
  std::string_view rest = options;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string opt(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t eq = opt.find('=');
    int rc = eq == std::string::npos
                 ? ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, opt.c_str(), nullptr, 0)
                 : ::fsconfig(fs.get(), FSCONFIG_SET_STRING, opt.substr(0, eq).c_str(), opt.c_str() + eq + 1, 0);
    if (rc != 0) {
      Error e = failed(errno);
      e.detail = fmt::format("option {}", opt);
      return fail(e);
    }
  }
  if (::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) return fail(failed(errno));
  Fd mnt(::fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attrs)));
  if (!mnt) return fail(failed(errno));
  return mnt;
}

std::string tmpfs_options(uint32_t mode, uint64_t size) {
  std::string opts = fmt::format("mode={:o}", mode);
  if (size != 0) opts += fmt::format(",size={}", size);
  return opts;
}

// Whether `path` names "/" itself ("/", "//", "/./").
bool names_root(std::string_view path) {
  for (char c : path)
    if (c != '/' && c != '.') return false;
  return !path.empty() && path.find("..") == std::string_view::npos;
}

// Whether the steps need the staging area: for files of their own (data
// written into the sandbox and bound from there, a private overlay upper),
// or for a bind of the host's "/" somewhere other than "/". Stacked on the
// host's "/", the new root would be part of that recursive clone: the
// destination would show the sandbox's own root instead of the host's.
// (A tmpfs for the data files that is never attached would spare the
// pivot, but closing the last fd of a detached mount dissolves it with a
// synchronize_rcu_expedited(), some 250 µs here, more than the pivot.)
bool needs_staging(const std::vector<MountStep>& steps) {
  for (const MountStep& s : steps) {
    if ((s.op == Op::write_file && !s.source.empty()) || (s.op == Op::overlay && s.private_upper)) return true;
    if (s.op == Op::bind && !s.source_in_root && s.source_fd < 0 && names_root(s.source) && !names_root(s.dest))
      return true;
  }
  return false;
}

// Which mount, inode and file type an fd names: one statx serves every
// question a bind asks of its source (is it the host's root, a directory,
// the object the destination names). An fd names the same object for as
// long as it is open, so each is asked once.
std::optional<struct statx> mount_identity(int fd) {
  struct statx a{};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_INO | STATX_MNT_ID, &a) != 0) return std::nullopt;
  return a;
}

bool same_inode(const struct statx& a, const struct statx& b) {
  return a.stx_ino == b.stx_ino && a.stx_dev_major == b.stx_dev_major && a.stx_dev_minor == b.stx_dev_minor;
}

// Whether `a` is the root of the mount `root` (its identity) is the root
// of: a recursive clone of it takes along whatever is stacked on that
// directory.
bool same_mount_root(const std::optional<struct statx>& a, const std::optional<struct statx>& root) {
  return a && root && a->stx_mnt_id == root->stx_mnt_id && same_inode(*a, *root);
}

// Whether `fd` names the object `a` describes.
bool same_object(const std::optional<struct statx>& a, int fd) {
  const auto b = a ? mount_identity(fd) : std::nullopt;
  return b && same_inode(*a, *b);
}

// Fds whose work is done (a bind's source, its clone once attached, its
// destination), closed together: one close_range() for each run of
// consecutive numbers instead of one close() each, three system calls a
// bind fewer, which with a thousand binds is milliseconds (each system
// call costs a microsecond or more on a VM). None of them is used again,
// and all are closed before the pivot; holding a few dozen a little
// longer changes no lookup and no mount. With little room below
// RLIMIT_NOFILE (under 256 free, counting the caller's fds, still open
// here) they are closed at once, as before, so no launch runs out of fds
// it had.
class ClosedLater {
 public:
  // `host_prefix`: where the host's root is by path ("/oldroot" when the
  // root is built in the staging area, whose own /proc is empty), for
  // counting this process's open fds in its /proc/self/fd.
  explicit ClosedLater(std::string_view host_prefix) : fd_dir_(fmt::format("{}/proc/self/fd", host_prefix)) {}
  ClosedLater(const ClosedLater&) = delete;
  ClosedLater& operator=(const ClosedLater&) = delete;
  ~ClosedLater() { flush(); }

  void add(Fd fd) {
    if (!fd) return;
    if (batch_ < 0) {
      // The room left, not the limit: the caller's fds are still open here
      // (they are closed at the exec), and a caller holding 230 of 260
      // has 30 free, which a batch of 48 runs out of (EMFILE at a later
      // step, a launch refused that ought to run). Unknown (no /proc):
      // closed at once.
      struct rlimit lim{};
      const long open = open_fds(fd_dir_.c_str());
      batch_ = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && open >= 0 && lim.rlim_cur >= 256 &&
                       lim.rlim_cur - static_cast<rlim_t>(open) >= 256
                   ? 48
                   : 0;
      fds_.reserve(static_cast<std::size_t>(batch_));
    }
    if (batch_ == 0) return;  // `fd` closes here
    fds_.push_back(fd.release());
    if (fds_.size() >= static_cast<std::size_t>(batch_)) flush();
  }

  void flush() {
    std::sort(fds_.begin(), fds_.end());
    for (std::size_t i = 0; i < fds_.size();) {
      std::size_t j = i;
      while (j + 1 < fds_.size() && fds_[j + 1] == fds_[j] + 1) ++j;
      if (::close_range(static_cast<unsigned>(fds_[i]), static_cast<unsigned>(fds_[j]), 0) != 0)
        for (std::size_t k = i; k <= j; ++k) ::close(fds_[k]);
      i = j + 1;
    }
    fds_.clear();
  }

 private:
  // How many fds this process has open (those of `fd_dir` but the
  // listing's own); -1 when it cannot be told.
  static long open_fds(const char* fd_dir) {
    Fd dir(::open(fd_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return -1;
    alignas(dirent64) char buf[4096];
    long n = 0;
    while (true) {
      const ssize_t got = ::getdents64(dir.get(), buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return -1;
      if (got == 0) break;
      for (ssize_t at = 0; at < got;) {
        const auto* e = reinterpret_cast<const dirent64*>(buf + at);
        at += e->d_reclen;
        if (e->d_name[0] != '.') ++n;
      }
    }
    return n - 1;  // the listing's own fd
  }

  std::string fd_dir_;
  std::vector<int> fds_;
  int batch_ = -1;  // how many to hold; unknown until the first
};

// Assembles the new root. Where it sits while built:
// - stacked on the host's root directory ("/" of this mount namespace),
//   the usual case. A lookup that starts at our root never enters a mount
//   stacked on that very directory, so every host path still resolves as
//   on the host, and no host directory is covered. The base tmpfs is made
//   only when a step needs something below "/" before any step mounts on
//   "/" itself (the mode presets bind the host's "/" first, so then no
//   tmpfs is made at all).
// - in the staging area, when files of nsrun's own must be made there or
//   the root is an initramfs (see build_root()).
class RootBuilder {
 public:
  // `staging` invalid: the new root is stacked on `host` (the process's
  // root). `host_prefix`: where the host's root is by path ("/oldroot" in
  // the staging area, "" when stacked).
  RootBuilder(Fd staging, Fd host, Fd root, std::string host_prefix)
      : staging_(std::move(staging)), host_(std::move(host)), root_(std::move(root)),
        host_prefix_(std::move(host_prefix)), done_(host_prefix_) {}

  Result<void> run(const MountStep& s) {
    const bool mount_on_root = names_top(s.dest) && s.op != Op::set_attr && s.op != Op::mkdir &&
                               s.op != Op::chmod && s.op != Op::symlink && s.op != Op::write_file;
    if (!mount_on_root || s.source_in_root)
      if (auto r = ensure_root(); !r) return r;
    switch (s.op) {
      case Op::bind: return bind(s);
      case Op::tmpfs: return fresh(s, Operation::mount_fs, "tmpfs", tmpfs_options(s.mode, s.size));
      case Op::proc: return fresh(s, Operation::mount_proc, "proc", s.options);
      case Op::devpts: return fresh(s, Operation::mount_fs, "devpts", s.options);
      case Op::mqueue: return fresh(s, Operation::mount_fs, "mqueue", s.options);
      case Op::set_attr: {
        auto dest = open_in_root(root_.get(), s.dest);
        if (!dest) return fail(dest.error());
        return set_attrs(dest->get(), s.attrs, s.dest);
      }
      case Op::mkdir: {
        // bwrap's ensure_dir: a directory that is already there (through a
        // symlink inside the root too) keeps its mode, --perms or not; only
        // one made here takes the mode asked for.
        if (open_in_root(root_.get(), s.dest, O_PATH | O_DIRECTORY)) return {};
        auto dir = create_in_root(root_.get(), s.dest, false, s.mode, s.parent_mode);
        if (!dir) return fail(dir.error());
        return chmod_path(s.dest, s.mode);
      }
      case Op::symlink: return symlink(s);
      case Op::write_file: return write_file(s);
      case Op::chmod: return chmod_path(s.dest, s.mode);
      case Op::overlay: return overlay(s);
      case Op::protect:
        fresh_dirs_.clear();
        return protect_path(root_.get(), host_.get(), s, protect_root_);
    }
    return {};
  }

  // Closes the fds the binds are done with (ClosedLater); before the pivot.
  void close_finished() { done_.flush(); }

  Result<void> pivot() {
    if (auto r = ensure_root(); !r) return r;
    // pivot_root(".", ".") stacks the old root on top of the new one; the
    // detach then drops it, so no directory for it is needed.
    if (::fchdir(root_.get()) != 0) return fail(sys_error(Operation::chdir, "new root"));
    if (sys::pivot_root(".", ".") != 0) return fail(sys_error(Operation::pivot_root, "new root"));
    if (::umount2(".", MNT_DETACH) != 0) return fail(sys_error(Operation::detach, "old root"));
    if (::chdir("/") != 0) return fail(sys_error(Operation::chdir, "/"));
    return {};
  }

  // On an initramfs root a pivot into the new root would leave it a child
  // of the rootfs, and a process with CAP_SYS_CHROOT in a nested user
  // namespace could walk ".." from it back up to the rootfs. Instead the
  // host tree is detached from the staging area and the process chroots
  // into the new root: its root is then not its mount namespace's root,
  // so the kernel refuses it (and the command) a new user namespace, and
  // without one a process with no capabilities cannot leave a chroot.
  Result<void> enter_by_chroot() {
    if (auto r = ensure_root(); !r) return r;
    if (::umount2("/oldroot", MNT_DETACH) != 0) return fail(sys_error(Operation::detach, "old root"));
    if (::fchdir(root_.get()) != 0) return fail(sys_error(Operation::chdir, "new root"));
    if (::chroot(".") != 0) return fail(sys_error(Operation::chroot, "new root"));
    if (::chdir("/") != 0) return fail(sys_error(Operation::chdir, "/"));
    return {};
  }

 private:
  // O_PATH fds cannot be fchmod()ed: reopen for reading (non-blocking, in
  // case the path names a FIFO).
  Result<void> chmod_path(std::string_view path, uint32_t mode) {
    auto f = open_in_root(root_.get(), path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (!f) return fail(f.error());
    if (::fchmod(f->get(), mode) != 0) return fail(sys_error(Operation::chmod, path));
    return {};
  }

  // The fd of the fresh directory holding `path`, and its last component;
  // nullopt when its parent is not one.
  std::optional<std::pair<int, std::string>> in_fresh_dir(std::string_view path) const {
    // relative(path), viewed rather than copied: asked for every step.
    std::string_view rel = path;
    while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    const std::size_t slash = rel.find_last_of('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const std::string_view parent = rel.substr(0, slash);
    const std::string_view name = rel.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    for (const auto& [dir, fd] : fresh_dirs_)
      if (dir == parent) return std::make_pair(fd.get(), std::string(name));
    return std::nullopt;
  }

  // Where a mount goes. `made` when it was just made in a fresh directory:
  // a new, empty entry, so the mount covers nothing nsrun keeps an fd of.
  struct Destination {
    Fd fd;
    bool made = false;
    bool existed = false;   // found by a lookup, not created
    bool followed = false;  // that lookup went through a symlink
  };

  // Where a mount on `path` goes: made straight away in a fresh directory;
  // elsewhere resolved in the root when it exists, made (without following
  // symlinks) when it does not. An existing name in a fresh directory
  // (EEXIST: something made it before) takes the ordinary way.
  // `is_file()` -> Result<bool> is asked only when a mount point must be
  // made: a file, or a directory.
  // `exact`: the lookup follows no symlink (MountStep::no_symlinks).
  template <typename IsFile>
  Result<Destination> destination(std::string_view path, IsFile is_file, uint32_t parent_mode, bool exact) {
    if (auto at = in_fresh_dir(path)) {
      const auto& [dir, name] = *at;
      auto file = is_file();
      if (!file) return fail(file.error());
      int fd = -1;
      if (*file) {
        fd = ::openat(dir, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, file_mount_point_mode);
      } else if (::mkdirat(dir, name.c_str(), 0755) == 0) {
        fd = sys::openat2(dir, name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
      }
      if (fd >= 0) return Destination{Fd(fd), true};
      if (errno != EEXIST) return fail(sys_error(*file ? Operation::create : Operation::mkdir, path));
    }
    bool followed = false;
    const int found = exact ? lookup_exact(root_.get(), path) : lookup_noting_links(root_.get(), path, followed);
    if (found >= 0) return Destination{Fd(found), false, true, followed};
    if (const int err = errno; err != ENOENT)
      return fail(exact ? exact_error(Operation::mount_dest, path, err) : sys_error(Operation::open, path, err));
    auto file = is_file();
    if (!file) return fail(file.error());
    auto made = create_in_root(root_.get(), path, *file, *file ? file_mount_point_mode : 0755, parent_mode);
    if (!made) return fail(made.error());
    return Destination{std::move(*made), false};
  }

  // Called before a mount is attached on `dest`. A destination found by a
  // lookup may have been reached through a symlink, so it may cover any
  // fresh directory: none is trusted any more.
  void attaching(const Destination& dest) {
    if (!dest.made) fresh_dirs_.clear();
  }

  // A tmpfs for the new root, for steps that need one before (or without)
  // a mount on "/".
  Result<void> ensure_root() {
    if (root_) return {};
    auto mnt = new_filesystem(Operation::mount_fs, "tmpfs", "mode=755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "new root");
    if (!mnt) return fail(mnt.error());
    return attach_root(std::move(*mnt), Operation::mount_fs, "tmpfs", "new root");
  }

  // `mnt` becomes the new root. What was the root is hidden below it
  // anyway; stacked on the host's "/", it is detached first, so that one
  // mount only ever sits there and the final pivot leaves exactly the old
  // root on top of the new one, for the detach to take.
  Result<void> attach_root(Fd mnt, Operation op, std::string_view what, std::string_view path) {
    if (staging_) {
      if (root_) {
        if (auto r = attach(mnt.get(), root_.get(), op, what, path); !r) return r;
      } else {
        Fd at(::openat(staging_.get(), "newroot", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!at) return fail(sys_error(Operation::open, "new root"));
        if (auto r = attach(mnt.get(), at.get(), op, what, path); !r) return r;
      }
    } else {
      if (root_ && ::umount2("/", MNT_DETACH) != 0) return fail(sys_error(Operation::detach, "previous new root"));
      if (::move_mount(mnt.get(), "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0)
        return fail(sys_error_named(op, fmt::format("mount {} on", what), path, errno));
    }
    // The mount's own fd names its root, now the top of the stack.
    root_ = std::move(mnt);
    fresh_dirs_.clear();
    return {};
  }

  // An inherited fd names a mount of the caller's mount namespace, which
  // open_tree cannot clone from here (EINVAL). Its path is looked up again
  // inside the host's root as seen from this namespace, and accepted only
  // when it is the very same inode.
  Result<Fd> same_in_this_namespace(int fd) {
    const std::string label = std::to_string(fd);
    struct stat want{};
    if (::fstat(fd, &want) != 0) return fail(sys_error(Operation::bind_fd, label));
    char target[4096];
    const ssize_t n = ::readlink(fmt::format("{}/proc/self/fd/{}", host_prefix_, fd).c_str(), target, sizeof target - 1);
    if (n <= 0 || target[0] != '/') return fail(sys_error(Operation::bind_fd, label, EBADF, "no path for the fd"));
    const std::string path(target, static_cast<std::size_t>(n));
    auto found = open_in_root(host_.get(), path);
    if (!found) return fail(sys_error(Operation::bind_fd, label, found.error().err, path));
    struct stat got{};
    if (::fstat(found->get(), &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino)
      return fail(sys_error(Operation::bind_fd, label, EXDEV, fmt::format("{} is no longer the directory given", path)));
    return found;
  }

  Result<void> bind(const MountStep& s) {
    // Host sources resolve inside the host's root: an absolute symlink on the
    // host means what it means there.
    Fd src;
    bool source_followed = false;
    if (s.source_fd >= 0) {
      auto found = same_in_this_namespace(s.source_fd);
      if (!found) return fail(found.error());
      src = std::move(*found);
    } else {
      const int in = s.source_in_root ? root_.get() : host_.get();
      auto opened =
          s.no_symlinks ? open_exact(in, s.source, Operation::bind) : open_noting_links(in, s.source, source_followed);
      if (!opened) {
        if (s.optional && opened.error().err == ENOENT) return {};
        return fail(s.no_symlinks ? opened.error() : sys_error(Operation::bind, s.source, opened.error().err));
      }
      src = std::move(*opened);
    }
    // A file shown inside a hidden directory: another name of it (a hard
    // link made where the hidden one is) would show a hidden file.
    if (s.one_link) {
      bool stat_failed = false;
      if (const int err = sys::single_link_file(src.get(), &stat_failed); err != 0)
        return fail(stat_failed ? sys_error(Operation::stat, s.source, err)
                                : sys_error(Operation::bind, s.source, err, sys::single_link_rule));
    }
    // A host path bound onto itself (--ro P, the workspace, bwrap's
    // --ro-bind P P) is looked up twice: on the host, then in the new root,
    // where a writer racing nsrun may have renamed or swapped it in
    // between. The mount must land on the object that was cloned, or the
    // protection covers something else and the object stays writable.
    // (MountStep::host_view: the plan knows where the new root shows the
    // host; elsewhere, as under the private /tmp, the path is nsrun's.)
    const bool onto_itself = s.host_view;
    // The source's identity, asked once and only when needed.
    std::optional<std::optional<struct statx>> src_id;
    int src_errno = 0;
    auto source_identity = [&]() -> const std::optional<struct statx>& {
      if (!src_id) {
        src_id = mount_identity(src.get());
        src_errno = errno;
      }
      return *src_id;
    };
    // Whether the source is a file matters only for making a destination
    // (or for the root): an existing one is bound as it is, and the kernel
    // refuses a directory on a file and the reverse.
    auto is_file = [&]() -> Result<bool> {
      const auto& id = source_identity();
      if (!id) return fail(sys_error(Operation::stat, s.source, src_errno));
      return !S_ISDIR(id->stx_mode);
    };
    // Stacked on the host's "/", the new root built so far is part of a
    // recursive clone of the host's "/". A bind on "/" replaces it anyway:
    // it goes first, or it would end up stacked on top of the final root,
    // and the kernel takes a root that is not the top of its mount
    // namespace's root for a chroot and refuses new user namespaces
    // (current_chrooted()). Elsewhere the staging area is used
    // (needs_staging()); a path that reaches "/" another way is refused
    // rather than bound with the wrong contents. A ".." that climbs to the
    // host's "/" (/usr/..) lands on the new root stacked there, not on
    // the host's root mount: the host's "/" named another way, refused
    // wherever it goes (bound, it would show the sandbox's own root).
    const bool on_root = names_top(s.dest);
    const bool may_be_root = !staging_ && root_ && may_name_host_root(s, source_followed);
    if (may_be_root && same_mount_root(source_identity(), mount_identity(root_.get())))
      return fail(sys_error(Operation::bind, s.source, EINVAL, "names the host's / by \"..\": name / itself"));
    if (may_be_root && same_mount_root(source_identity(), host_identity())) {
      if (!on_root)
        return fail(sys_error(Operation::bind, s.source, EINVAL, "the host's / bound elsewhere than / must be named \"/\""));
      if (::umount2("/", MNT_DETACH) != 0) return fail(sys_error(Operation::detach, "previous new root"));
      root_.reset();
      fresh_dirs_.clear();
    }
    auto cloned = clone_with_attrs(src.get(), true, s.attrs, s.source, s.dest);
    if (!cloned) return fail(cloned.error());
    Fd tree = std::move(*cloned);
    if (on_root) {
      auto file = is_file();
      if (!file) return fail(file.error());
      if (*file) return fail(sys_error(Operation::bind, s.source, ENOTDIR, "the new root must be a directory"));
      return attach_root(std::move(tree), Operation::mount_bind, s.source, s.dest);
    }
    if (s.cover) {
      auto dest = cover_destination(s);
      if (!dest) return fail(dest.error());
      if (!*dest) return {};
      attaching(**dest);
      return attach(tree.get(), (*dest)->fd.get(), Operation::mount_bind, s.source, s.dest);
    }
    auto make_point = [&]() -> Result<bool> {
      // Missing in the new root: legitimate when an earlier mount covers
      // the parent (a workspace under the private /tmp), not when the
      // parent is still the host's directory the source was found in.
      if (onto_itself && s.no_symlinks) {
        auto host_parent = open_exact(host_.get(), parent_of(s.source), Operation::bind);
        auto root_parent = open_exact(root_.get(), parent_of(s.dest), Operation::mount_dest);
        if (!host_parent || !root_parent || same_object(host_parent->get(), root_parent->get()))
          return fail(changed(s.dest, "gone from the host between two lookups"));
      }
      return s.dest_is_file ? Result<bool>(true) : is_file();
    };
    // The source found in the new root at the destination's own path: that
    // lookup is the destination's (the same path, the same rules, nothing
    // mounted since), so its fd is where the clone goes.
    auto dest = binds_onto_own_source(s) ? Result<Destination>(Destination{std::move(src), false, true, source_followed})
                                         : destination(s.dest, make_point, s.parent_mode, s.no_symlinks);
    if (!dest) return fail(dest.error());
    // Natively the path is a protection: it must be the very object. In
    // bwrap's dialect an earlier mount may legitimately cover the path
    // (--proc /proc --bind /proc /proc, a bind onto a parent), but when a
    // symlink took either lookup somewhere else than the other, the
    // protection would follow whoever last swapped the link.
    if (onto_itself && dest->existed && (s.no_symlinks || source_followed || dest->followed) &&
        !same_object(source_identity(), dest->fd.get()))
      return fail(changed(s.dest, "not the object the source named"));
    attaching(*dest);
    auto attached = attach(tree.get(), dest->fd.get(), Operation::mount_bind, s.source, s.dest);
    done_.add(std::move(src));
    done_.add(std::move(tree));
    done_.add(std::move(dest->fd));
    return attached;
  }

  // Where a cover (a hidden socket's) goes: the existing path only. Gone
  // since the front end looked, or out of reach (a directory the sandbox's
  // root may not search, e.g. root started with another user's
  // $SSH_AUTH_SOCK: the command cannot reach it either), there is nothing
  // to cover, and nothing is made in its place, on the host least of all.
  Result<std::optional<Destination>> cover_destination(const MountStep& s) {
    auto existing = open_in_root(root_.get(), s.dest);
    if (existing) return std::optional<Destination>(Destination{std::move(*existing), false, true, false});
    const int err = existing.error().err;
    if (err == ENOENT || err == ENOTDIR || err == EACCES) return std::optional<Destination>();
    return fail(existing.error());
  }

  Result<void> fresh(const MountStep& s, Operation op, const char* type, const std::string& options) {
    auto mnt = new_filesystem(op, type, options, s.attrs, s.dest);
    if (!mnt) return fail(mnt.error());
    // overlayfs mounts a layer read-only, with only a kernel log line, when
    // it cannot set up its work directory (one it cannot empty, an upper
    // file system without a feature it needs): a writable layer asked for
    // and not given is the host refusing the overlay (overlay-unavailable,
    // the home's fallback), never a silently read-only home or workspace.
    if (op == Operation::mount_layer && !s.source.empty() && (s.attrs & MOUNT_ATTR_RDONLY) == 0) {
      struct statfs fs{};
      if (::fstatfs(mnt->get(), &fs) != 0) return fail(sys_error(op, s.dest));
      if ((fs.f_flags & ST_RDONLY) != 0) {
        Error e = sys_error_named(op, "mount overlay on", s.dest, EROFS);
        e.detail = "the kernel mounted the layer read-only (its work directory or upper file system; see dmesg)";
        return fail(e);
      }
    }
    if (names_top(s.dest)) return attach_root(std::move(*mnt), op, type, s.dest);
    if (s.cover) {
      auto dest = cover_destination(s);
      if (!dest) return fail(dest.error());
      if (!*dest) return {};
      attaching(**dest);
      return attach(mnt->get(), (*dest)->fd.get(), op, type, s.dest);
    }
    auto dest = destination(s.dest, [] { return Result<bool>(false); }, s.parent_mode, s.no_symlinks);
    if (!dest) return fail(dest.error());
    attaching(*dest);
    if (auto r = attach(mnt->get(), dest->fd.get(), op, type, s.dest); !r) return r;
    // An empty tmpfs, and its fd names its root.
    if (std::string_view(type) == "tmpfs") fresh_dirs_.emplace_back(relative(s.dest), std::move(*mnt));
    return {};
  }

  Result<void> symlink(const MountStep& s) {
    if (auto at = in_fresh_dir(s.dest)) {
      if (::symlinkat(s.source.c_str(), at->first, at->second.c_str()) == 0) return {};
      if (errno != EEXIST) return fail(sys_error(Operation::symlink, s.dest));
    }
    const std::size_t slash = s.dest.find_last_of('/');
    const std::string parent = s.dest.substr(0, slash + 1);
    const std::string name = s.dest.substr(slash + 1);
    auto dir = create_in_root(root_.get(), parent, false, 0755, s.parent_mode);
    if (!dir) return fail(dir.error());
    if (::symlinkat(s.source.c_str(), dir->get(), name.c_str()) == 0) return {};
    const int err = errno;
    // Idempotent, as bwrap 0.11: an existing link to the same target is fine.
    char target[4096];
    ssize_t n = ::readlinkat(dir->get(), name.c_str(), target, sizeof target);
    if (err == EEXIST && n >= 0 && std::string_view(target, n) == s.source) return {};
    // bwrap names what is in the way; errno 0 marks the text as the whole story.
    if (err == EEXIST && n >= 0)
      return fail(sys_error(Operation::symlink, s.dest, 0, fmt::format("existing destination is {}", std::string_view(target, n))));
    return fail(sys_error(Operation::symlink, s.dest, err));
  }

  Result<void> write_file(const MountStep& s) {
    const bool via_staging = !s.source.empty();
    Fd file;
    std::string data_name;
    if (via_staging) {
      data_name = fmt::format("data{}", data_files_++);
      file.reset(::openat(staging_.get(), data_name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, s.mode));
    } else {
      auto dir = create_in_root(root_.get(), s.dest.substr(0, s.dest.find_last_of('/') + 1), false, 0755,
                                s.parent_mode);
      if (!dir) return fail(dir.error());
      const std::string name = s.dest.substr(s.dest.find_last_of('/') + 1);
      file.reset(::openat(dir->get(), name.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, s.mode));
    }
    if (!file) return fail(sys_error(Operation::create, s.dest));
    std::string_view rest = s.data;
    while (!rest.empty()) {
      ssize_t n = ::write(file.get(), rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(sys_error(Operation::write, s.dest));
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    // The mode asked for, not the umask's version of it.
    if (::fchmod(file.get(), s.mode) != 0) return fail(sys_error(Operation::chmod, s.dest));
    if (!via_staging) return {};
    MountStep b;
    b.op = Op::bind;
    b.dest = s.dest;
    b.attrs = s.attrs;
    b.dest_is_file = true;
    // The fd it was written by names it: cloned from that, no reopen.
    auto cloned = clone_with_attrs(file.get(), false, b.attrs, s.dest, b.dest);
    if (!cloned) return fail(cloned.error());
    Fd tree = std::move(*cloned);
    if (s.cover) {
      auto covered = cover_destination(s);
      if (!covered) return fail(covered.error());
      if (!*covered) return {};
      attaching(**covered);
      return attach(tree.get(), (*covered)->fd.get(), Operation::mount_data, "data", s.dest);
    }
    auto dest = destination(s.dest, [] { return Result<bool>(true); }, s.parent_mode, false);
    if (!dest) return fail(dest.error());
    attaching(*dest);
    return attach(tree.get(), dest->fd.get(), Operation::mount_data, "data", s.dest);
  }

  // overlayfs takes its layers as paths. Each host directory is opened
  // here (inside the host's root, like a bind source) and named through
  // this process's fd links under the old root's /proc, so no host path
  // is re-resolved by the kernel and none needs escaping.
  Result<void> overlay(const MountStep& s) {
    std::vector<Fd> held;
    // The native front ends' overlays (the copy-on-write layers) name
    // their directories exactly: no symlink is followed on the way.
    auto host_dir = [&](const std::string& path) -> Result<std::string> {
      auto fd = s.no_symlinks ? open_exact(host_.get(), path, Operation::overlay_source, O_PATH | O_DIRECTORY)
                              : open_in_root(host_.get(), path, O_PATH | O_DIRECTORY);
      if (!fd) return fail(s.no_symlinks ? fd.error() : sys_error(Operation::overlay_source, path, fd.error().err));
      std::string name = fmt::format("{}/proc/self/fd/{}", host_prefix_, fd->get());
      held.push_back(std::move(*fd));
      return name;
    };
    std::string lower;
    for (const auto& layer : s.layers) {
      auto name = host_dir(layer);
      if (!name) return fail(name.error());
      lower += (lower.empty() ? "" : ":") + *name;
    }
    std::string options = fmt::format("lowerdir={}", lower);
    if (s.private_upper) {
      const std::string dir = fmt::format("overlay{}", overlays_++);
      if (::mkdirat(staging_.get(), dir.c_str(), 0700) != 0) return fail(sys_error(Operation::mkdir, "staging/" + dir));
      auto upper_fs = new_filesystem(Operation::mount_fs, "tmpfs", "mode=755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, s.dest);
      if (!upper_fs) return fail(upper_fs.error());
      Fd at(::openat(staging_.get(), dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!at) return fail(sys_error(Operation::open, "staging/" + dir));
      if (auto r = attach(upper_fs->get(), at.get(), Operation::mount_fs, "tmpfs", s.dest); !r) return r;
      for (const char* sub : {"upper", "work"}) {
        const std::string path = fmt::format("{}/{}", dir, sub);
        if (::mkdirat(staging_.get(), path.c_str(), 0755) != 0) return fail(sys_error(Operation::mkdir, "staging/" + path));
      }
      options += fmt::format(",upperdir=/{0}/upper,workdir=/{0}/work", dir);
    } else if (!s.source.empty()) {
      auto upper = host_dir(s.source);
      if (!upper) return fail(upper.error());
      auto work = host_dir(s.workdir);
      if (!work) return fail(work.error());
      options += fmt::format(",upperdir={},workdir={}", *upper, *work);
    }
    if (!s.options.empty()) options += "," + s.options;
    // A kernel or file system without rootless overlayfs refuses a
    // copy-on-write layer: a fact of the host the ladder names
    // (overlay-unavailable), never a direct bind.
    return fresh(s, s.no_symlinks ? Operation::mount_layer : Operation::mount_fs, "overlay", options);
  }

  const std::optional<struct statx>& host_identity() {
    if (!host_identity_) host_identity_ = mount_identity(host_.get());
    return *host_identity_;
  }

  // Directories nsrun just made empty (the root of each tmpfs it mounted),
  // each with an fd, while nothing can have covered them (attaching()): a
  // destination there is created straight away, without a lookup first
  // (four system calls fewer for each device node in /dev). Keyed like
  // relative().
  std::vector<std::pair<std::string, Fd>> fresh_dirs_;
  ProtectRoot protect_root_;  // the writable root the last protect step opened

  Fd staging_;  // invalid when the new root is stacked on the host's "/"
  Fd host_;     // the host's root
  Fd root_;     // the top of the new root; invalid until a step makes one
  std::string host_prefix_;
  std::optional<std::optional<struct statx>> host_identity_;  // host_'s, once asked
  unsigned data_files_ = 0;
  unsigned overlays_ = 0;
  ClosedLater done_;  // last, so its fds close before the ones above
};

// The staging area: a tmpfs over an existing host directory, visible only
// in this private mount namespace, so no host path is predictable or
// written (CVE-2019-12439). Pivoting into it moves the host's root to
// /oldroot, where every host path is found again as it was, including the
// directory the staging tmpfs covered. It holds the new root and the data
// files.
Result<Fd> enter_staging() {
  for (const char* dir : {"/tmp", "/run", "/mnt", "/var/tmp", "/dev"}) {
    struct stat st{};
    if (::lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    auto mnt = new_filesystem(Operation::mount_fs, "tmpfs", "mode=700", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, dir);
    if (!mnt) return fail(mnt.error());
    if (::mkdirat(mnt->get(), "oldroot", 0700) != 0) return fail(sys_error(Operation::mkdir, "staging/oldroot"));
    if (::mkdirat(mnt->get(), "newroot", 0755) != 0) return fail(sys_error(Operation::mkdir, "staging/newroot"));
    Fd at(::open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!at) return fail(sys_error(Operation::open, dir));
    if (auto r = attach(mnt->get(), at.get(), Operation::mount_fs, "tmpfs", dir); !r) return fail(r.error());
    if (::fchdir(mnt->get()) != 0) return fail(sys_error(Operation::chdir, "staging"));
    if (sys::pivot_root(".", "oldroot") != 0) return fail(sys_error(Operation::pivot_root, "staging"));
    if (::chdir("/") != 0) return fail(sys_error(Operation::chdir, "staging"));
    Fd staging(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!staging) return fail(sys_error(Operation::open, "staging"));
    return staging;
  }
  return fail(sys_error(Operation::staging, {}, ENOENT, "no directory to stage the new root in"));
}

// pivot_root refuses to move the initial rootfs (an initramfs as "/", as
// in a bare microVM image): its mount has no parent, and the kernel answers
// EINVAL. Stacking a recursive bind of "/" on itself and chrooting into it
// makes the root an ordinary mount with a parent, so the staging pivot
// works. The final step then differs (see RootBuilder::enter): the rootfs
// cannot be detached, so the old root is and the process chroots into the
// new root. Returns whether this was done; a tmpfs root that is a real
// mount gets the same treatment, harmlessly.
bool in_memory(const struct statfs& fs) { return fs.f_type == RAMFS_MAGIC || fs.f_type == TMPFS_MAGIC; }

Result<bool> make_root_pivotable() {
  struct statfs fs{};
  if (::statfs("/", &fs) != 0) return fail(sys_error(Operation::statfs, "/"));
  if (!in_memory(fs)) return false;
  Fd tree(::open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
  if (!tree) return fail(sys_error(Operation::bind, "/ (initramfs root)"));
  if (::move_mount(tree.get(), "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail(sys_error_named(Operation::mount_bind, "mount / on", "/ (initramfs root)", errno));
  if (::fchdir(tree.get()) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0)
    return fail(sys_error(Operation::chroot, "/ (initramfs root)"));
  return true;
}

}  // namespace

bool root_enters_by_chroot() {
  struct statfs fs{};
  return ::statfs("/", &fs) == 0 && in_memory(fs);
}

Result<void> build_root(const std::vector<MountStep>& steps, Timeline& timeline) {
  const ExactModes exact_modes;
  // pivot_root refuses a shared parent mount, and without this every mount
  // below would propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail(sys_error(Operation::make_private, "/"));
  auto ramfs_root = make_root_pivotable();
  if (!ramfs_root) return fail(ramfs_root.error());

  // The staging area only where it is needed; on an initramfs root the
  // chroot at the end detaches the host's tree by its path there.
  std::optional<RootBuilder> builder;
  if (*ramfs_root || needs_staging(steps)) {
    auto staging = enter_staging();
    if (!staging) return fail(staging.error());
    Fd host(::open("/oldroot", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!host) return fail(sys_error(Operation::open, "old root"));
    builder.emplace(std::move(*staging), std::move(host), Fd(), "/oldroot");
  } else {
    Fd host(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!host) return fail(sys_error(Operation::open, "/"));
    builder.emplace(Fd(), std::move(host), Fd(), "");
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (auto r = builder->run(steps[i]); !r) {
      // Which line of `nsrun explain`'s mount list failed (it counts from 1).
      Error e = r.error();
      e.plan_step = static_cast<uint32_t>(i);
      e.phase = Phase::build;
      return fail(e);
    }
  }
  builder->close_finished();
  timeline.mark("mounts");
  if (auto r = *ramfs_root ? builder->enter_by_chroot() : builder->pivot(); !r) {
    // Its chdir is the build's, not the command's.
    Error e = r.error();
    e.phase = Phase::build;
    return fail(e);
  }
  timeline.mark("pivot");
  return {};
}

}  // namespace nsrun
