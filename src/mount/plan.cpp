#include "mount/plan.hpp"

#include <sched.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "policy/presets.hpp"
#include "policy/protect.hpp"
#include "probe/backend.hpp"
#include "sys/flags.hpp"
#include "sys/namespaces.hpp"

namespace nsrun {

namespace {

using Op = MountStep::Op;
using K = MountOp::Kind;

std::string join(std::string_view dir, std::string_view name) {
  if (dir == "/") dir = {};
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out.append(dir);
  out += '/';
  out.append(name);
  return out;
}

MountStep step(Op op, std::string dest) {
  MountStep s;
  s.op = op;
  s.dest = std::move(dest);
  return s;
}

MountStep bind(std::string source, std::string dest, uint64_t attrs) {
  MountStep s = step(Op::bind, std::move(dest));
  s.source = std::move(source);
  s.attrs = attrs;
  return s;
}

MountStep symlink(std::string target, std::string dest) {
  MountStep s = step(Op::symlink, std::move(dest));
  s.source = std::move(target);
  return s;
}

MountStep tmpfs(std::string dest, uint32_t mode, uint64_t attrs, uint64_t size = 0) {
  MountStep s = step(Op::tmpfs, std::move(dest));
  s.mode = mode;
  s.attrs = attrs;
  s.size = size;
  return s;
}

// The parts of procfs that reach the whole machine stay read-only even in a
// fresh procfs: sysctls, the magic SysRq trigger, IRQ affinity, bus tables.
void proc_read_only_parts(std::vector<MountStep>& out, const std::string& dest) {
  for (const char* part : {"sys", "sysrq-trigger", "irq", "bus"}) {
    MountStep s = bind(join(dest, part), join(dest, part), attr::rdonly | attr::nosuid | attr::nodev | attr::noexec);
    s.source_in_root = true;
    s.optional = true;
    out.push_back(std::move(s));
  }
}

void expand_proc(std::vector<MountStep>& out, const std::string& dest, ProcMode proc, bool mask_proc) {
  const uint64_t attrs = attr::nosuid | attr::nodev | attr::noexec;
  if (proc == ProcMode::none) return;
  if (proc == ProcMode::host_bind) {
    out.push_back(bind("/proc", dest, attrs));
  } else {
    out.push_back(step(Op::proc, dest));
    out.back().attrs = attrs;
    if (!mask_proc) return;
  }
  proc_read_only_parts(out, dest);
}

// A minimal /dev: a few harmless character devices bound from the host, a
// private devpts instance and a private /dev/shm.
void expand_dev(std::vector<MountStep>& out, const std::string& dest) {
  out.push_back(tmpfs(dest, 0755, attr::nosuid | attr::noexec));
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    MountStep s = bind(join("/dev", node), join(dest, node), attr::nosuid | attr::noexec);
    s.dest_is_file = true;
    out.push_back(std::move(s));
  }
  out.push_back(symlink("/proc/self/fd", join(dest, "fd")));
  out.push_back(symlink("/proc/self/fd/0", join(dest, "stdin")));
  out.push_back(symlink("/proc/self/fd/1", join(dest, "stdout")));
  out.push_back(symlink("/proc/self/fd/2", join(dest, "stderr")));
  out.push_back(symlink("/proc/kcore", join(dest, "core")));
  MountStep pts = step(Op::devpts, join(dest, "pts"));
  pts.options = "newinstance,ptmxmode=0666,mode=620";
  pts.attrs = attr::nosuid | attr::noexec;
  out.push_back(std::move(pts));
  out.push_back(symlink("pts/ptmx", join(dest, "ptmx")));
  out.push_back(tmpfs(join(dest, "shm"), 01777, attr::nosuid | attr::nodev));
}

// Least privilege for created parents: a parent of something whose mode
// shuts out group or others shuts them out too (bwrap's documented rule).
uint32_t parent_mode_for(std::optional<uint32_t> perms) {
  uint32_t mode = 0755;
  if (perms && (*perms & 0070) == 0) mode &= ~0050U;
  if (perms && (*perms & 0007) == 0) mode &= ~0005U;
  return mode;
}

void expand_one(std::vector<MountStep>& out, const MountOp& m, ProcMode proc, const std::string& tmp_dest,
                bool user_ns, bool mask_proc) {
  const uint32_t mode = m.perms.value_or(0755);
  switch (m.kind) {
    case K::bind:
    case K::ro_bind:
    case K::dev_bind: {
      // Device nodes stay usable on a dev-bind, setuid bits never do.
      uint64_t attrs = m.kind == K::dev_bind ? attr::nosuid : attr::nosuid | attr::nodev;
      if (m.kind == K::ro_bind) attrs |= attr::rdonly;
      MountStep s = bind(m.source, m.dest, attrs);
      s.optional = m.optional;
      if (m.source_fd) s.source_fd = *m.source_fd;
      out.push_back(std::move(s));
      break;
    }
    case K::overlay:
    case K::tmp_overlay:
    case K::ro_overlay: {
      MountStep s = step(Op::overlay, m.dest);
      s.layers = m.layers;
      s.attrs = attr::nosuid | attr::nodev | (m.kind == K::ro_overlay ? attr::rdonly : 0);
      if (m.kind == K::overlay) {
        s.source = m.source;
        s.workdir = m.workdir;
      }
      s.private_upper = m.kind == K::tmp_overlay;
      // In a user namespace overlayfs keeps its metadata in user.* xattrs
      // (and has no inode index: an unprivileged mount cannot decode file
      // handles, so the kernel turns index off itself). Outside one the
      // module's default could turn the index on, and with it overlayfs
      // refuses (EBUSY) a second mount of an upper directory in use: the
      // home layer is shared by concurrent launches, so it is off here.
      // nsrun's own layers keep user.* xattrs outside a user namespace too:
      // commit and home diff read whiteouts and opaque directories from
      // user.overlay.*, and with trusted.* the kernel's opaque marks went
      // unseen (a directory the command emptied and remade kept its old
      // files) while user.overlay.* was the command's to set (an opaque
      // mark it forged on a directory it never touched made commit delete
      // its files). With userxattr overlayfs refuses user.overlay.* to the
      // command, as inside a user namespace.
      if (user_ns) s.options = "userxattr";
      else if (m.kind == K::overlay && m.layer) s.options = "userxattr,index=off";
      else if (m.kind == K::overlay) s.options = "index=off";
      if (m.volatile_upper && m.kind == K::overlay) s.options += s.options.empty() ? "volatile" : ",volatile";
      out.push_back(std::move(s));
      break;
    }
    case K::tmpfs:
      // A private /tmp is world-writable and sticky, like the host's.
      out.push_back(tmpfs(m.dest, m.perms.value_or(m.dest == tmp_dest ? 01777 : 0755),
                          attr::nosuid | attr::nodev, m.size.value_or(0)));
      break;
    case K::hide:
      out.push_back(tmpfs(m.dest, 0755, attr::rdonly | attr::nosuid | attr::nodev | attr::noexec, 4096));
      break;
    case K::proc:
      expand_proc(out, m.dest, proc, mask_proc);
      break;
    case K::dev:
      expand_dev(out, m.dest);
      break;
    case K::mqueue:
      out.push_back(step(Op::mqueue, m.dest));
      out.back().attrs = attr::nosuid | attr::nodev | attr::noexec;
      break;
    case K::dir:
      out.push_back(step(Op::mkdir, m.dest));
      out.back().mode = mode;
      break;
    case K::symlink:
      out.push_back(symlink(m.source, m.dest));
      break;
    case K::file:
    case K::bind_data:
    case K::ro_bind_data: {
      MountStep s = step(Op::write_file, m.dest);
      s.data = m.data;
      s.mode = m.perms.value_or(m.kind == K::file ? 0666 : 0600);
      // The data kinds write into the staging area and bind from there, so
      // the file can land on a read-only path.
      if (m.kind != K::file) {
        s.source = "data";
        s.attrs = attr::nosuid | attr::nodev | (m.kind == K::ro_bind_data ? attr::rdonly : 0);
      }
      out.push_back(std::move(s));
      break;
    }
    case K::remount_ro:
      out.push_back(step(Op::set_attr, m.dest));
      out.back().attrs = attr::rdonly;
      break;
    case K::chmod:
      out.push_back(step(Op::chmod, m.dest));
      out.back().mode = m.perms.value_or(0755);
      break;
  }
}

void expand(std::vector<MountStep>& out, const MountOp& m, ProcMode proc, const std::string& tmp_dest,
            bool user_ns, bool follow_symlinks, bool mask_proc) {
  const std::size_t first = out.size();
  expand_one(out, m, proc, tmp_dest, user_ns, mask_proc);
  const uint32_t parents = parent_mode_for(m.perms);
  // The paths the native front ends protect or open for writing: a symlink
  // there is the writer's to redirect, so none is followed.
  const bool exact = !follow_symlinks && (m.kind == K::bind || m.kind == K::ro_bind || m.kind == K::dev_bind ||
                                          m.kind == K::hide || m.kind == K::overlay || m.kind == K::ro_overlay);
  for (std::size_t i = first; i < out.size(); ++i) {
    out[i].parent_mode = parents;
    out[i].no_symlinks = exact;
  }
}


// A step the collapse may look past: it resolves only its own destination,
// through no symlink, and reads nothing in the new root.
bool self_contained(const MountStep& s) {
  return s.no_symlinks && !s.source_in_root && s.source_fd < 0 && (s.op == Op::bind || s.op == Op::tmpfs) &&
         plain_path(s.dest);
}

bool is_mount(Op op) {
  return op == Op::bind || op == Op::tmpfs || op == Op::proc || op == Op::devpts || op == Op::mqueue ||
         op == Op::overlay || (op == Op::write_file);
}

// Forgets the entries of `m` at `dest` and below it: a mount on `dest`
// hides them.
template <class Map>
void erase_at_and_below(Map& m, const std::string& dest) {
  if (dest == "/") {
    m.clear();
    return;
  }
  m.erase(dest);
  const std::string below = dest + "/";
  for (auto it = m.lower_bound(below); it != m.end() && it->first.starts_with(below);) it = m.erase(it);
}

// The mounts visible so far, by destination: a tree of path components
// (a plain path's), each node holding whether the mount on it, if any, is
// a host path bound onto itself. One walk down a destination finds the
// nearest mount at or above it and forgets what the new mount hides (the
// node's subtree), without comparing whole paths: with a thousand sibling
// binds, an ordered map of paths spent most of make_plan() in memcmp over
// their long common prefix. Keys are views into the steps' destinations,
// which outlive the tree.
class VisibleMounts {
 public:
  // Records a mount on the plain path `dest` (onto_itself: a host path
  // bound onto itself) and returns the nearest mount at or above `dest`
  // before it, if any.
  std::optional<bool> mount(std::string_view dest, bool onto_itself) {
    Node* node = &root_;
    std::optional<bool> nearest = node->onto_itself;
    for (std::size_t i = 0; i < dest.size();) {
      const std::size_t end = std::min(dest.find('/', i + 1), dest.size());
      const std::string_view part = dest.substr(i + 1, end - i - 1);
      i = end;
      if (part.empty()) continue;  // "/" itself
      auto& child = node->children[part];
      if (!child) child = std::make_unique<Node>();
      node = child.get();
      if (node->onto_itself) nearest = node->onto_itself;
    }
    // A mount on `dest` hides what was mounted below it.
    node->children.clear();
    node->onto_itself = onto_itself;
    return nearest;
  }
  // Nothing before this is trusted.
  void clear() {
    root_.children.clear();
    root_.onto_itself.reset();
  }

