// Whether nsrun may make a cgroup for the sandbox: a cgroup v2
// subtree delegated to the caller, found as crun and nsjail find it, from
// /proc/self/cgroup and write access. Parsing is pure; detection reads the
// files under a root given by the caller, so it is tested on a fake tree.
//
// On a cgroup v1 or hybrid host (this project's CI: the controllers are
// bound to v1 hierarchies and the v2 `unified` one has none) there is no
// v2 subtree to use and the limits fall back to rlimits (policy/limits.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nsrun {

// The "0::/path" entry of /proc/self/cgroup (the v2 hierarchy), if any.
std::optional<std::string> cgroup_v2_path(std::string_view proc_self_cgroup);

// Controllers bound to v1 hierarchies ("memory", "pids", "cpu", ...): a
// controller in use by v1 is not available to v2.
std::vector<std::string> cgroup_v1_controllers(std::string_view proc_self_cgroup);

struct CgroupHost {
  bool usable = false;
  std::string dir;                       // the caller's v2 cgroup, absolute
  std::vector<std::string> controllers;  // of memory, pids, cpu: those in its cgroup.controllers
  std::string why;                       // when not usable
};

// `mount` is where the v2 hierarchy is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid host); `proc_self_cgroup` the text of
// /proc/self/cgroup. Usable when the caller's cgroup is writable by it
// (cgroup.procs, cgroup.subtree_control and the directory itself).
CgroupHost detect_cgroup_v2(const std::string& mount, std::string_view proc_self_cgroup);

// The real host: finds the v2 mount (statfs magic) and reads /proc/self/cgroup.
CgroupHost detect_cgroup_v2();

// cgroup v1, as nsjail uses it: for root only (v1 has no safe delegation),
// one directory per controller hierarchy. `mount` is where the v1
// hierarchies are mounted (/sys/fs/cgroup/<controller>).
struct CgroupV1Host {
  bool usable = false;
  // controller ("memory", "pids", "cpu") -> the caller's cgroup directory in it
  std::vector<std::pair<std::string, std::string>> dirs;
  std::string why;
};
CgroupV1Host detect_cgroup_v1(const std::string& mount, std::string_view proc_self_cgroup, bool root);
CgroupV1Host detect_cgroup_v1();

}  // namespace nsrun
