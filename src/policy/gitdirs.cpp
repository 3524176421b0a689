#include "policy/gitdirs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <set>

#include <fmt/core.h>

#include "policy/protect.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

// Literals of known length: no strlen per compare in the -Os build (the
// walk compares every entry of every directory).
using std::string_view_literals::operator""sv;

namespace {

// Never a symlink, never above the start, never into another mount.
constexpr uint64_t beneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV;

// A directory at this depth or deeper holds no fd while the walk is below
// it: the walk opens it from the deepest ancestor that does (a tree 100,000
// levels deep costs 64 fds, not 100,000).
constexpr std::size_t fd_levels = 64;

// How deep modules/<NAME...>/modules/... is followed inside one git
// directory (git's own submodule nesting is far shallower).
constexpr int max_gitdir_depth = 16;

constexpr std::array<std::string_view, 5> armed_names{{"config", "config.worktree", "commondir", "gitdir", "hooks"}};

std::string join(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (name.empty()) return std::string(dir);
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out.append(dir).append(1, '/').append(name);
  return out;
}

std::vector<std::string_view> components(std::string_view rel) {
  std::vector<std::string_view> out;
  while (!rel.empty()) {
    const std::size_t slash = rel.find('/');
    out.push_back(rel.substr(0, slash));
    rel = slash == std::string_view::npos ? std::string_view() : rel.substr(slash + 1);
  }
  return out;
}

bool armed_name(std::string_view c) {
  return std::any_of(armed_names.begin(), armed_names.end(), [&](std::string_view n) { return same_folded(c, n); });
}

bool git_subdirs(std::string_view c) { return same_folded(c, "modules") || same_folded(c, "worktrees"); }

using Entries = std::vector<std::pair<std::string, unsigned char>>;

// Every entry of a directory fd but "." and "..", DT_UNKNOWN resolved.
bool read_entries(int fd, Entries& out) {
  alignas(8) static thread_local char buf[32768];
  while (true) {
    const ssize_t n = ::getdents64(fd, buf, sizeof buf);
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      off += d->d_reclen;
      const char* n = d->d_name;
      if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;  // "." and ".."
      const std::string_view name = n;
      unsigned char type = d->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st{};
        if (::fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) type = IFTODT(st.st_mode);
      }
      out.emplace_back(std::string(name), type);
    }
  }
}

Fd open_dir_beneath(int at, const std::string& rel) {
  return Fd(sys::openat2(at, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath));
}

std::string why_not(int err) {
  if (err == EXDEV) return "a mount point: the scan does not cross into another file system";
  return std::strerror(err);
}

}  // namespace

bool is_git_name(std::string_view name) { return same_folded(name, ".git"sv); }

bool armed_in_gitdir(std::string_view rel) {
  const auto c = components(rel);
  if (c.empty()) return false;
  if (armed_name(c[0])) return true;
  return c.size() >= 2 && same_folded(c[0], "info") && same_folded(c[1], "attributes");
}

bool git_armed_path(std::string_view rel) {
  const auto c = components(rel);
  for (std::size_t i = 1; i < c.size(); ++i)
    if (is_git_name(c[i])) return true;
  // .git/modules/NAME.../config, .git/worktrees/NAME/gitdir: NAME is the
  // first component past modules/ (a submodule called "hooks" keeps its
  // objects committable); any armed component after it counts, the
  // "attributes" of info/ included (a name holding '/' cannot hide one).
  if (c.size() >= 4 && is_git_name(c[0]) && git_subdirs(c[1]))
    for (std::size_t j = 3; j < c.size(); ++j)
      if (armed_name(c[j]) || same_folded(c[j], "attributes")) return true;
  return false;
}

namespace {

// A symlink under .git/modules or .git/worktrees (or one of them a
// symlink): git follows it to a git directory anywhere.
bool git_link_armed(std::string_view rel) {
  const auto c = components(rel);
  return c.size() >= 2 && is_git_name(c[0]) && git_subdirs(c[1]);
}

struct Frame {
  Fd fd;  // only in the first fd_levels frames
  std::string name;
  std::string rel;
  std::vector<std::string> subdirs;
  std::size_t next = 0;
};

}  // namespace

