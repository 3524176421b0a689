#include "launch/protect_restore.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include <fmt/core.h>

#include "policy/gitdirs.hpp"
#include "policy/protect.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

Error with_detail(Error e, std::string detail) {
  e.detail = std::move(detail);
  return e;
}

constexpr uint64_t beneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// One component below `dir`, never through a symlink (the last component
// included: O_NOFOLLOW) and never above it.
Fd open_below(int dir, const std::string& name, int flags) {
  return Fd(sys::openat2(dir, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0, beneath));
}

int stat_below(int dir, const std::string& name, struct statx& sx) {
  return ::statx(dir, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx);
}

std::string base_name(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

std::string parent_rel(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string joined(const std::string& root, const std::string& rel) {
  if (rel.empty()) return root;
  return root == "/" ? "/" + rel : root + "/" + rel;
}

void fill(SnapNode& n, const struct statx& sx) {
  n.type = sx.stx_mode & S_IFMT;
  n.mode = sx.stx_mode & 07777;
  n.uid = sx.stx_uid;
  n.gid = sx.stx_gid;
  n.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  n.ino = sx.stx_ino;
  n.nlink = sx.stx_nlink;
  n.size = static_cast<long long>(sx.stx_size);
  n.ctime = sx.stx_ctime;
}

// The names in a directory (not "." or "..").
Result<std::vector<std::string>> list_dir(int dir, const std::string& shown) {
  std::vector<std::string> names;
  alignas(dirent64) char buf[8192];
  while (true) {
    const ssize_t n = ::getdents64(dir, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("list protected directory", shown));
    if (n == 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> read_all(int fd, const std::string& shown, std::size_t limit) {
  std::string out;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("read protected file", shown));
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > limit)
      return fail(with_detail(sys_error("snapshot protected file", shown, EFBIG),
                            fmt::format("the protected set holds more than {} MiB", snapshot_max_bytes >> 20)));
  }
}

class Taker {
 public:
  explicit Taker(ProtectSnapshot& s) : s_(s) {}

  // The node `name` in `dir` (which exists), whole.
  Result<SnapNode> take(int dir, const std::string& name, const std::string& rel, const std::string& shown) {
    if (++s_.nodes > snapshot_max_nodes)
      return fail(with_detail(sys_error("snapshot protected path", shown, E2BIG),
                            fmt::format("the protected set holds more than {} entries", snapshot_max_nodes)));
    SnapNode n;
    n.rel = rel;
    struct statx sx{};
    if (stat_below(dir, name, sx) != 0) return fail(sys_error("snapshot protected path", shown));
    fill(n, sx);
    if (n.type == S_IFREG) {
      Fd f = open_below(dir, name, O_RDONLY);
      if (!f) return fail(sys_error("open protected file", shown));
      auto bytes = read_all(f.get(), shown, snapshot_max_bytes - s_.bytes);
      if (!bytes) return fail(bytes.error());
      s_.bytes += bytes->size();
      n.content = std::move(*bytes);
    } else if (n.type == S_IFLNK) {
      char target[PATH_MAX];
      const ssize_t len = ::readlinkat(dir, name.c_str(), target, sizeof target);
      if (len < 0) return fail(sys_error("readlink protected path", shown));
      n.content.assign(target, static_cast<std::size_t>(len));
    } else if (n.type == S_IFDIR) {
      Fd d = open_below(dir, name, O_RDONLY | O_DIRECTORY);
      if (!d) return fail(sys_error("open protected directory", shown));
      auto names = list_dir(d.get(), shown);
      if (!names) return fail(names.error());
      for (const auto& child : *names) {
        auto c = take(d.get(), child, rel + "/" + child, shown + "/" + child);
        if (!c) return fail(c.error());
        n.children.push_back(std::move(*c));
      }
    }
    return n;
  }

 private:
  ProtectSnapshot& s_;
};

class Restorer {
 public:
  Restorer(const RootSnapshot& r, const std::string& token, std::vector<Restored>& out)
      : r_(r), token_(token), out_(out), root_(::geteuid() == 0) {}

  void run() {
    check_root();
    for (const auto& d : r_.dirs) fix_dir(d);
    for (const auto& n : r_.kept) {
      const int parent = dir_fd(parent_rel(n.rel));
      if (parent < 0) continue;  // its directory was not put back: said there
      if (n.type == 0) keep_absent(parent, n);
      else verify(parent, n);
    }
  }

 private:
  std::string shown(const std::string& rel) const { return joined(r_.root, rel); }

  void say(const std::string& rel, std::string change, std::string action, std::string renamed = {},
           std::string detail = {}) {
    out_.push_back({shown(rel), std::move(change), std::move(action), std::move(renamed), std::move(detail)});
  }

  // The fd of a directory held since before the run ("" the root), -1
  // when it could not be put back.
  int dir_fd(const std::string& rel) const {
    if (rel.empty()) return r_.fd.get();
    if (std::find(lost_.begin(), lost_.end(), rel) != lost_.end()) return -1;
    for (const auto& d : r_.dirs)
      if (d.rel == rel) return d.fd.get();
    return -1;
  }

  // The root is restored through the fd held since before the run; a path
  // that names another directory now is said (only a root inside another
  // writable root can be renamed by the command).
  void check_root() {
    struct stat st{};
    if (::stat(r_.root.c_str(), &st) != 0 || st.st_dev != r_.dev || st.st_ino != r_.ino)
      say("", "moved", "not-restored", {},
          "the writable root's path names another directory now; its protected paths were restored in the "
          "original directory");
  }

  // Renames `name` in `dir` out of every program's way: nothing deleted.
  Result<std::string> quarantine(int dir, const std::string& name) {
    const std::string to = fmt::format("{}.nsrun-quarantine-{}", name, token_);
    if (::renameat2(dir, name.c_str(), dir, to.c_str(), RENAME_NOREPLACE) != 0)
      return fail(sys_error("quarantine", name));
    return to;
  }

  // A directory on the way: still the one held, or put back.
  void fix_dir(const SnapDir& d) {
    const int parent = dir_fd(parent_rel(d.rel));
    const std::string name = base_name(d.rel);
    if (parent < 0) {
      lost_.push_back(d.rel);
      return;
    }
    struct statx sx{};
    const bool present = stat_below(parent, name, sx) == 0;
    if (present && S_ISDIR(sx.stx_mode) && makedev(sx.stx_dev_major, sx.stx_dev_minor) == d.dev && sx.stx_ino == d.ino)
      return;
    std::string renamed;
    if (present) {
      auto q = quarantine(parent, name);
      if (!q) {
        say(d.rel, "replaced", "not-restored", {}, q.error().message());
        lost_.push_back(d.rel);
        return;
      }
      renamed = *q;
    }
    // Where the held directory is now: its path as the kernel names it,
    // then the same walk as everywhere (through no symlink, never above
    // the root) to a name whose inode is the held one.
    char now[PATH_MAX];
    const std::string self = fmt::format("/proc/self/fd/{}", d.fd.get());
    const ssize_t len = ::readlink(self.c_str(), now, sizeof now - 1);
    char root_now[PATH_MAX];
    const std::string root_self = fmt::format("/proc/self/fd/{}", r_.fd.get());
    const ssize_t root_len = ::readlink(root_self.c_str(), root_now, sizeof root_now - 1);
    std::string detail = "renamed out of the writable root or removed; nothing is left at its name";
    if (len > 0 && root_len > 0) {
      const std::string at(now, static_cast<std::size_t>(len));
      const std::string top(root_now, static_cast<std::size_t>(root_len));
      const std::string prefix = top == "/" ? "/" : top + "/";
      if (at.starts_with(prefix)) {
        const std::string rel = at.substr(prefix.size());
        Fd from = parent_rel(rel).empty() ? Fd(::dup(r_.fd.get()))
                                          : open_below(r_.fd.get(), parent_rel(rel), O_PATH | O_DIRECTORY);
        struct statx found{};
        if (from && stat_below(from.get(), base_name(rel), found) == 0 && found.stx_ino == d.ino &&
            makedev(found.stx_dev_major, found.stx_dev_minor) == d.dev &&
            ::renameat2(from.get(), base_name(rel).c_str(), parent, name.c_str(), RENAME_NOREPLACE) == 0) {
          say(d.rel, present ? "replaced" : "moved", "moved-back", renamed, fmt::format("it was at {}", shown(rel)));
          return;
        }
      }
    }
    say(d.rel, present ? "replaced" : "moved", "not-restored", renamed, detail);
    lost_.push_back(d.rel);
  }

  void keep_absent(int parent, const SnapNode& n) {
    struct statx sx{};
    if (stat_below(parent, base_name(n.rel), sx) != 0) return;
    auto q = quarantine(parent, base_name(n.rel));
    if (q) say(n.rel, "created", "quarantined", *q);
    else say(n.rel, "created", "not-restored", {}, q.error().message());
  }

  void verify(int parent, const SnapNode& n) {
    const std::string name = base_name(n.rel);
    struct statx sx{};
    if (stat_below(parent, name, sx) != 0) {
      put_back(parent, n, "removed", {});
      return;
    }
    if (n.type == S_IFDIR && S_ISDIR(sx.stx_mode) && makedev(sx.stx_dev_major, sx.stx_dev_minor) == n.dev &&
        sx.stx_ino == n.ino) {
      verify_dir(parent, n, sx);
      return;
    }
    if (unchanged(n, sx)) return;
    auto q = quarantine(parent, name);
    if (!q) {
      say(n.rel, "changed", "not-restored", {}, q.error().message());
      return;
    }
    put_back(parent, n, "changed", *q);
  }

  void verify_dir(int parent, const SnapNode& n, const struct statx& sx) {
    Fd d = open_below(parent, base_name(n.rel), O_RDONLY | O_DIRECTORY);
    if (!d) {
      say(n.rel, "changed", "not-restored", {}, sys_error("open", shown(n.rel)).message());
      return;
    }
    if ((sx.stx_mode & 07777) != n.mode || sx.stx_uid != n.uid || sx.stx_gid != n.gid) {
      if (::fchmod(d.get(), n.mode) != 0 || (root_ && ::fchown(d.get(), n.uid, n.gid) != 0))
        say(n.rel, "changed", "not-restored", {}, sys_error("fchmod", shown(n.rel)).message());
      else
        say(n.rel, "changed", "restored", {}, "its mode or owner");
    }
    auto names = list_dir(d.get(), shown(n.rel));
    if (!names) {
      say(n.rel, "changed", "not-restored", {}, names.error().message());
      return;
    }
    std::set<std::string> before;
    for (const auto& c : n.children) before.insert(base_name(c.rel));
    for (const auto& name : *names) {
      if (before.contains(name)) continue;
      const std::string rel = n.rel + "/" + name;
      auto q = quarantine(d.get(), name);
      if (q) say(rel, "created", "quarantined", *q);
      else say(rel, "created", "not-restored", {}, q.error().message());
    }
    for (const auto& c : n.children) verify(d.get(), c);
  }

  // Makes `n` again at a temporary name, whole, then renames it in place:
  // no half-written hook is ever at the protected name.
  void put_back(int parent, const SnapNode& n, std::string change, std::string renamed) {
    const std::string tmp = fmt::format("{}.nsrun-restore-{}", base_name(n.rel), token_);
    auto made = make(parent, tmp, n);
    if (made && ::renameat2(parent, tmp.c_str(), parent, base_name(n.rel).c_str(), RENAME_NOREPLACE) != 0)
      made = fail(sys_error("rename restored copy", shown(n.rel)));
    if (!made) {
      remove_made(parent, tmp);
      say(n.rel, std::move(change), "not-restored", std::move(renamed), made.error().message());
      return;
    }
    say(n.rel, std::move(change), "restored", std::move(renamed));
  }

  Result<void> make(int parent, const std::string& name, const SnapNode& n) {
    if (n.type == S_IFREG) {
      Fd f(::openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!f) return fail(sys_error("create restored copy", shown(n.rel)));
      for (std::size_t at = 0; at < n.content.size();) {
        const ssize_t w = ::write(f.get(), n.content.data() + at, n.content.size() - at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return fail(sys_error("write restored copy", shown(n.rel)));
        at += static_cast<std::size_t>(w);
      }
      if ((root_ && ::fchown(f.get(), n.uid, n.gid) != 0) || ::fchmod(f.get(), n.mode) != 0)
        return fail(sys_error("fchmod restored copy", shown(n.rel)));
      return {};
    }
    if (n.type == S_IFLNK) {
      if (::symlinkat(n.content.c_str(), parent, name.c_str()) != 0)
        return fail(sys_error("symlink restored copy", shown(n.rel)));
      if (root_) (void)::fchownat(parent, name.c_str(), n.uid, n.gid, AT_SYMLINK_NOFOLLOW);
      return {};
    }
    if (n.type == S_IFDIR) {
      if (::mkdirat(parent, name.c_str(), 0700) != 0) return fail(sys_error("mkdir restored copy", shown(n.rel)));
      Fd d = open_below(parent, name, O_RDONLY | O_DIRECTORY);
      if (!d) return fail(sys_error("open restored copy", shown(n.rel)));
      for (const auto& c : n.children)
        if (auto r = make(d.get(), base_name(c.rel), c); !r) return r;
      if ((root_ && ::fchown(d.get(), n.uid, n.gid) != 0) || ::fchmod(d.get(), n.mode) != 0)
        return fail(sys_error("fchmod restored copy", shown(n.rel)));
      return {};
    }
    return fail(with_detail(sys_error("restore", shown(n.rel), EOPNOTSUPP), "a special file is not made again"));
  }

  // A half-made copy, removed (it only ever holds what the snapshot held).
  void remove_made(int parent, const std::string& name) {
    if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return;
    Fd d = open_below(parent, name, O_RDONLY | O_DIRECTORY);
    if (!d) return;
    (void)::fchmod(d.get(), 0700);
    if (auto names = list_dir(d.get(), name))
      for (const auto& c : *names) remove_made(d.get(), c);
    (void)::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
  }

  const RootSnapshot& r_;
  const std::string& token_;
  std::vector<Restored>& out_;
  bool root_;
  std::vector<std::string> lost_;
};

}  // namespace

bool kept_by_snapshot(const ProtectedPathState& st) {
  switch (st.decision.state) {
    case ProtectState::read_only:
    case ProtectState::covered:
    case ProtectState::sealed: return true;
    case ProtectState::not_kept: return !is_git_name(st.path.substr(0, st.path.find('/')));
    case ProtectState::unreachable: return false;
  }
  return false;
}

bool unchanged(const SnapNode& before, const struct statx& now) {
  if ((now.stx_mode & S_IFMT) != before.type || makedev(now.stx_dev_major, now.stx_dev_minor) != before.dev ||
      now.stx_ino != before.ino || (now.stx_mode & 07777) != before.mode || now.stx_uid != before.uid ||
      now.stx_gid != before.gid)
    return false;
  if (before.type == S_IFDIR) return true;
  return now.stx_nlink == before.nlink && static_cast<long long>(now.stx_size) == before.size &&
         now.stx_ctime.tv_sec == before.ctime.tv_sec && now.stx_ctime.tv_nsec == before.ctime.tv_nsec;
}

Result<ProtectSnapshot> snapshot_protected(const std::vector<std::pair<std::string, std::string>>& paths) {
  ProtectSnapshot s;
  Taker taker(s);
  for (const auto& [root, rel] : paths) {
    auto r = std::find_if(s.roots.begin(), s.roots.end(), [&](const RootSnapshot& x) { return x.root == root; });
    if (r == s.roots.end()) {
      RootSnapshot fresh;
      fresh.root = root;
      fresh.fd = Fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      struct stat st{};
      if (!fresh.fd || ::fstat(fresh.fd.get(), &st) != 0) return fail(sys_error("open writable root", root));
      fresh.dev = st.st_dev;
      fresh.ino = st.st_ino;
      s.roots.push_back(std::move(fresh));
      r = std::prev(s.roots.end());
    }
    int dir = r->fd.get();
    std::string at;
    for (std::size_t start = 0; start <= rel.size();) {
      const std::size_t slash = std::min(rel.find('/', start), rel.size());
      const std::string name = rel.substr(start, slash - start);
      const bool last = slash == rel.size();
      start = slash + 1;
      const std::string here = at.empty() ? name : at + "/" + name;
      const std::string shown = joined(root, here);
      at = here;
      // A path met again (.git/hooks and .git/config both stop at a .git
      // file) is kept once.
      auto seen = [&] {
        return std::any_of(r->kept.begin(), r->kept.end(), [&](const SnapNode& n) { return n.rel == here; });
      };
      struct statx sx{};
      if (stat_below(dir, name, sx) != 0) {
        if (errno != ENOENT) return fail(sys_error("snapshot protected path", shown));
        if (!seen()) r->kept.push_back(SnapNode{.rel = here});
        break;
      }
      if (!last && S_ISDIR(sx.stx_mode)) {
        auto held = std::find_if(r->dirs.begin(), r->dirs.end(), [&](const SnapDir& d) { return d.rel == here; });
        if (held == r->dirs.end()) {
          SnapDir d{here, makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, open_below(dir, name, O_PATH | O_DIRECTORY)};
          if (!d.fd) return fail(sys_error("open protected directory", shown));
          r->dirs.push_back(std::move(d));
          held = std::prev(r->dirs.end());
        }
        dir = held->fd.get();
        continue;
      }
      if (!seen()) {
        auto node = taker.take(dir, name, here, shown);
        if (!node) return fail(node.error());
        r->kept.push_back(std::move(*node));
      }
      break;
    }
  }
  // Shallowest first: a directory is put back before what is below it.
  for (auto& r : s.roots)
    std::stable_sort(r.dirs.begin(), r.dirs.end(), [](const SnapDir& a, const SnapDir& b) {
      return std::count(a.rel.begin(), a.rel.end(), '/') < std::count(b.rel.begin(), b.rel.end(), '/');
    });
  return s;
}

std::vector<Restored> restore_protected(const ProtectSnapshot& snap, const std::string& token) {
  std::vector<Restored> out;
  for (const auto& r : snap.roots) Restorer(r, token, out).run();
  return out;
}

}  // namespace nsrun
