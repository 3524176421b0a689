// Whether nsrun may make a cgroup for the sandbox: a cgroup v2
// subtree delegated to the caller, found as crun and nsjail find it, from
// /proc/self/cgroup and write access. Parsing is pure; detection reads the
// files under a root given by the caller, so it is tested on a fake tree.
//
// On a cgroup v1 or hybrid host (this project's CI: the controllers are
// bound to v1 hierarchies and the v2 `unified` one has none) there is no
// v2 subtree to use and the limits fall back to rlimits (policy/limits.hpp).
#pragma once

#include <sys/types.h>

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
  std::string dir;                       // the delegated v2 cgroup to use, absolute
  bool inside = false;                   // it is the caller's own cgroup
  std::vector<std::string> controllers;  // of memory, pids, cpu: those in its cgroup.controllers
  std::string why;                       // when not usable
};

// Of a cgroup.procs text: how many pids are not `self`; whether `pid` is one.
std::size_t cgroup_other_processes(std::string_view procs, pid_t self);
bool cgroup_lists(std::string_view procs, pid_t pid);

// `mount` is where the v2 hierarchy is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid host); `proc_self_cgroup` the text of
// /proc/self/cgroup; `configured` a cgroup directory the caller named
// ($NSRUN_CGROUP), else the caller's own cgroup is used. Usable when that
// cgroup is writable by the caller (cgroup.procs, cgroup.subtree_control
// and the directory itself) and, when it is the caller's own, holds no
// other process: v2 lets no cgroup with processes but the root hand
// controllers to its children, and nsrun can move only itself out.
CgroupHost detect_cgroup_v2(const std::string& mount, std::string_view proc_self_cgroup,
                            const std::string& configured = "", pid_t self = 0);

// The real host: finds the v2 mount (statfs magic), reads /proc/self/cgroup
// and $NSRUN_CGROUP.
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