void walk_tree(int root, const TreeVisit& v) {
  std::vector<Frame> stack;
  std::size_t dirs = 0;
  auto enter = [&](Fd fd, std::string name, std::string rel) {
    Entries entries;
    if (!read_entries(fd.get(), entries)) {
      v.unscanned(rel, why_not(errno));
      return;
    }
    // Made in place: a frame moved onto the stack cost more than the
    // rest of an empty directory's visit.
    const bool keep_fd = stack.size() < fd_levels;
    Frame& f = stack.emplace_back();
    for (auto& [n, type] : entries)
      if (v.entry(fd.get(), rel, n, type) && type == DT_DIR) f.subdirs.push_back(std::move(n));
    if (keep_fd) f.fd = std::move(fd);
    f.name = std::move(name);
    f.rel = std::move(rel);
  };
  Fd top(sys::openat2(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, beneath));
  if (!top) {
    v.unscanned("", why_not(errno));
    return;
  }
  enter(std::move(top), "", "");
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.subdirs.size()) {
      stack.pop_back();
      continue;
    }
    std::string name = std::move(f.subdirs[f.next++]);  // read once
    std::string rel = join(f.rel, name);
    if (++dirs > v.max_dirs) {
      v.unscanned(rel, fmt::format("more than {} directories: the scan stops here", v.max_dirs));
      return;
    }
    // The deepest frame with an fd, and the path from it.
    std::size_t anchor = stack.size() - 1;
    while (!stack[anchor].fd) --anchor;
    std::string path;
    for (std::size_t i = anchor + 1; i < stack.size(); ++i) path.append(stack[i].name).append(1, '/');
    path += name;
    if (path.size() >= PATH_MAX) {
      v.unscanned(rel, "too many directories deep: over PATH_MAX bytes below the first 64 levels (git cannot work there)");
      continue;
    }
    Fd d = open_dir_beneath(stack[anchor].fd.get(), path);
    if (!d) {
      if (errno != ENOENT) v.unscanned(rel, why_not(errno));
      continue;
    }
    enter(std::move(d), std::move(name), std::move(rel));
  }
}

GitArmed find_git_armed(int dir) {
  GitArmed out;
  walk_tree(dir, TreeVisit{
                     [&](int, const std::string& rel_dir, const std::string& name, unsigned char type) {
                       std::string rel = join(rel_dir, name);
                       if (git_armed_path(rel) || (type == DT_LNK && git_link_armed(rel))) {
                         out.armed.push_back(std::move(rel));
                         return false;
                       }
                       return type == DT_DIR;
                     },
                     [&](const std::string& rel, const std::string& why) { out.unread.emplace_back(rel, why); },
                 });
  return out;
}

namespace {

class HostScan {
 public:
  HostScan(const std::string& root, int top, const struct timespec& since, std::vector<std::string> held,
           const std::string& home, std::vector<GitFinding>& out)
      : root_(root), top_(top), since_(since), held_(std::move(held)), home_(home), out_(out) {}

  // The walk's visitor: every .git entry is looked at, never walked into.
  bool entry(int dir, const std::string& rel_dir, const std::string& name, unsigned char type) {
    if (!is_git_name(name)) return type == DT_DIR;
    const std::string rel = join(rel_dir, name);
    const auto sx = look(dir, name);
    if (!sx) return false;
    if (!S_ISDIR(sx->stx_mode)) {
      // A .git file (gitdir: elsewhere), a symlink, anything else: made or
      // changed now, it is a way to a git directory of the command's.
      if (changed(*sx)) armed(rel, *sx);
      else if (name == ".git" && S_ISREG(sx->stx_mode)) extras(rel_dir);
      return false;
    }
    Fd g = open_dir_beneath(dir, name);
    if (!g) {
      unscanned(rel, why_not(errno));
      return false;
    }
    // A .git a mount pinned for the whole run cannot have been moved.
    gitdir(g.get(), rel, match_protected(rel, held_) == ProtectMatch::none && moved_in(dir, *sx));
    if (name == ".git") extras(rel_dir);
    return false;
  }

