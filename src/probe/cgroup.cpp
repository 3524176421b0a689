#include "probe/cgroup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

namespace {

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::string read_text(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  auto text = read_all(fd.get(), "cgroup", path, 1 << 16);
  return text ? *text : std::string();
}

}  // namespace

std::optional<std::string> cgroup_v2_path(std::string_view text) {
  for (auto line : lines(text))
    if (line.starts_with("0::/")) return std::string(line.substr(3));
  return std::nullopt;
}

std::vector<std::string> cgroup_v1_controllers(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : lines(text)) {
    // "N:controllers:/path"; v2 is "0::/path", named hierarchies "name=..".
    const auto a = line.find(':');
    const auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view list = line.substr(a + 1, b - a - 1);
    while (!list.empty()) {
      const auto comma = list.find(',');
      const auto item = list.substr(0, comma);
      if (!item.empty() && !item.starts_with("name=")) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return out;
}

std::size_t cgroup_other_processes(std::string_view procs, pid_t self) {
  std::size_t n = 0;
  const std::string me = std::to_string(self);
  for (auto line : lines(procs))
    if (!line.empty() && line != me) ++n;
  return n;
}

bool cgroup_lists(std::string_view procs, pid_t pid) {
  const std::string p = std::to_string(pid);
  for (auto line : lines(procs))
    if (line == p) return true;
  return false;
}

CgroupHost detect_cgroup_v2(const std::string& mount, std::string_view proc_self_cgroup,
                            const std::string& configured, pid_t self) {
  CgroupHost host;
  const auto path = cgroup_v2_path(proc_self_cgroup);
  if (!path && configured.empty()) {
    host.why = "no cgroup v2 hierarchy in /proc/self/cgroup";
    return host;
  }
  const std::string own = path ? mount + (*path == "/" ? "" : *path) : std::string();
  if (!configured.empty()) {
    // A name, not a walk: ".." could leave the hierarchy.
    if ((configured != mount && !configured.starts_with(mount + "/")) || configured.find("/..") != std::string::npos ||
        configured.find("/./") != std::string::npos) {
      host.why = "NSRUN_CGROUP=" + configured + " is not a cgroup directory under " + mount;
      return host;
    }
    host.dir = configured;
    while (host.dir.size() > mount.size() && host.dir.ends_with('/')) host.dir.pop_back();
  } else {
    host.dir = own;
  }
  host.inside = host.dir == own;
  const std::string which = configured.empty() ? "the caller's cgroup " : "NSRUN_CGROUP ";
  if (::access((host.dir + "/cgroup.controllers").c_str(), R_OK) != 0) {
    host.why = which + host.dir + " is not a cgroup v2 directory";
    return host;
  }
  const std::string controllers = read_text(host.dir + "/cgroup.controllers");
  const auto v1 = cgroup_v1_controllers(proc_self_cgroup);
  for (const char* c : {"memory", "pids", "cpu"}) {
    bool listed = false;
    std::string_view rest = controllers;
    while (!rest.empty()) {
      const auto sp = rest.find_first_of(" \n");
      if (rest.substr(0, sp) == c) listed = true;
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
    if (listed && std::find(v1.begin(), v1.end(), c) == v1.end()) host.controllers.emplace_back(c);
  }
  if (host.controllers.empty()) {
    host.why = v1.empty() ? which + host.dir + " offers none of memory, pids, cpu"
                          : "the memory, pids and cpu controllers are bound to cgroup v1 hierarchies (a hybrid host)";
    return host;
  }
  // Delegation, as the kernel checks it: the directory (to make children)
  // and its cgroup.procs and cgroup.subtree_control files must be ours to
  // write.
  for (const char* f : {"", "/cgroup.procs", "/cgroup.subtree_control"})
    if (::access((host.dir + f).c_str(), W_OK) != 0) {
      host.why = which + host.dir + " is not delegated to it (not writable)";
      return host;
    }
  // The root cgroup is exempt from the no-internal-process rule.
  if (host.inside && host.dir != mount)
    if (const std::size_t others = cgroup_other_processes(read_text(host.dir + "/cgroup.procs"), self); others > 0) {
      host.why = fmt::format(
          "the caller's cgroup {} holds {} other process{} (a cgroup v2 with processes hands no controllers to its "
          "children): start nsrun as the only process of a delegated cgroup (systemd-run --user --scope -p "
          "Delegate=yes nsrun ...), or name an empty delegated one in NSRUN_CGROUP (docs/limits.md)",
          host.dir, others, others == 1 ? "" : "es");
      return host;
    }
  host.usable = true;
  return host;
}

CgroupHost detect_cgroup_v2() {
  for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs st{};
    if (::statfs(mount, &st) != 0 || st.f_type != CGROUP2_SUPER_MAGIC) continue;
    const char* configured = std::getenv("NSRUN_CGROUP");
    return detect_cgroup_v2(mount, read_text("/proc/self/cgroup"), configured ? configured : "", ::getpid());
  }
  CgroupHost none;
  none.why = "no cgroup v2 hierarchy is mounted";
  return none;
}

CgroupV1Host detect_cgroup_v1(const std::string& mount, std::string_view text, bool root) {
  CgroupV1Host host;
  if (!root) {
    host.why = "cgroup v1 is used for root only";
    return host;
  }
  for (auto line : lines(text)) {
    const auto a = line.find(':');
    const auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos || b == a + 1) continue;
    const std::string_view list = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    for (const char* c : {"memory", "pids", "cpu"}) {
      // "cpu,cpuacct" is one hierarchy holding both.
      std::string_view rest = list;
      bool has = false;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (rest.substr(0, comma) == c) has = true;
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
      if (!has) continue;
      const std::string dir = mount + "/" + c + (path == "/" ? "" : std::string(path));
      if (::access((dir + "/cgroup.procs").c_str(), W_OK) == 0) host.dirs.emplace_back(c, dir);
    }
  }
  host.usable = !host.dirs.empty();
  if (!host.usable) host.why = "no writable cgroup v1 hierarchy for memory, pids or cpu";
  return host;
}

CgroupV1Host detect_cgroup_v1() {
  struct statfs st{};
  if (::statfs("/sys/fs/cgroup", &st) != 0 || st.f_type == CGROUP2_SUPER_MAGIC) {
    CgroupV1Host none;
    none.why = "no cgroup v1 hierarchies are mounted";
    return none;
  }
  return detect_cgroup_v1("/sys/fs/cgroup", read_text("/proc/self/cgroup"), ::geteuid() == 0);
}

}  // namespace nsrun
