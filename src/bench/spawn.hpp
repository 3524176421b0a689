// The real Launcher: posix_spawn (glibc spawns with CLONE_VM|CLONE_VFORK, so
// the bench's own cost per launch is small and the same for every row) and
// wait4 for the children's CPU time and peak RSS.
#pragma once

#include <memory>

#include "bench/bench.hpp"
#include "sys/error.hpp"

namespace nsrun::bench {

Result<std::unique_ptr<Launcher>> process_launcher();

}  // namespace nsrun::bench
