#include "seccomp/writes.hpp"

#include <fcntl.h>
#include <linux/openat2.h>

#include <algorithm>
#include <array>

#include <fmt/core.h>

#include "sys/error.hpp"

namespace nsrun {

namespace {

// Write intent in open(2)'s flags. O_TMPFILE needs O_WRONLY or O_RDWR, so
// it is among these; O_APPEND alone opens for reading.
constexpr uint64_t write_flags[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC};

// The watched calls by their native names; the argument indexes are the
// kernel's (open(path, flags), openat(dirfd, path, flags), ...).
constexpr WriteCallShape shapes[] = {
    {"open", {-1, 0}},
    {"openat", {0, 1}},
    {"openat2", {0, 1}, {}, -1, -1, 2},
    {"creat", {-1, 0}},
    {"mkdir", {-1, 0}},
    {"mkdirat", {0, 1}},
    {"mknod", {-1, 0}},
    {"mknodat", {0, 1}},
    {"unlink", {-1, 0}},
    {"unlinkat", {0, 1}},
    {"rmdir", {-1, 0}},
    {"rename", {-1, 0}, {-1, 1}},
    {"renameat", {0, 1}, {2, 3}},
    {"renameat2", {0, 1}, {2, 3}},
    // A hard link or symlink writes a new name; the old one is only read.
    {"link", {}, {-1, 1}},
    {"linkat", {}, {2, 3}},
    {"symlink", {}, {-1, 1}},
    {"symlinkat", {}, {1, 2}},
    {"chmod", {-1, 0}},
    {"fchmod", {}, {}, 0},
    {"fchmodat", {0, 1}},
    {"fchmodat2", {0, 1}, {}, -1, 3},
    {"chown", {-1, 0}},
    {"lchown", {-1, 0}},
    {"fchown", {}, {}, 0},
    {"fchownat", {0, 1}, {}, -1, 4},
    {"truncate", {-1, 0}},
};

}  // namespace

FilterSpec watch_writes_spec() {
  FilterSpec spec;
  spec.enabled = true;
  spec.foreign_abi_allowed = true;
  constexpr std::string_view why = "write intent, observed by --watch-writes (always continued)";
  for (const auto& shape : shapes) {
    const std::string_view n = shape.syscall;
    // Flags are an `int`: only the low 32 bits are the kernel's.
    const int flags_arg = n == "open" ? 1 : n == "openat" ? 2 : -1;
    if (flags_arg < 0) {
      spec.rules.push_back(Rule{n, 0, std::nullopt, why, true, true});
      continue;
    }
    for (uint64_t bit : write_flags)
      spec.rules.push_back(Rule{n, 0, ArgMatch{static_cast<unsigned>(flags_arg), bit, bit, false}, why, true, true});
  }
  return spec;
}

namespace {

FilterSpec notify_with(const FilterSpec& notify, const FilterSpec& added) {
  FilterSpec out = notify;
  if (!notify.enabled) return out;
  for (const Rule& w : added.rules) {
    // A call the variant already sends whatever its arguments (the Landlock
    // rung's chmod) needs no second rule.
    const bool covered = std::any_of(notify.rules.begin(), notify.rules.end(),
                                     [&](const Rule& r) { return r.syscall == w.syscall && !r.arg && r.notify; });
    if (!covered) out.rules.push_back(w);
  }
  return out;
}

}  // namespace

FilterSpec notify_watch_spec(const FilterSpec& notify) { return notify_with(notify, watch_writes_spec()); }

FilterSpec protect_guard_spec() {
  FilterSpec spec;
  spec.enabled = true;
  spec.foreign_abi_allowed = true;
  constexpr std::string_view why = "rename of or onto a protected path answered EROFS, not the mount's EBUSY";
  for (std::string_view n : {"rename", "renameat", "renameat2"}) spec.rules.push_back(Rule{n, 0, std::nullopt, why, true, true});
  return spec;
}

FilterSpec notify_guard_spec(const FilterSpec& notify) { return notify_with(notify, protect_guard_spec()); }


bool watch_continues(const FilterSpec& deny, std::string_view syscall, const std::array<uint64_t, 6>& args) {
  if (write_call_shape(syscall) == nullptr) return false;
  return !decide(deny, syscall, args).has_value();
}

const WriteCallShape* write_call_shape(std::string_view syscall) {
  for (const auto& s : shapes)
    if (s.syscall == syscall) return &s;
  return nullptr;
}

std::string resolve_path(std::string_view base, std::string_view path) {
  std::vector<std::string_view> parts;
  auto split = [&](std::string_view s) {
    while (!s.empty()) {
      const std::size_t slash = s.find('/');
      const std::string_view part = s.substr(0, slash);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      if (slash == std::string_view::npos) break;
      s.remove_prefix(slash + 1);
    }
  };
  if (path.empty() || path.front() != '/') split(base);
  split(path);
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

}  // namespace nsrun