 private:
  struct Node {
    std::optional<bool> onto_itself;  // a mount here, and whether it is a host path bound onto itself
    std::unordered_map<std::string_view, std::unique_ptr<Node>> children;
  };
  Node root_;
};

}  // namespace

// One pass over the bytes, no substrings: it runs twice for each step of
// the plan (a thousand --ro binds), and tests/unit/plan_test.cpp holds it
// to the component-by-component definition on every short path.
bool plain_path(std::string_view p) {
  if (p.size() == 1 && p[0] == '/') return true;
  if (p.empty() || p.front() != '/' || p.back() == '/') return false;
  std::size_t start = 1;  // the current component's first byte
  for (std::size_t i = 1; i <= p.size(); ++i) {
    if (i < p.size() && p[i] != '/') continue;
    const std::size_t len = i - start;
    if (len == 0 || (len == 1 && p[start] == '.') || (len == 2 && p[start] == '.' && p[start + 1] == '.'))
      return false;
    start = i + 1;
  }
  return true;
}

// A mount hides what was mounted below it. Paths that are not plain are
// not reasoned about.
void mark_host_views(std::vector<MountStep>& steps) {
  VisibleMounts visible;
  for (MountStep& s : steps) {
    if (!is_mount(s.op) || (s.op == Op::write_file && s.source.empty())) continue;
    const bool onto_itself = s.op == Op::bind && !s.source_in_root && s.source_fd < 0 && s.source == s.dest;
    if (!plain_path(s.dest)) {
      // Cannot tell what it covers: nothing before it is trusted.
      visible.clear();
      continue;
    }
    const std::optional<bool> nearest = visible.mount(s.dest, onto_itself);
    if (onto_itself && nearest) s.host_view = *nearest;
  }
}