  void unscanned(const std::string& rel, const std::string& why) {
    GitFinding f;
    f.root = root_;
    f.rel = rel;
    f.unscanned = true;
    f.why = why;
    out_.push_back(std::move(f));
  }

 private:
  std::optional<struct statx> look(int dir, const std::string& name) const {
    struct statx sx{};
    if (::statx(dir, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_CTIME | STATX_BTIME,
                &sx) != 0)
      return std::nullopt;
    return sx;
  }
  bool at_or_after(const struct statx_timestamp& t) const {
    return t.tv_sec > since_.tv_sec || (t.tv_sec == since_.tv_sec && static_cast<long>(t.tv_nsec) >= since_.tv_nsec);
  }
  // ctime: set by every write, link, rename and attribute change, and
  // never settable by the command (utimensat sets atime and mtime only).
  // Inside a git directory that may have been moved into place during the
  // run, every entry counts as changed, whatever its own ctime.
  bool changed(const struct statx& sx) const { return whole_ || at_or_after(sx.stx_ctime); }

  // A git directory `sx` in `parent` that may have been renamed into place
  // during the run: a rename changes the ctime of the directory moved and
  // of the directory it lands in, not of the files it holds, so a git
  // directory assembled under another name in an earlier run and renamed
  // to .git (or into modules/) now would otherwise bring its old config
  // and hooks in unseen. Both changed is also what a command that commits
  // in a nested repository and adds or removes a file beside its .git
  // looks like: its config and hooks are then quarantined too (said in
  // docs/hardening.md).
  bool moved_in(int parent, const struct statx& sx) const {
    if (!at_or_after(sx.stx_ctime)) return false;
    struct statx p{};
    return ::statx(parent, "", AT_EMPTY_PATH, STATX_CTIME, &p) != 0 || at_or_after(p.stx_ctime);
  }

  void armed(const std::string& rel, const struct statx& sx) {
    // Held, or on the way to what is held: a mount kept each directory on
    // the way in place and a non-directory met (a .git file) read-only, so
    // only the host can have changed it.
    if (match_protected(rel, held_) != ProtectMatch::none) return;
    if (!seen_.insert(rel).second) return;
    GitFinding f;
    f.root = root_;
    f.rel = rel;
    f.created = (sx.stx_mask & STATX_BTIME) != 0 && at_or_after(sx.stx_btime);
    out_.push_back(std::move(f));
  }

  // `name` in `dir` (at `rel_dir`): armed when made or changed. A
  // directory of hooks has each hook looked at instead (an edit in place
  // changes the hook's ctime, not the directory's): the changed ones are
  // armed; a changed directory none of whose hooks changed (one moved into
  // place whole, with its old files) is armed whole; hooks git never runs
  // (*.sample, what `git init` makes) are left alone.
  void item(int dir, const std::string& rel_dir, const std::string& name, bool hook_dir) {
    const auto sx = look(dir, name);
    if (!sx) return;
    const std::string rel = join(rel_dir, name);
    if (!hook_dir || !S_ISDIR(sx->stx_mode)) {
      if (changed(*sx)) armed(rel, *sx);
      return;
    }
    Fd h = open_dir_beneath(dir, name);
    Entries entries;
    if (!h || !read_entries(h.get(), entries)) {
      unscanned(rel, why_not(errno));
      return;
    }
    bool hooks = false, armed_one = false;
    for (const auto& [n, type] : entries) {
      if (n.ends_with(".sample")) continue;
      hooks = true;
      if (const auto e = look(h.get(), n); e && changed(*e)) {
        armed(join(rel, n), *e);
        armed_one = true;
      }
    }
    if (hooks && !armed_one && changed(*sx)) armed(rel, *sx);
  }

