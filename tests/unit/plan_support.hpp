// The launch that the plan tests start from: a workspace-write Policy for
// a caller with uid and gid 1000 and a workspace at /home/u/ws.
#pragma once

#include "mount/plan.hpp"
#include "policy/policy.hpp"

namespace plan_support {

inline nsrun::Policy workspace_policy() {
  nsrun::Policy p;
  p.workspace = "/home/u/ws";
  p.argv = {"true"};
  return p;
}

inline nsrun::HostFacts host() { return nsrun::HostFacts{1000, 1000, "/home/u/ws"}; }

}  // namespace plan_support