namespace {

bool at_or_under(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

// Policy::hidden_sockets, covered after every other mount, so no writable
// root, --ro or policy bind brings the host's socket back over the cover.
// A socket is covered only where the host's is still what the sandbox
// shows: when the last mount over its path is a fresh filesystem (the
// private /tmp over /tmp/.X11-unix, a tmpfs, --hide) it is not there to
// hide, and its mount point could not be made in a read-only one.
// A socket gets /dev/null bound over it, with nodev: connect() on an inode
// that is not a socket is ECONNREFUSED and open() is EACCES, and no file is
// made for it (no staging area). A directory gets an empty read-only tmpfs.
// Policy::hidden_paths (the credentials) get the same covers and
// for the same reasons: read through any name (a symlink to it,
// /proc/self/root/...), the path reaches the cover; nothing is made on the
// host, and a path that is gone is skipped.
void cover_hidden(std::vector<MountStep>& out, const Policy& p, const std::vector<std::string>& hidden) {
  if (hidden.empty()) return;
  std::vector<std::string> paths;
  for (const auto& s : hidden) {
    std::string path = s;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    paths.push_back(std::move(path));
  }
  std::vector<bool> shown(paths.size(), false);
  for_each_mount(p, [&](const MountOp& m) {
    bool fresh = false;
    switch (m.kind) {
      case K::tmpfs:
      case K::hide:
      case K::proc:
      case K::dev:
      case K::mqueue:
        fresh = true;
        break;
      default:
        break;
    }
    for (std::size_t i = 0; i < paths.size(); ++i)
      if (at_or_under(paths[i], m.dest)) shown[i] = !fresh;
  });
  const uint64_t sealed = attr::rdonly | attr::nosuid | attr::nodev | attr::noexec;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!shown[i]) continue;
    // A settings file with secrets among its settings: its copy without
    // them (policy/settings_copy.hpp), bound read-only from the staging
    // area where /dev/null would go.
    auto copy = std::find_if(p.settings_copies.begin(), p.settings_copies.end(),
                             [&](const SettingsCopy& c) { return c.path == hidden[i]; });
    if (p.settings_copy && copy != p.settings_copies.end()) {
      MountStep s = step(Op::write_file, paths[i]);
      s.data = copy->text;
      s.mode = 0444;
      s.source = "data";
      s.attrs = sealed;
      s.cover = true;
      out.push_back(std::move(s));
      continue;
    }
    // The files inside a hidden directory that --allow-read names: the
    // cover is made writable, an empty file made in it for each, the
    // cover sealed, then each file bound read-only on its empty one (a
    // seal after the binds would have to cross them, and the kernel
    // refuses that for a bind of a host file in a user namespace).
    std::vector<std::string> shown;
    if (hidden[i].ends_with('/'))
      for (const auto& f : p.shown_in_hidden)
        if (f.starts_with(hidden[i]) && f.size() > hidden[i].size()) shown.push_back(f);
    MountStep s = hidden[i].ends_with('/') ? tmpfs(paths[i], 0755, shown.empty() ? sealed : sealed & ~attr::rdonly, 4096)
                                                      : bind("/dev/null", paths[i], sealed);
    s.dest_is_file = s.op == Op::bind;
    s.cover = true;
    out.push_back(std::move(s));
    if (shown.empty()) continue;
    for (const auto& f : shown) {
      MountStep point = step(Op::write_file, f);
      point.mode = 0444;
      out.push_back(std::move(point));
    }
    MountStep seal = step(Op::set_attr, paths[i]);
    seal.attrs = sealed;
    out.push_back(std::move(seal));
    for (const auto& f : shown) {
      MountStep b = bind(f, f, sealed);
      b.dest_is_file = true;
      b.no_symlinks = true;
      b.one_link = true;
      out.push_back(std::move(b));
    }
  }
}

