// `nsrun runs [--json]` and `nsrun runs prune (--older-than AGE | --all)`:
// the copy-on-write run layers under the run base, as the caller.
#pragma once

#include <span>
#include <string>

namespace nsrun {

// args: what follows `runs`. Returns the exit status.
int runs_main(std::span<const std::string> args);

}  // namespace nsrun
