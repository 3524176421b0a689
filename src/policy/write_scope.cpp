#include "policy/write_scope.hpp"

#include <algorithm>

#include "policy/paths.hpp"
#include "policy/presets.hpp"
#include "policy/protect.hpp"

namespace nsrun {

std::string_view name(WritePlace p) {
  switch (p) {
    case WritePlace::writable: return "writable";
    case WritePlace::outside: return "outside";
    case WritePlace::protected_: return "protected";
    case WritePlace::kernel: return "kernel";
  }
  return "outside";
}

WriteScope write_scope(const Policy& policy, bool landlock_rung) {
  using K = MountOp::Kind;
  WriteScope s;
  s.landlock = landlock_rung;
  for_each_mount(policy, [&](const MountOp& m) {
    switch (m.kind) {
      case K::bind:
      case K::dev_bind:
      case K::bind_data:
      case K::tmpfs:
      case K::overlay:
      case K::tmp_overlay:
        // The Landlock rung's tmpfs /tmp is a private TMPDIR instead: /tmp
        // itself stays the host's, read-only.
        if (landlock_rung) {
          if (m.kind == K::bind) s.writable.push_back(m.dest);
        } else {
          s.mounts.emplace_back(m.dest, true);
        }
        break;
      case K::ro_bind:
      case K::hide:
      case K::ro_bind_data:
      case K::ro_overlay:
      case K::remount_ro:
      case K::proc:
      case K::dev:
      case K::mqueue:
        if (!landlock_rung) s.mounts.emplace_back(m.dest, false);
        break;
      case K::dir:
      case K::symlink:
      case K::file:
      case K::chmod:
        break;
    }
  });
  s.roots = writable_roots(policy);
  s.protected_set = protected_paths(policy);
  return s;
}

WritePlace classify(const WriteScope& s, std::string_view path) {
  if (at_or_below(path, "/dev") || at_or_below(path, "/proc")) return WritePlace::kernel;
  bool writable = false;
  if (s.landlock) {
    writable = std::any_of(s.writable.begin(), s.writable.end(), [&](const std::string& w) { return at_or_below(path, w); });
    if (!s.tmpdir.empty() && at_or_below(path, s.tmpdir)) return WritePlace::writable;
  } else {
    for (auto it = s.mounts.rbegin(); it != s.mounts.rend(); ++it)
      if (at_or_below(path, it->first)) {
        writable = it->second;
        break;
      }
  }
  if (!writable) return WritePlace::outside;
  for (const auto& root : s.roots) {
    if (!at_or_below(path, root)) continue;
    std::string_view rel = path.substr(root == "/" ? 1 : root.size());
    if (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    if (rel.empty()) continue;  // the root itself: writable (it is an ancestor of every protected path)
    const auto set = protected_in_root(root, s.protected_set);
    if (match_protected(rel, set) != ProtectMatch::none) return WritePlace::protected_;
  }
  return WritePlace::writable;
}

std::string protected_entry(const WriteScope& s, std::string_view path) {
  if (classify(s, path) != WritePlace::protected_) return {};
  for (const auto& root : s.roots) {
    if (!at_or_below(path, root)) continue;
    std::string_view rel = path.substr(root == "/" ? 1 : root.size());
    if (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    for (const auto& entry : protected_in_root(root, s.protected_set)) {
      const std::string one[] = {entry};
      if (match_protected(rel, one) == ProtectMatch::protected_) return entry;
    }
  }
  return {};
}

}  // namespace nsrun