// The protected paths of each writable root (policy/protect.hpp), after
// every other mount, so no later bind brings a writable copy back over
// them. What each one gets is decided when the root is built, from what is
// there then (the executor's walk_protected()).
void protect_paths(std::vector<MountStep>& out, const Policy& p) {
  const std::vector<std::string> set = protected_paths(p);
  if (set.empty()) return;
  for (const auto& root : writable_roots(p)) {
    for (auto& rel : held_in_root(p, root, set)) {
      MountStep s = step(Op::protect, join(root, rel));
      s.source = root;
      s.data = std::move(rel);
      out.push_back(std::move(s));
    }
  }
}

}  // namespace

namespace {

// A bind or tmpfs collapse_duplicates() may drop for an equal one right
// after it.
bool collapsible(const MountStep& s) {
  return (s.op == Op::bind || s.op == Op::tmpfs) && !s.source_in_root && s.source_fd < 0;
}

// Whether collapse_duplicates() has anything to drop: a collapsible step
// equal to the one before it, or two self-contained steps on one
// destination (the only way its map finds an entry). Almost never, and a
// hash set of destinations answers it without the ordered map's prefix
// compares, which cost a thousand sibling binds several milliseconds.
bool any_duplicate(const std::vector<MountStep>& steps) {
  std::unordered_set<std::string_view> dests;
  dests.reserve(steps.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const MountStep& s = steps[k];
    if (k > 0 && collapsible(s) && steps[k - 1] == s) return true;
    if (self_contained(s) && !dests.insert(s.dest).second) return true;
  }
  return false;
}

}  // namespace

