#include "layers/changes.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <optional>

#include <fmt/core.h>

#include "layers/dirs.hpp"
#include "layers/gitbin.hpp"
#include "sys/io.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::layers {

namespace {

std::string join(std::string_view dir, std::string_view name) {
  return dir.empty() ? std::string(name) : fmt::format("{}/{}", dir, name);
}

// An xattr of `name` in directory `dir`, not following a final symlink:
// through the fd's magic link, so no path outside the fd is resolved.
std::optional<std::string> xattr_at(int dir, const std::string& name, const char* key) {
  const std::string path = fmt::format("/proc/self/fd/{}/{}", dir, name);
  char buf[4096];
  const ssize_t n = ::lgetxattr(path.c_str(), key, buf, sizeof buf);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

bool is_whiteout(int dir, const std::string& name, const struct stat& st) {
  if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) return true;
  return S_ISREG(st.st_mode) && st.st_size == 0 && xattr_at(dir, name, "user.overlay.whiteout").has_value();
}

bool is_opaque(int dir, const std::string& name) {
  auto v = xattr_at(dir, name, "user.overlay.opaque");
  return v && *v == "y";
}

Result<std::string> read_link_at(int dir, const std::string& name, const std::string& shown) {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlinkat(dir, name.c_str(), buf.data(), buf.size());
  if (n < 0) return fail(sys_error("readlink", shown));
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

// Whether two files hold the same thing: type, permission bits, and bytes
// (or link target, or device number).
Result<bool> same_file(int da, const std::string& a, const struct stat& sa, int db, const std::string& b,
                       const struct stat& sb, const std::string& shown) {
  if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT) || (sa.st_mode & 07777) != (sb.st_mode & 07777)) return false;
  if (S_ISLNK(sa.st_mode)) {
    auto x = read_link_at(da, a, shown);
    auto y = read_link_at(db, b, shown);
    if (!x) return fail(x.error());
    if (!y) return fail(y.error());
    return *x == *y;
  }
  if (!S_ISREG(sa.st_mode)) return sa.st_rdev == sb.st_rdev;
  if (sa.st_size != sb.st_size) return false;
  Fd x(::openat(da, a.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  Fd y(::openat(db, b.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!x || !y) return fail(sys_error("open", shown));
  char bx[65536], by[65536];
  while (true) {
    const ssize_t n = ::read(x.get(), bx, sizeof bx);
    if (n < 0) return fail(sys_error("read", shown));
    if (n == 0) return true;
    ssize_t got = 0;
    while (got < n) {
      const ssize_t m = ::read(y.get(), by + got, static_cast<std::size_t>(n - got));
      if (m <= 0) return false;
      got += m;
    }
    if (std::memcmp(bx, by, static_cast<std::size_t>(n)) != 0) return false;
  }
}

// What the walk saw of a change's entry: commit decides from these, and
// stats nothing twice.
struct Seen {
  struct stat upper{};
  struct stat lower{};
  bool below = false;
};

Result<void> walk(int upper, int lower, const std::string& rel, std::vector<Change>& out, std::vector<Seen>* seen) {
  const WalkLevel level;
  if (level.too_deep()) return fail(too_deep(rel));
  auto names = list_dir(upper, rel.empty() ? "." : rel);
  if (!names) return fail(names.error());
  for (const auto& name : *names) {
    const std::string path = join(rel, name);
    struct stat st{};
    if (::fstatat(upper, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", path));
    struct stat lst{};
    const bool below = lower >= 0 && ::fstatat(lower, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0;
    auto emit = [&](Change::Kind kind, bool dir) {
      out.push_back({kind, path, dir});
      if (seen) seen->push_back({st, lst, below});
    };
    if (is_whiteout(upper, name, st)) {
      if (below) emit(Change::Kind::deleted, S_ISDIR(lst.st_mode));
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (below && S_ISDIR(lst.st_mode) && !is_opaque(upper, name)) {
        if ((st.st_mode & 07777) != (lst.st_mode & 07777)) emit(Change::Kind::modified, true);
        auto u = open_dir_at(upper, name, path);
        if (!u) return fail(u.error());
        auto l = open_dir_at(lower, name, path);
        if (!l) return fail(l.error());
        if (auto r = walk(u->get(), l->get(), path, out, seen); !r) return r;
      } else {
        emit(below ? Change::Kind::replaced : Change::Kind::added, true);
      }
      continue;
    }
    if (!below) {
      emit(Change::Kind::added, false);
      continue;
    }
    if (S_ISDIR(lst.st_mode)) {
      emit(Change::Kind::replaced, false);
      continue;
    }
    auto same = same_file(upper, name, st, lower, name, lst, path);
    if (!same) return fail(same.error());
    if (!*same) emit(Change::Kind::modified, false);
  }
  return {};
}

// The directory holding `rel`'s last component, opened below `root`
// through no symlink and no "..".
Result<Fd> open_parent(int root, std::string_view rel, std::string& name) {
  const std::size_t slash = rel.find_last_of('/');
  name = std::string(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
  const std::string parent = slash == std::string_view::npos ? "." : std::string(rel.substr(0, slash));
  constexpr uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  // A path the kernel takes whole (under PATH_MAX) in one open; a longer
  // one (a tree the command made deeper than that) in pieces that are,
  // each beneath the last, so it is applied too, not failed on
  // ENAMETOOLONG.
  std::string_view rest = parent;
  Fd at;
  while (true) {
    std::string_view piece = rest;
    if (piece.size() >= PATH_MAX) {
      const std::size_t cut = piece.find_last_of('/', PATH_MAX - 1);
      if (cut == std::string_view::npos || cut == 0) return fail(sys_error("open", parent, ENAMETOOLONG));
      piece = piece.substr(0, cut);
    }
    const int fd = sys::openat2(at ? at.get() : root, std::string(piece).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                                0, resolve);
    if (fd < 0) return fail(sys_error("open", parent));
    at = Fd(fd);
    if (piece.size() == rest.size()) return at;
    rest = rest.substr(piece.size() + 1);
  }
}

// ---------------------------------------------------------------- patch

constexpr off_t max_patch_file = off_t{16} << 20;

struct FileState {
  uint32_t mode = 0;    // git's: 0100644, 0100755, 0120000
  std::string data;     // contents, or the link target
};

std::optional<uint32_t> git_mode(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return 0120000;
  if (S_ISREG(st.st_mode)) return (st.st_mode & 0111) ? 0100755 : 0100644;
  return std::nullopt;
}

Result<std::optional<FileState>> read_state(int dir, const std::string& name, const std::string& shown) {
  struct stat st{};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", shown));
  auto mode = git_mode(st);
  if (!mode) return std::optional<FileState>();
  // The command chooses the sizes: a sparse 64 GiB file must not be read
  // into memory to print a patch (it is listed as not in the patch).
  if (S_ISREG(st.st_mode) && st.st_size > max_patch_file) return std::optional<FileState>();
  FileState f;
  f.mode = *mode;
  if (S_ISLNK(st.st_mode)) {
    auto t = read_link_at(dir, name, shown);
    if (!t) return fail(t.error());
    f.data = std::move(*t);
  } else {
    auto d = read_at(dir, name, shown);
    if (!d) return fail(d.error());
    f.data = std::move(*d);
  }
  return std::optional<FileState>(std::move(f));
}

struct Pair {
  std::optional<FileState> before, after;
  bool special = false;  // a device, fifo or socket: not in a patch
};
using Pairs = std::map<std::string, Pair>;

// Every file of the tree `name` in `dir` (the tree itself when a file),
// into `before` or `after`; whiteouts are skipped.
Result<void> gather(int dir, const std::string& name, const std::string& path, bool after, Pairs& pairs) {
  const WalkLevel level;
  if (level.too_deep()) return fail(too_deep(path));
  struct stat st{};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", path));
  if (is_whiteout(dir, name, st)) return {};
  if (S_ISDIR(st.st_mode)) {
    auto sub = open_dir_at(dir, name, path);
    if (!sub) return fail(sub.error());
    auto names = list_dir(sub->get(), path);
    if (!names) return fail(names.error());
    for (const auto& n : *names)
      if (auto r = gather(sub->get(), n, join(path, n), after, pairs); !r) return r;
    return {};
  }
  auto state = read_state(dir, name, path);
  if (!state) return fail(state.error());
  Pair& p = pairs[path];
  if (!*state) p.special = true;
  (after ? p.after : p.before) = std::move(*state);
  return {};
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

void emit_line(std::string& out, char sign, const std::string& line) {
  out += sign;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

std::string range(std::size_t start, std::size_t count) {
  // A hunk side with no lines names the line before it.
  if (count == 0) return fmt::format("{},0", start == 0 ? 0 : start - 1);
  if (count == 1) return fmt::format("{}", start);
  return fmt::format("{},{}", start, count);
}

// One hunk around the changed middle (the common head and tail trimmed),
// with up to three lines of context on each side.
void emit_hunk(std::string& out, const std::string& a, const std::string& b) {
  const auto x = split_lines(a), y = split_lines(b);
  std::size_t head = 0;
  while (head < x.size() && head < y.size() && x[head] == y[head]) ++head;
  std::size_t tail = 0;
  while (tail < x.size() - head && tail < y.size() - head && x[x.size() - 1 - tail] == y[y.size() - 1 - tail]) ++tail;
  const std::size_t before = std::min<std::size_t>(head, 3), after = std::min<std::size_t>(tail, 3);
  const std::size_t from = head - before;
  const std::size_t old_count = x.size() - head - tail + before + after;
  const std::size_t new_count = y.size() - head - tail + before + after;
  out += fmt::format("@@ -{} +{} @@\n", range(from + 1, old_count), range(from + 1, new_count));
  for (std::size_t i = from; i < head; ++i) emit_line(out, ' ', x[i]);
  for (std::size_t i = head; i < x.size() - tail; ++i) emit_line(out, '-', x[i]);
  for (std::size_t i = head; i < y.size() - tail; ++i) emit_line(out, '+', y[i]);
  for (std::size_t i = x.size() - tail; i < x.size() - tail + after; ++i) emit_line(out, ' ', x[i]);
}

bool binary(const std::optional<FileState>& f) {
  return f && f->data.find('\0', 0) != std::string::npos;
}

void emit_pair(std::string& out, const std::string& path, const Pair& p) {
  const std::string a = quote_path("a/" + path), b = quote_path("b/" + path);
  if (p.special) {
    out += fmt::format(
        "# nsrun: {} is a special file or over 16 MiB and is not in this patch (nsrun commit applies it)\n",
        quote_path(path));
    return;
  }
  // A change of file type (a file became a symlink): git writes a deletion
  // and a creation.
  if (p.before && p.after && (p.before->mode == 0120000) != (p.after->mode == 0120000)) {
    emit_pair(out, path, Pair{p.before, std::nullopt, false});
    emit_pair(out, path, Pair{std::nullopt, p.after, false});
    return;
  }
  out += fmt::format("diff --git {} {}\n", a, b);
  if (!p.before) out += fmt::format("new file mode {:06o}\n", p.after->mode);
  else if (!p.after) out += fmt::format("deleted file mode {:06o}\n", p.before->mode);
  else if (p.before->mode != p.after->mode)
    out += fmt::format("old mode {:06o}\nnew mode {:06o}\n", p.before->mode, p.after->mode);
  const std::string& old_data = p.before ? p.before->data : std::string();
  const std::string& new_data = p.after ? p.after->data : std::string();
  if (old_data == new_data) return;
  if (binary(p.before) || binary(p.after)) {
    // git apply takes a binary hunk only with both full blob ids (zeros
    // for a side that does not exist), and checks the bytes against them.
    const std::string zero(40, '0');
    out += fmt::format("index {}..{}\nGIT binary patch\n", p.before ? git_blob_id(old_data) : zero,
                       p.after ? git_blob_id(new_data) : zero);
    // The forward hunk, then the reverse one (git apply -R).
    out += git_binary_literal(new_data);
    out += git_binary_literal(old_data);
    return;
  }
  out += fmt::format("--- {}\n+++ {}\n", p.before ? a : "/dev/null", p.after ? b : "/dev/null");
  emit_hunk(out, old_data, new_data);
}

// ---------------------------------------------------------------- commit

bool changed_since(const struct stat& st, const struct timespec& start) {
  return st.st_ctim.tv_sec > start.tv_sec || (st.st_ctim.tv_sec == start.tv_sec && st.st_ctim.tv_nsec >= start.tv_nsec);
}

// Whether anything in the tree `name` in `dir` changed since `start`.
bool tree_changed(int dir, const std::string& name, const struct timespec& start) {
  const WalkLevel level;
  if (level.too_deep()) return true;  // unknown: a conflict (fail closed)
  struct stat st{};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno != ENOENT;
  if (changed_since(st, start)) return true;
  if (!S_ISDIR(st.st_mode)) return false;
  Fd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub) return true;
  auto names = list_dir(sub.get(), name);
  if (!names) return true;
  for (const auto& n : *names)
    if (tree_changed(sub.get(), n, start)) return true;
  return false;
}

Result<void> copy_bytes(int from, int to, const std::string& shown) {
  while (true) {
    const ssize_t n = ::copy_file_range(from, nullptr, to, nullptr, 1 << 30, 0);
    if (n == 0) return {};
    if (n > 0) continue;
    if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return fail(sys_error("copy", shown));
    break;
  }
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("read", shown));
    if (n == 0) return {};
    if (auto r = write_all(to, std::string_view(buf, static_cast<std::size_t>(n)), "write", shown); !r) return r;
  }
}

// Temporary names in the workspace: one random prefix per commit, then a
// counter (O_EXCL catches a name someone else took), not a getrandom()
// per file.
std::string temp_name() {
  static const std::string prefix = fmt::format(".nsrun-commit-{}-", random_hex(12));
  static unsigned long next = 0;
  return prefix + std::to_string(next++);
}

// A committed directory's mode: the command's permission and sticky bits,
// never a set-user-ID or set-group-ID bit it set (a set-group-ID directory
// hands its group to everything made in it later; for a root caller, a
// group the command chose in its layer). The set-group-ID bit the host's
// directory has (its own, or what mkdir inherited from a set-group-ID
// parent) stays.
Result<void> set_dir_mode(int fd, mode_t layer_mode, const std::string& path) {
  struct stat now{};
  if (::fstat(fd, &now) != 0) return fail(sys_error("stat", path));
  const mode_t mode = (layer_mode & 07777 & ~mode_t{S_ISUID | S_ISGID}) | (now.st_mode & S_ISGID);
  if (::fchmod(fd, mode) != 0) return fail(sys_error("chmod", path));
  return {};
}

// Puts the upper entry `name` (upper dir `ud`) at `name` in host dir `hd`:
// a file or symlink through a temporary name and one rename, a directory
// made and filled the same way, entry by entry. `known`: the entry's stat,
// when the caller has it.
Result<void> install(int ud, int hd, const std::string& name, const std::string& path,
                     const struct stat* known = nullptr) {
  const WalkLevel level;
  if (level.too_deep()) return fail(too_deep(path));
  struct stat st{};
  if (known) st = *known;
  else if (::fstatat(ud, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", path));
  if (is_whiteout(ud, name, st)) return {};
  if (S_ISDIR(st.st_mode)) {
    if (::mkdirat(hd, name.c_str(), 0700) != 0 && errno != EEXIST) return fail(sys_error("mkdir", path));
    auto sub_u = open_dir_at(ud, name, path);
    if (!sub_u) return fail(sub_u.error());
    auto sub_h = open_dir_at(hd, name, path);
    if (!sub_h) return fail(sub_h.error());
    auto names = list_dir(sub_u->get(), path);
    if (!names) return fail(names.error());
    for (const auto& n : *names)
      if (auto r = install(sub_u->get(), sub_h->get(), n, join(path, n)); !r) return r;
    return set_dir_mode(sub_h->get(), st.st_mode, path);
  }
  const std::string tmp = temp_name();
  // No setuid or setgid bit on what commit installs: the command set them
  // in its layer (as root inside, or as the user), and the file it makes
  // here is the caller's, so the bits would hand the caller's uid (root's,
  // for a root caller) to whoever runs it. The
  // kernel drops them on a write by anyone but root for the same reason.
  const mode_t mode = st.st_mode & 07777 & ~mode_t{S_ISUID | S_ISGID};
  if (S_ISLNK(st.st_mode)) {
    auto target = read_link_at(ud, name, path);
    if (!target) return fail(target.error());
    if (::symlinkat(target->c_str(), hd, tmp.c_str()) != 0) return fail(sys_error("symlink", path));
  } else if (S_ISREG(st.st_mode)) {
    Fd from(::openat(ud, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!from) return fail(sys_error("open", path));
    Fd to(::openat(hd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!to) return fail(sys_error("create", path));
    auto r = copy_bytes(from.get(), to.get(), path);
    if (r && ::fchmod(to.get(), mode) != 0) r = fail(sys_error("chmod", path));
    if (r) {
      const struct timespec times[2] = {st.st_atim, st.st_mtim};
      (void)::futimens(to.get(), times);
    }
    if (!r) {
      ::unlinkat(hd, tmp.c_str(), 0);
      return r;
    }
  } else if (S_ISFIFO(st.st_mode)) {
    if (::mkfifoat(hd, tmp.c_str(), mode) != 0) return fail(sys_error("mkfifo", path));
  } else {
    return fail(Error{"commit", EPERM, path, "a device or socket (nsrun commits files, symlinks and directories)"});
  }
  // A directory where the file goes: rename() cannot replace it.
  struct stat host{};
  const bool there = ::fstatat(hd, name.c_str(), &host, AT_SYMLINK_NOFOLLOW) == 0;
  if (there && S_ISDIR(host.st_mode))
    if (auto r = remove_tree(hd, name, path); !r) {
      ::unlinkat(hd, tmp.c_str(), 0);
      return r;
    }
  // Over an existing file, exchange the two names and then remove the old
  // one (now at the temporary name): the path holds the old file or the new
  // one at every instant, as with a plain rename, but ext4 does not start
  // writing the new file out, which it does for a rename that replaces a
  // file (auto_da_alloc) and which made commit several times cp's cost.
  const bool replacing = there && !S_ISDIR(host.st_mode);
  if (replacing && ::renameat2(hd, tmp.c_str(), hd, name.c_str(), RENAME_EXCHANGE) == 0) {
    if (::unlinkat(hd, tmp.c_str(), 0) != 0) {
      // Not a file any more (a directory put there since the fstatat):
      // give the path back what it held, and say so.
      const int err = errno;
      (void)::renameat2(hd, tmp.c_str(), hd, name.c_str(), RENAME_EXCHANGE);
      ::unlinkat(hd, tmp.c_str(), 0);
      return fail(sys_error("rename", path, err));
    }
    return {};
  }
  if (::renameat(hd, tmp.c_str(), hd, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(hd, tmp.c_str(), 0);
    return fail(sys_error("rename", path, err));
  }
  return {};
}

// Whether the layer's regular file `name` (stat `st`) may be moved into a
// host directory (stat `dir`) instead of copied, with the same result a
// copy gives: the caller's file with one link and no set-ID bit (a second would tie the
// workspace to the layer), in a directory that would not give a copy
// another group (set-group-ID), and no xattr but overlayfs's bookkeeping,
// which is removed here (a copy carries no xattr; a file capability, an
// ACL, or overlayfs's metacopy or redirect, whose data is elsewhere, make
// it a copy, as before).
bool movable(int ud, const std::string& name, const struct stat& st, const struct stat& dir) {
  static const uid_t uid = ::geteuid();
  static const gid_t gid = ::getegid();
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != uid || st.st_gid != gid) return false;
  // A setuid or setgid bit: install() copies without it; a move would keep it.
  if (st.st_mode & (S_ISUID | S_ISGID)) return false;
  if ((dir.st_mode & S_ISGID) && dir.st_gid != st.st_gid) return false;
  const std::string at = fmt::format("/proc/self/fd/{}/{}", ud, name);
  char names[4096];
  const ssize_t n = ::llistxattr(at.c_str(), names, sizeof names);
  if (n < 0) return false;
  std::vector<std::string_view> ours;
  for (ssize_t i = 0; i < n;) {
    const std::string_view x(names + i);
    i += static_cast<ssize_t>(x.size()) + 1;
    const bool overlay = x.starts_with("user.overlay.") || x.starts_with("trusted.overlay.");
    if (!overlay || x.ends_with(".metacopy") || x.ends_with(".redirect")) return false;
    ours.push_back(x);
  }
  for (const auto x : ours)
    if (::lremovexattr(at.c_str(), std::string(x).c_str()) != 0) return false;
  return true;
}

// A regular file added or modified (`st` and `there`: what the walk saw in
// the layer and whether the host had the path) put at `name` in host
// directory `hd` (stat `dir`) and gone from the layer's `ud` after. When
// the run is over (`move`) and movable(), the layer's file itself goes in:
// over the host's file by exchanging the two names and unlinking the old
// one (now in the layer), onto a free name by a rename that replaces
// nothing; the path holds the old file or the new one at every instant,
// and no byte is copied. Anything else (another file system, a directory
// or a file the host put there since) takes install()'s copy, as before.
Result<void> put_file(int ud, int hd, const struct stat& dir, const std::string& name, const std::string& path,
                      const struct stat& st, bool there, bool move) {
  if (move && movable(ud, name, st, dir)) {
    if (there && ::renameat2(ud, name.c_str(), hd, name.c_str(), RENAME_EXCHANGE) == 0) {
      if (::unlinkat(ud, name.c_str(), 0) == 0) return {};
      // A directory the host put there since the walk: give it back and
      // copy as before (install() removes it).
      if (::renameat2(ud, name.c_str(), hd, name.c_str(), RENAME_EXCHANGE) != 0)
        return fail(sys_error("rename", path));
    } else if (!there && ::renameat2(ud, name.c_str(), hd, name.c_str(), RENAME_NOREPLACE) == 0) {
      return {};
    }
  }
  if (auto r = install(ud, hd, name, path, &st); !r) return r;
  if (::unlinkat(ud, name.c_str(), 0) != 0 && errno != ENOENT) return fail(sys_error("remove", path));
  return {};
}

// Up to max_config_bytes + 1 bytes of `name` in `dir`, opened through no
// symlink; nullopt when it does not exist. Not a regular file: an error.
Result<std::optional<std::string>> read_config_file(int dir, const std::string& name, const std::string& shown,
                                                    struct stat* st_out) {
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail(sys_error("open", shown, errno == ELOOP ? ELOOP : errno));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail(sys_error("stat", shown));
  if (!S_ISREG(st.st_mode)) {
    Error e = sys_error("open", shown, EINVAL);
    e.detail = "not a regular file";
    return fail(e);
  }
  if (st_out != nullptr) *st_out = st;
  std::string text;
  char buf[65536];
  while (text.size() <= max_config_bytes) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("read", shown));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return std::optional<std::string>(std::move(text));
}

constexpr std::string_view git_config_path = ".git/config";

// The host's .git/config replaced by `text`, through a temporary name in
// its directory and one rename, with the host file's mode (or 0644).
Result<void> write_config(int hd, const std::string& text, const struct stat* host) {
  const std::string tmp = temp_name();
  const mode_t mode = host != nullptr ? (host->st_mode & 0777) : 0644;
  Fd fd(::openat(hd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return fail(sys_error("create", std::string(git_config_path)));
  auto undo = [&](Error e) {
    ::unlinkat(hd, tmp.c_str(), 0);
    return fail(std::move(e));
  };
  if (auto w = write_all(fd.get(), text, "write", git_config_path); !w) return undo(w.error());
  if (::fsync(fd.get()) != 0) return undo(sys_error("sync", std::string(git_config_path)));
  if (::renameat(hd, tmp.c_str(), hd, "config") != 0) return undo(sys_error("rename", std::string(git_config_path)));
  return {};
}

bool selected(const Change& c, const std::vector<std::string>& paths) {
  if (paths.empty()) return true;
  for (const auto& p : paths) {
    if (p.empty() || p == c.path) return true;
    if (c.path.starts_with(p + "/")) return true;          // below a given directory
    if (c.dir && p.starts_with(c.path + "/")) return true;  // inside a tree that changed as a whole
  }
  return false;
}

Result<void> apply(int upper, int lower, const Change& c) {
  std::string name;
  auto hd = open_parent(lower, c.path, name);
  if (!hd) return fail(hd.error());
  auto ud = open_parent(upper, c.path, name);
  if (!ud) return fail(ud.error());
  switch (c.kind) {
    case Change::Kind::deleted:
      if (auto r = remove_tree(hd->get(), name, c.path); !r) return r;
      break;
    case Change::Kind::replaced:
      if (c.dir)
        if (auto r = remove_tree(hd->get(), name, c.path); !r) return r;
      if (auto r = install(ud->get(), hd->get(), name, c.path); !r) return r;
      break;
    case Change::Kind::added:
      if (auto r = install(ud->get(), hd->get(), name, c.path); !r) return r;
      break;
    case Change::Kind::modified:
      if (c.dir) {
        // Only its mode; what is inside has entries of its own.
        struct stat st{};
        if (::fstatat(ud->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", c.path));
        // Through an fd opened with O_NOFOLLOW: fchmodat() follows a
        // symlink the host put there since (commit --force skips the check).
        auto host_dir = open_dir_at(hd->get(), name, c.path);
        if (!host_dir) return fail(host_dir.error());
        return set_dir_mode(host_dir->get(), st.st_mode, c.path);
      }
      if (auto r = install(ud->get(), hd->get(), name, c.path); !r) return r;
      break;
  }
  // Applied: the layer no longer holds it.
  return remove_tree(ud->get(), name, c.path);
}

bool conflicts(int upper, int lower, const Change& c, const struct timespec& start) {
  std::string name;
  auto hd = open_parent(lower, c.path, name);
  // The host removed (or replaced with a symlink) a directory on the way.
  if (!hd) return true;
  struct stat host{};
  const bool there = ::fstatat(hd->get(), name.c_str(), &host, AT_SYMLINK_NOFOLLOW) == 0;
  switch (c.kind) {
    case Change::Kind::deleted:
    case Change::Kind::replaced:
      return there && tree_changed(hd->get(), name, start);
    case Change::Kind::added:
      return there && changed_since(host, start);
    case Change::Kind::modified: {
      if (!there) return true;  // the host deleted what the command changed
      if (changed_since(host, start)) return true;
      (void)upper;
      return false;
    }
  }
  return true;
}

}  // namespace

std::string quote_path(std::string_view path) {
  bool plain = true;
  for (unsigned char c : path)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') plain = false;
  if (plain) return std::string(path);
  std::string out = "\"";
  for (unsigned char c : path) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c >= 0x7f) out += fmt::format("\\{:03o}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

Result<std::vector<Change>> collect(int upper, int lower) {
  std::vector<Change> out;
  if (auto r = walk(upper, lower, "", out, nullptr); !r) return fail(r.error());
  return out;
}

std::string list(const std::vector<Change>& changes) {
  std::string out;
  for (const auto& c : changes) {
    const char letter = c.kind == Change::Kind::added      ? 'A'
                        : c.kind == Change::Kind::modified ? 'M'
                        : c.kind == Change::Kind::deleted  ? 'D'
                                                           : 'R';
    out += fmt::format("{} {}{}\n", letter, quote_path(c.path), c.dir ? "/" : "");
  }
  return out;
}

namespace {

// The git directory whose object store or index holds `path`: the prefix
// ending in a ".git" component followed by "objects" (and anything) or
// exactly "index"; nullopt otherwise.
std::optional<std::string> git_internal_dir(std::string_view path) {
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t end = std::min(path.find('/', at), path.size());
    if (path.substr(at, end - at) == ".git" && end < path.size()) {
      const std::string_view rest = path.substr(end + 1);
      if (rest == "index" || rest == "objects" || rest.starts_with("objects/")) return std::string(path.substr(0, end));
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::string bytes_text(uint64_t b) {
  if (b < 1000) return fmt::format("{} bytes", b);
  if (b < 1000'000) return fmt::format("{:.1f} kB", static_cast<double>(b) / 1e3);
  if (b < 1000'000'000) return fmt::format("{:.1f} MB", static_cast<double>(b) / 1e6);
  return fmt::format("{:.1f} GB", static_cast<double>(b) / 1e9);
}

}  // namespace

std::vector<GitInternals> split_git_internals(int upper, std::vector<Change>& changes) {
  std::vector<GitInternals> out;
  std::vector<Change> rest;
  for (auto& c : changes) {
    auto dir = git_internal_dir(c.path);
    if (!dir) {
      rest.push_back(std::move(c));
      continue;
    }
    auto it = std::find_if(out.begin(), out.end(), [&](const GitInternals& g) { return g.git_dir == *dir; });
    if (it == out.end()) it = out.insert(out.end(), GitInternals{*dir});
    ++it->entries;
    if (c.kind == Change::Kind::deleted) continue;
    const std::size_t slash = c.path.rfind('/');
    const std::string parent = c.path.substr(0, slash);
    Fd at(sys::openat2(upper, parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!at) continue;
    const TreeSize size = tree_size(at.get(), c.path.substr(slash + 1));
    it->files += size.files;
    it->bytes += size.bytes;
  }
  changes = std::move(rest);
  return out;
}

std::string describe(const GitInternals& g) {
  return fmt::format("git objects: {} files, {} in {} (objects, index; {} entries)", g.files, bytes_text(g.bytes),
                     quote_path(g.git_dir), g.entries);
}

Result<std::string> patch(int upper, int lower, const std::vector<Change>& changes) {
  Pairs pairs;
  for (const auto& c : changes) {
    if (c.kind == Change::Kind::modified && c.dir) continue;
    std::string name;
    if (c.kind != Change::Kind::added) {
      auto ld = open_parent(lower, c.path, name);
      if (!ld) return fail(ld.error());
      if (auto r = gather(ld->get(), name, c.path, false, pairs); !r) return fail(r.error());
    }
    if (c.kind != Change::Kind::deleted) {
      auto ud = open_parent(upper, c.path, name);
      if (!ud) return fail(ud.error());
      if (auto r = gather(ud->get(), name, c.path, true, pairs); !r) return fail(r.error());
    }
  }
  std::string out;
  for (const auto& [path, p] : pairs) {
    if (!p.special && p.before && p.after && p.before->mode == p.after->mode && p.before->data == p.after->data)
      continue;
    emit_pair(out, path, p);
  }
  return out;
}

Result<std::optional<ConfigReview>> review_layer_git_config(int upper, int lower) {
  std::string name;
  auto ud = open_parent(upper, git_config_path, name);
  if (!ud) {
    if (ud.error().err == ENOENT) return std::optional<ConfigReview>();
    return fail(ud.error());
  }
  ConfigReview refused;
  auto layer = read_config_file(ud->get(), name, "the layer's .git/config", nullptr);
  if (!layer) {
    refused.error = layer.error().message();
    return std::optional<ConfigReview>(std::move(refused));
  }
  if (!*layer) return std::optional<ConfigReview>();
  std::optional<std::string> host;
  if (auto hd = open_parent(lower, git_config_path, name)) {
    auto h = read_config_file(hd->get(), name, "the host's .git/config", nullptr);
    if (!h) {
      refused.error = h.error().message();
      return std::optional<ConfigReview>(std::move(refused));
    }
    host = std::move(*h);
  } else if (hd.error().err != ENOENT) {
    return fail(hd.error());
  }
  return std::optional<ConfigReview>(review_git_config(host, **layer));
}

namespace {

// The review, and the host's file rewritten with the keys that run
// nothing when there is one such change: never the command's bytes, the
// canonical writing of what was judged (policy/gitconfig.hpp).
Result<GitConfigOutcome> commit_git_config(int upper, int lower) {
  GitConfigOutcome out;
  auto review = review_layer_git_config(upper, lower);
  if (!review) return fail(review.error());
  if (!*review) return out;
  out.review = std::move(**review);
  if (!out.review.error.empty()) return out;
  const bool any_applied = std::any_of(out.review.changes.begin(), out.review.changes.end(),
                                       [](const ConfigKeyChange& c) { return c.refused.empty(); });
  if (!any_applied) return out;
  std::string name;
  auto hd = open_parent(lower, git_config_path, name);
  if (!hd) return fail(hd.error());
  struct stat host{};
  const bool there = ::fstatat(hd->get(), name.c_str(), &host, AT_SYMLINK_NOFOLLOW) == 0;
  if (auto r = write_config(hd->get(), serialize(out.review.result), there ? &host : nullptr); !r) return fail(r.error());
  out.written = true;
  if (!out.review.any_refused()) {
    auto ud = open_parent(upper, git_config_path, name);
    if (ud && ::unlinkat(ud->get(), name.c_str(), 0) != 0 && errno != ENOENT)
      return fail(sys_error("remove", std::string(git_config_path)));
  }
  return out;
}

}  // namespace

Result<CommitOutcome> commit(int upper, int lower, const CommitOptions& o) {
  std::vector<Change> changes;
  std::vector<Seen> seen;
  if (auto r = walk(upper, lower, "", changes, &seen); !r) return fail(r.error());
  CommitOutcome out;
  // A file added or modified: applied by put_file(), its conflict decided
  // from the walk's stat of the host's file (taken during this commit).
  auto plain_file = [&](std::size_t i) {
    const Change& c = changes[i];
    return !c.dir && S_ISREG(seen[i].upper.st_mode) &&
           (c.kind == Change::Kind::added || c.kind == Change::Kind::modified);
  };
  std::vector<std::size_t> todo;
  // Every check before any write: a commit that applies one file must not
  // make the next one look changed.
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    if (!selected(c, o.paths)) continue;
    if (o.review_git_config && !c.dir && c.path == git_config_path && c.kind != Change::Kind::deleted) {
      // A host file changed since the run started is a conflict, as any.
      if (!o.force && seen[i].below && changed_since(seen[i].lower, o.start)) {
        out.conflicts.push_back(c);
        continue;
      }
      auto reviewed = commit_git_config(upper, lower);
      if (!reviewed) {
        out.failed.emplace_back(c, reviewed.error());
        continue;
      }
      const bool whole = reviewed->written && !reviewed->review.any_refused();
      out.git_config = std::move(*reviewed);
      // Every key applied: the file leaves the layer. Otherwise it stays
      // (`changes` then shows the refused keys only) and is reported
      // protected, with its keys named.
      if (whole) out.applied.push_back(c);
      else out.refused.push_back(c);
      continue;
    }
    if (o.is_protected && o.is_protected(c.path)) {
      out.refused.push_back(c);
      continue;
    }
    const bool conflict = plain_file(i) ? seen[i].below && changed_since(seen[i].lower, o.start)
                                        : conflicts(upper, lower, c, o.start);
    if (!o.force && conflict) {
      out.conflicts.push_back(c);
      continue;
    }
    todo.push_back(i);
  }
  // The directories of the last file applied, both sides, opened once for
  // all the files in them (the walk's order keeps them together).
  std::string parent = "\n";  // no path is this
  Fd host_dir, layer_dir;
  struct stat host_st{};
  for (const std::size_t i : todo) {
    const Change& c = changes[i];
    Result<void> r;
    if (plain_file(i)) {
      const std::size_t slash = c.path.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "" : c.path.substr(0, slash);
      std::string name;
      if (dir != parent) {
        parent = "\n";
        auto hd = open_parent(lower, c.path, name);
        if (!hd) {
          out.failed.emplace_back(c, hd.error());
          continue;
        }
        auto ud = open_parent(upper, c.path, name);
        if (!ud) {
          out.failed.emplace_back(c, ud.error());
          continue;
        }
        if (::fstat(hd->get(), &host_st) != 0) {
          out.failed.emplace_back(c, sys_error("stat", dir));
          continue;
        }
        host_dir = std::move(*hd);
        layer_dir = std::move(*ud);
        parent = dir;
      }
      name = slash == std::string::npos ? c.path : c.path.substr(slash + 1);
      r = put_file(layer_dir.get(), host_dir.get(), host_st, name, c.path, seen[i].upper, seen[i].below, o.move);
    } else {
      // It may remove or replace a directory: open them afresh after.
      r = apply(upper, lower, c);
      parent = "\n";
    }
    if (!r) out.failed.emplace_back(c, r.error());
    else out.applied.push_back(c);
  }
  // One flush of the workspace's file system for the whole commit: what
  // nsrun reports applied is on disk when it returns, where a file put in
  // place by an exchange or moved out of the layer would otherwise wait for
  // writeback (a host crash in that window could leave it empty).
  if (!out.applied.empty() && ::syncfs(lower) != 0) return fail(sys_error("sync", "the workspace"));
  return out;
}

}  // namespace nsrun::layers