  // A git directory at `rel`: its armed entries, and the git directories
  // below its modules/ (NAME may hold '/': a directory without HEAD is a
  // NAME component) and worktrees/.
  void gitdir(int g, const std::string& grel, bool moved) {
    enum class Mode { gitdir, names, worktrees };
    struct Pending {
      std::string sub;
      Mode mode;
      int depth;
      bool whole;  // moved into place during the run, or inside one that was
    };
    std::vector<Pending> todo{{"", Mode::gitdir, 0, moved}};
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{whole_};
    while (!todo.empty()) {
      const Pending p = std::move(todo.back());
      todo.pop_back();
      whole_ = p.whole;
      const std::string rel = join(grel, p.sub);
      Fd d = p.sub.empty() ? Fd(::fcntl(g, F_DUPFD_CLOEXEC, 3)) : open_dir_beneath(g, p.sub);
      if (!d) {
        if (errno != ENOENT) unscanned(rel, why_not(errno));
        continue;
      }
      if (p.mode == Mode::gitdir) {
        for (const char* n : {"config", "config.worktree", "commondir", "gitdir"}) item(d.get(), rel, n, false);
        item(d.get(), rel, "hooks", true);
        if (const auto info = look(d.get(), "info")) {
          if (!S_ISDIR(info->stx_mode)) {
            if (changed(*info)) armed(join(rel, "info"), *info);
          } else if (Fd i = open_dir_beneath(d.get(), "info")) {
            item(i.get(), join(rel, "info"), "attributes", false);
          }
        }
        for (const char* n : {"modules", "worktrees"}) {
          const auto sx = look(d.get(), n);
          if (!sx) continue;
          if (S_ISLNK(sx->stx_mode)) {
            if (changed(*sx)) armed(join(rel, n), *sx);
          } else if (S_ISDIR(sx->stx_mode)) {
            if (p.depth >= max_gitdir_depth) unscanned(join(rel, n), "git directories nested too deep");
            else todo.push_back({join(p.sub, n), n[0] == 'm' ? Mode::names : Mode::worktrees, p.depth + 1, p.whole});
          }
        }
        continue;
      }
      Entries entries;
      if (!read_entries(d.get(), entries)) {
        unscanned(rel, why_not(errno));
        continue;
      }
      for (const auto& [n, type] : entries) {
        if (type == DT_LNK) {
          // git follows a symlinked module or worktree directory.
          if (const auto sx = look(d.get(), n); sx && changed(*sx)) armed(join(rel, n), *sx);
          continue;
        }
        if (type != DT_DIR) continue;
        if (p.depth >= max_gitdir_depth) {
          unscanned(join(rel, n), "git directories nested too deep");
          continue;
        }
        struct stat head{};
        const bool is_gitdir =
            p.mode == Mode::worktrees || ::fstatat(d.get(), (n + "/HEAD").c_str(), &head, AT_SYMLINK_NOFOLLOW) == 0;
        const auto sx = look(d.get(), n);
        const bool whole = p.whole || (sx && moved_in(d.get(), *sx));
        todo.push_back({join(p.sub, n), is_gitdir ? Mode::gitdir : Mode::names, p.depth + 1, whole});
      }
    }
  }

  // What git_protected_paths() names for the worktree at `rel_dir` (the
  // gitdir of a .git file, core.hooksPath, included configs, a hook
  // manager's files), when made or changed.
  void extras(const std::string& rel_dir) {
    const std::string r = root_ == "/" ? "" : root_;
    const std::string worktree = rel_dir.empty() ? root_ : r + "/" + rel_dir;
    auto paths = git_protected_paths({worktree}, home_);
    if (!paths) {
      unscanned(join(rel_dir, ".git"), paths.error().message());
      return;
    }
    for (const auto& abs : *paths) {
      if (abs.size() <= r.size() + 1) continue;
      const std::string rel = abs.substr(r.size() + 1);
      const std::size_t slash = rel.rfind('/');
      const std::string parent = slash == std::string::npos ? "." : rel.substr(0, slash);
      Fd p(sys::openat2(top_, parent.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath));
      if (!p) continue;
      item(p.get(), slash == std::string::npos ? "" : parent, slash == std::string::npos ? rel : rel.substr(slash + 1),
           true);
    }
  }