void collapse_duplicates(std::vector<MountStep>& steps) {
  if (!any_duplicate(steps)) return;
  std::vector<bool> drop(steps.size(), false);
  // Destination -> the last self-contained step on it that nothing since
  // could have seen.
  std::map<std::string, std::size_t, std::less<>> open;
  std::optional<std::size_t> previous;  // the last step kept so far
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const MountStep& s = steps[k];
    if (collapsible(s) && previous && steps[*previous] == s) {
      drop[*previous] = true;
    } else if (self_contained(s)) {
      if (auto it = open.find(s.dest); it != open.end() && steps[it->second] == s) drop[it->second] = true;
    }
    if (!self_contained(s)) {
      open.clear();
    } else {
      // Forget what this step can see: its destination, what is below it
      // (a prefix range of the ordered map) and what is above it.
      erase_at_and_below(open, s.dest);
      for (std::size_t slash = s.dest.find_last_of('/'); slash != std::string::npos && slash > 0;
           slash = s.dest.find_last_of('/', slash - 1))
        open.erase(s.dest.substr(0, slash));
      open.erase("/");
      open[s.dest] = k;
    }
    previous = k;
  }
  std::size_t out = 0;
  for (std::size_t k = 0; k < steps.size(); ++k)
    if (!drop[k]) {
      if (out != k) steps[out] = std::move(steps[k]);
      ++out;
    }
  steps.resize(out);
}

