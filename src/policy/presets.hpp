// Mode presets: a mode expands into the head of the ordered mount list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// One operation, the way presets and tests write them.
MountOp mount_op(MountOp::Kind kind, std::string source, std::string dest);

// Whether a writable root contains the private /dev, /proc and /tmp, so the
// preset binds it before them: `/` only (validate() refuses other names that
// resolve to an ancestor of them).
bool contains_private_mounts(std::string_view root);

// The preset's operations for `policy.mode`, without the policy's own mounts.
std::vector<MountOp> preset_mounts(const Policy& policy);

// Calls `f` on each of the preset's operations (when on), then on the
// policy's own mounts: the order in which later entries win. Nothing of the
// policy's list is copied (a thousand --ro options make a long one).
// --network proxy: /etc/resolv.conf inside names nsrun's DNS
// stub (127.0.0.1:53 in the sandbox's network namespace), read-only.
MountOp resolver_mount();

template <typename F>
void for_each_mount(const Policy& policy, F&& f) {
  for (const MountOp& m : preset_mounts(policy)) f(m);
  for (const MountOp& m : policy.mounts) f(m);
  // Last, so no later bind covers it; the host's own file is untouched.
  if (policy.network == Network::proxy) f(resolver_mount());
}

// The same operations as one list.
std::vector<MountOp> effective_mounts(const Policy& policy);

}  // namespace nsrun
