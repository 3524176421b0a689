// Credentials of the sandboxed processes: capabilities and no_new_privs.
#pragma once

#include <sys/capability.h>

#include <string>
#include <vector>

#include "sys/error.hpp"

namespace nsrun {

// Capability names ("CAP_NET_ADMIN", "net_admin", "ALL") -> values; decided
// before clone.
Result<std::vector<cap_value_t>> parse_capabilities(const std::vector<std::string>& names);

// Drops every capability not in `keep` from the bounding, ambient,
// inheritable, permitted and effective sets.
Result<void> drop_capabilities(const std::vector<cap_value_t>& keep);

Result<void> set_no_new_privs();

}  // namespace nsrun
