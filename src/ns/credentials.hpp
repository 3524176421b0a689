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

// The two halves of drop_capabilities(). The bounding and ambient sets are
// inherited by fork, so the launch empties them once, before PID 1 forks
// the command; each process then only sets its own three sets.
Result<void> drop_bounding_and_ambient(const std::vector<cap_value_t>& keep);
Result<void> set_capabilities(const std::vector<cap_value_t>& keep);

Result<void> set_no_new_privs();

}  // namespace nsrun