LaunchPlan plan_without_mounts(const Policy& p, const HostFacts& host) {
  LaunchPlan plan;
  uint64_t flags = CLONE_NEWNS;
  for (const auto& k : namespace_kinds)
    if (k.in_policy && p.ns.*namespace_field(k.clone_flag)) flags |= k.clone_flag;
  if (p.network != Network::share) flags |= CLONE_NEWNET;
  plan.clone_flags = flags;

  plan.id_maps = p.ns.user;
  plan.uid_map = {p.uid.value_or(host.uid), host.uid};
  plan.gid_map = {p.gid.value_or(host.gid), host.gid};
  if (p.ns.uts) plan.hostname = p.hostname;

  plan.proc = resolve_proc_mode(p.proc, p.host_backend);
  // A lock file needs a process that outlives the command's exec to hold
  // it, PID namespace or not (bwrap forks one for it too).
  plan.reaper = (p.ns.pid && !p.as_pid_1) || !p.lock_files.empty();
  plan.chdir_required = !p.chdir.empty();
  plan.chdir = plan.chdir_required ? p.chdir : host.cwd;
  plan.chdir_fallback = !p.preset;
  plan.mounts_planned = false;
  return plan;
}

Result<LaunchPlan> make_plan(const Policy& p, const HostFacts& host) {
  LaunchPlan plan = plan_without_mounts(p, host);
  plan.mounts_planned = true;
  // A joined user namespace (bwrap --userns) is as much a user namespace
  // for overlayfs as one made here; no id maps are written into it, though.
  const bool user_ns = p.ns.user || p.userns_fd.has_value();
  // Without copying the mount list first: with a thousand binds the copies
  // were a third of prepare(). The presets expand to a few dozen steps,
  // the covers and protected paths follow: room for all of them, so the
  // thousand steps are not moved again when the list grows past it.
  plan.mounts.reserve(p.mounts.size() + p.hidden_sockets.size() + p.hidden_paths.size() + 128);
  const std::string tmp_dest = "/tmp";
  // A nested sandbox mounts a fresh procfs of its own, which the kernel
  // refuses while any part of the visible one is covered (fs/namespace.c,
  // mount_too_revealing(): the new mount must reveal nothing hidden). The
  // read-only covers guard files only the host's uid 0 may write (and
  // /proc/sys/net of the sandbox's own network namespace): when the
  // sandbox's user namespace maps neither uid 0 nor gid 0 of the host,
  // no process inside, nested namespaces included, can write them, and
  // --allow-nested-userns leaves them off. With uid 0 mapped they stay
  // (uid 0 writes /proc/sys/kernel/core_pattern without a capability):
  // a nested fresh procfs is then refused, and nested nsrun uses its next rung.
  const bool mask_proc = !(p.allow_nested_userns && p.ns.user && !p.userns_fd && host.uid != 0 && host.gid != 0);
  for_each_mount(p, [&](const MountOp& m) {
    expand(plan.mounts, m, plan.proc, tmp_dest, user_ns, p.follow_symlinks, mask_proc);
  });
  cover_hidden(plan.mounts, p, p.hidden_sockets);
  cover_hidden(plan.mounts, p, p.hidden_paths);
  protect_paths(plan.mounts, p);
  mark_host_views(plan.mounts);
  collapse_duplicates(plan.mounts);
  return plan;
}

namespace {

// Whether `path` names "/" itself ("/", "//", "/./").
bool names_root_dir(std::string_view path) {
  for (char c : path)
    if (c != '/' && c != '.') return false;
  return !path.empty() && path.find("..") == std::string_view::npos;
}

}  // namespace

bool may_name_host_root(const MountStep& s, bool followed_link) {
  if (s.op != Op::bind || s.source_fd >= 0) return true;
  if (s.source_in_root) return false;
  return followed_link || !plain_path(s.source) || s.source == "/";
}

bool binds_onto_own_source(const MountStep& s) {
  return s.op == Op::bind && s.source_in_root && s.source_fd < 0 && !s.cover && !s.no_symlinks &&
         s.source == s.dest && !names_root_dir(s.dest);
}

