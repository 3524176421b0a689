// The sandbox's cgroup's account after the run, for both rungs.
#pragma once

#include "launch/watch.hpp"
#include "ns/cgroup.hpp"
#include "policy/limits.hpp"

namespace nsrun {

// Into the verdict: the peak memory (`peak_source` names the file), the
// forks refused at pids.max, and an OOM kill as the end.
void account_cgroup(const CgroupEvents& events, const char* peak_source, const LimitsPlan& plan, Verdict& v);

}  // namespace nsrun
