// Flag values printed by name: CLONE_NEWUSER|CLONE_NEWPID, rdonly|nosuid.
#pragma once

#include <cstdint>
#include <string>

namespace nsrun {

// Mount attribute bits, the kernel's MOUNT_ATTR_* values. Here rather than
// in mount/ because the names below print them and sys/ includes nothing
// above it (tests/unit/layers_test.cpp).
namespace attr {
inline constexpr uint64_t rdonly = 0x1;
inline constexpr uint64_t nosuid = 0x2;
inline constexpr uint64_t nodev = 0x4;
inline constexpr uint64_t noexec = 0x8;
}  // namespace attr

std::string clone_flag_names(uint64_t flags);
std::string mount_attr_names(uint64_t attrs);

}  // namespace nsrun