std::string describe(const MountStep& s) {
  auto with_attrs = [&](std::string text) {
    if (s.attrs != 0) text += fmt::format(" [{}]", mount_attr_names(s.attrs));
    return text;
  };
  switch (s.op) {
    case Op::bind:
      if (s.cover) return with_attrs(fmt::format("bind {} -> {} (cover, if present)", s.source, s.dest));
      if (s.source_fd >= 0) return with_attrs(fmt::format("bind fd {} -> {}", s.source_fd, s.dest));
      return with_attrs(fmt::format("bind {}{} -> {}{}", s.source_in_root ? "(new root) " : "", s.source, s.dest,
                                    s.optional ? " (if present)" : ""));
    case Op::tmpfs:
      return with_attrs(fmt::format("tmpfs {} mode={:04o}{}{}", s.dest, s.mode,
                                    s.size ? fmt::format(" size={}", s.size) : std::string(),
                                    s.cover ? " (cover, if present)" : ""));
    case Op::proc: return with_attrs(fmt::format("proc {} (fresh, this PID namespace)", s.dest));
    case Op::devpts: return with_attrs(fmt::format("devpts {} {}", s.dest, s.options));
    case Op::mqueue: return with_attrs(fmt::format("mqueue {}", s.dest));
    case Op::set_attr: return with_attrs(fmt::format("set-attr {} (recursive)", s.dest));
    case Op::mkdir: return fmt::format("mkdir {} mode={:04o}", s.dest, s.mode);
    case Op::symlink: return fmt::format("symlink {} -> {}", s.dest, s.source);
    case Op::write_file:
      return with_attrs(fmt::format("{} {} ({} bytes) mode={:04o}{}", s.source.empty() ? "file" : "bind-data",
                                    s.dest, s.data.size(), s.mode, s.cover ? " (cover, if present)" : ""));
    case Op::chmod: return fmt::format("chmod {} {:04o}", s.dest, s.mode);
    case Op::protect:
      return fmt::format("protect {} (read-only if present; symlink covered; if missing: uncreatable below {})",
                         s.dest, s.source);
    case Op::overlay: {
      std::string upper = s.private_upper ? " upper=(private tmpfs)"
                          : s.source.empty() ? std::string()
                                             : fmt::format(" upper={} work={}", s.source, s.workdir);
      return with_attrs(fmt::format("overlay {} lower={}{}", s.dest, fmt::join(s.layers, ":"), upper));
    }
  }
  return "?";
}

std::string describe(const LaunchPlan& plan) {
  std::string out;
  out += fmt::format("namespaces: {}\n", clone_flag_names(plan.clone_flags));
  if (plan.id_maps) {
    out += fmt::format("uid_map: {} {} 1\n", plan.uid_map.inside, plan.uid_map.outside);
    out += "setgroups: deny\n";
    out += fmt::format("gid_map: {} {} 1\n", plan.gid_map.inside, plan.gid_map.outside);
  }
  if (!plan.hostname.empty()) out += fmt::format("hostname: {}\n", plan.hostname);
  out += fmt::format("proc: {}\n", name(plan.proc));
  out += "mounts:\n";
  out += "  make / private (recursive)\n";
  out += "  new root stacked on the host's /, in this mount namespace only (on a tmpfs, mode=0755, unless step 1 "
         "mounts on /)\n";
  for (std::size_t i = 0; i < plan.mounts.size(); ++i)
    out += fmt::format("  {:>2}. {}\n", i + 1, describe(plan.mounts[i]));
  out += "  pivot_root to the new root, old root detached\n";
  const bool pid_ns = (plan.clone_flags & CLONE_NEWPID) != 0;
  out += fmt::format("processes: {}\n", !plan.reaper ? "nsrun -> command (PID 1)"
                                         : pid_ns     ? "nsrun -> PID 1 (reaper) -> command (PID 2)"
                                                      : "nsrun -> lock holder -> command");
  out += fmt::format("chdir: {}{}\n", plan.chdir, plan.chdir_required ? "" : plan.chdir_fallback ? " (else /)" : " (refused when not visible inside; --chdir DIR)");
  return out;
}

}  // namespace nsrun
