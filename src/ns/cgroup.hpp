// The sandbox's cgroup v2, nsrun's side: made before the clone,
// PID 1 started in it (clone3 with CLONE_INTO_CGROUP, so no process of the
// sandbox ever runs outside it), read and removed after. Every step goes
// through directory fds, never a path walked twice.
//
// The v2 rule that a cgroup with processes may not hand controllers to its
// children (no internal processes) is met as nsjail meets it: nsrun first
// moves itself into a leaf of the delegated cgroup ("nsrun-supervisor"),
// then enables the controllers and makes the sandbox's cgroup beside it.
// Where other processes share the delegated cgroup (the caller's shell),
// the kernel refuses (EBUSY) and the launch fails, naming the step.
//
// Only exercised end to end on a host with a delegated cgroup v2 subtree;
// tests/unit/cgroup_test.cpp runs the same steps on a fake tree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/limits.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// Pure: the controllers to enable ("+memory +pids") and the files to write
// in the sandbox's cgroup, in order.
std::string cgroup_controllers_line(const LimitsPlan& plan);
std::vector<std::pair<std::string, std::string>> cgroup_writes(const LimitsPlan& plan);

struct CgroupEvents {
  uint64_t oom_kills = 0;                // memory.events oom_kill
  std::optional<uint64_t> peak_bytes;    // memory.peak
  uint64_t pids_max_hits = 0;            // pids.events max
};
// Pure: whether a cgroup.subtree_control text ("cpu memory pids") already
// holds every controller of a controllers line ("+memory +pids").
bool cgroup_enables(std::string_view subtree_control, std::string_view line);
// Pure parsers of "key value" lines.
uint64_t cgroup_key(std::string_view text, std::string_view key);

class SandboxCgroup {
 public:
  // `base` is the delegated cgroup directory. `self` the pid to move into
  // the leaf. `fake_tree`: create control files that do not exist (a test
  // directory tree; the kernel makes them in a real cgroup).
  static Result<SandboxCgroup> make(const std::string& base, pid_t self, const LimitsPlan& plan,
                                    bool fake_tree = false);

  int fd() const { return dir_.get(); }        // for CLONE_INTO_CGROUP
  const std::string& path() const { return path_; }

  CgroupEvents events() const;
  // cgroup.kill (every process, at once, no escape by fork), then rmdir.
  // The kernel removes a cgroup only once it is empty; the caller has
  // reaped PID 1 by then, so only stragglers being killed remain.
  Result<void> remove();

 private:
  Fd base_;
  Fd dir_;
  std::string name_;
  std::string path_;
  bool fake_ = false;
};

// cgroup v1 as root (nsjail's way on hosts without a usable v2): one
// cgroup per controller hierarchy. v1 has no CLONE_INTO_CGROUP for several
// hierarchies at once, so nsrun moves itself into the sandbox's cgroups,
// clones PID 1 (which starts there), and moves itself back: no process of
// the sandbox ever runs outside them. There is no cgroup.kill either: the
// PID namespace ends everything with PID 1.
std::vector<std::pair<std::string, std::string>> cgroup_v1_writes(const std::string& controller,
                                                                  const LimitsPlan& plan);

class SandboxCgroupV1 {
 public:
  // `dirs`: controller -> the caller's cgroup directory in that hierarchy.
  static Result<SandboxCgroupV1> make(const std::vector<std::pair<std::string, std::string>>& dirs, pid_t self,
                                      const LimitsPlan& plan, bool fake_tree = false);
  Result<void> enter(pid_t self);  // nsrun into the sandbox's cgroups
  Result<void> leave(pid_t self);  // and back where it was
  CgroupEvents events() const;
  Result<void> remove();

 private:
  struct One {
    std::string controller;
    Fd parent;  // the caller's cgroup
    Fd dir;     // the sandbox's
    std::string path;
  };
  std::vector<One> cgroups_;
  std::string name_;
  bool fake_ = false;
};

}  // namespace nsrun
