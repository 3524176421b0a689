// Flag values printed by name: CLONE_NEWUSER|CLONE_NEWPID, rdonly|nosuid.
#pragma once

#include <cstdint>
#include <string>

namespace nsrun {

std::string clone_flag_names(uint64_t flags);
std::string mount_attr_names(uint64_t attrs);

}  // namespace nsrun
