#pragma once

// The namespaces nsrun makes: one row each, from which the clone flags of a
// plan, the policy's `namespaces` keys, the /proc/PID/ns links read for the
// start status, the flag names in messages and the ladder's denial reasons
// all derive. Adding a namespace is one row here (and a field in Namespaces).

#include <sched.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace nsrun {

struct NamespaceKind {
  uint64_t clone_flag;
  std::string_view name;       // the /proc/PID/ns link and the policy's `namespaces` key
  std::string_view flag_name;  // the clone flag as messages spell it
  std::string_view denied;     // the ladder's reason when the kernel refuses this one alone
  bool in_policy;              // a Namespaces field (the mount namespace is always made)
};

// In the order flag names are joined and the policy's keys are written.
inline constexpr std::array<NamespaceKind, 7> namespace_kinds = {{
    {CLONE_NEWUSER, "user", "CLONE_NEWUSER", "userns-denied", true},
    {CLONE_NEWPID, "pid", "CLONE_NEWPID", "pidns-denied", true},
    {CLONE_NEWNS, "mnt", "CLONE_NEWNS", "mntns-denied", false},
    {CLONE_NEWNET, "net", "CLONE_NEWNET", "netns-denied", true},
    {CLONE_NEWIPC, "ipc", "CLONE_NEWIPC", "ipcns-denied", true},
    {CLONE_NEWUTS, "uts", "CLONE_NEWUTS", "utsns-denied", true},
    {CLONE_NEWCGROUP, "cgroup", "CLONE_NEWCGROUP", "cgroupns-denied", true},
}};

// Every clone flag in the table.
inline constexpr uint64_t all_namespace_flags = [] {
  uint64_t all = 0;
  for (const auto& k : namespace_kinds) all |= k.clone_flag;
  return all;
}();

// The row for a clone flag, or nullptr.
constexpr const NamespaceKind* namespace_kind(uint64_t clone_flag) {
  for (const auto& k : namespace_kinds)
    if (k.clone_flag == clone_flag) return &k;
  return nullptr;
}

}  // namespace nsrun
