// User namespace: the id maps. The child writes its own maps: a single line
// mapping its own effective id is what an unprivileged process may write,
// and it saves a round trip with the parent. In launch/, not ns/: it applies
// the LaunchPlan (mount/plan.hpp), and ns/ and mount/ are peer layers.
#pragma once

#include "mount/plan.hpp"
#include "sys/error.hpp"

namespace nsrun {

// Child side, right after clone: uid_map, setgroups=deny, gid_map. The
// kernel refuses an unprivileged gid_map until setgroups is denied.
Result<void> write_id_maps(const LaunchPlan& plan);

}  // namespace nsrun
