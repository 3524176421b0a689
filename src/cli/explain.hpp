// `nsrun explain`: the plan for a Policy, printed, nothing run.
#pragma once

#include <string>

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

Result<std::string> explain(const Policy& policy);

}  // namespace nsrun