  const std::string& root_;
  int top_;
  struct timespec since_;
  std::vector<std::string> held_;
  const std::string& home_;
  std::vector<GitFinding>& out_;
  std::set<std::string> seen_;
  bool whole_ = false;  // in a git directory that may have been moved into place (moved_in())
};

}  // namespace

std::vector<GitFinding> scan_git_armed(const std::vector<std::string>& roots, const struct timespec& since,
                                       const std::function<std::vector<std::string>(const std::string&)>& held,
                                       const std::string& home) {
  std::vector<GitFinding> out;
  for (const auto& root : roots) {
    Fd top(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    HostScan scan(root, top.get(), since, held(root), home, out);
    if (root == "/") {
      // The whole host: every repository on it, every other user's
      // changes during the run, seconds of walking. Said, not walked.
      scan.unscanned("", "a writable / is the whole host; its git directories are not scanned");
      continue;
    }
    if (!top) {
      if (errno != ENOENT) scan.unscanned("", why_not(errno));
      continue;
    }
    walk_tree(top.get(), TreeVisit{
                             [&](int dir, const std::string& rel_dir, const std::string& name, unsigned char type) {
                               return scan.entry(dir, rel_dir, name, type);
                             },
                             [&](const std::string& rel, const std::string& why) { scan.unscanned(rel, why); },
                         });
  }
  return out;
}

std::string quarantine_token() {
  unsigned char b[4] = {};
  // From an initialised pool getrandom does not fail; the clock is the
  // fallback (RENAME_NOREPLACE keeps a guessed name from being overwritten).
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    struct timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    std::memcpy(b, &now.tv_nsec, sizeof b);
  }
  return fmt::format("{:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3]);
}

void quarantine(std::vector<GitFinding>& findings, std::string_view token) {
  for (auto& f : findings) {
    if (f.unscanned || !f.renamed_to.empty()) continue;
    const std::string shown = (f.root == "/" ? "" : f.root) + "/" + f.rel;
    const std::size_t slash = f.rel.rfind('/');
    const std::string parent = slash == std::string::npos ? "." : f.rel.substr(0, slash);
    const std::string name = slash == std::string::npos ? f.rel : f.rel.substr(slash + 1);
    const std::string to = fmt::format("{}.nsrun-quarantine-{}", name, token);
    Fd top(sys::openat2(AT_FDCWD, f.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    // O_PATH: a directory the command left unreadable is still renamed in.
    Fd dir = top ? Fd(sys::openat2(top.get(), parent.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath))
                 : Fd();
    if (!dir) {
      f.failed = sys_error("quarantine", shown);
      continue;
    }
    int r = ::renameat2(dir.get(), name.c_str(), dir.get(), to.c_str(), RENAME_NOREPLACE);
    if (r != 0 && errno == EACCES) {
      // The command may have taken its own write permission away from the
      // directory; as its owner, nsrun gives it back for the rename only.
      // The magic link names the very inode the fd holds (fchmod refuses
      // an O_PATH fd).
      struct stat st{};
      const std::string self = fmt::format("/proc/self/fd/{}", dir.get());
      if (::fstat(dir.get(), &st) == 0 && st.st_uid == ::geteuid() &&
          ::chmod(self.c_str(), (st.st_mode & 07777) | S_IWUSR | S_IXUSR) == 0) {
        r = ::renameat2(dir.get(), name.c_str(), dir.get(), to.c_str(), RENAME_NOREPLACE);
        const int saved = errno;
        (void)::chmod(self.c_str(), st.st_mode & 07777);
        errno = saved;
      }
    }
    if (r != 0) {
      f.failed = sys_error("quarantine", shown);
      continue;
    }
    f.renamed_to = to;
  }
}

}  // namespace nsrun
