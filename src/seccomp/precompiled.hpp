// The filter programs compiled when nsrun was built (tools/gen-seccomp.cpp
// writes their definitions). A FilterKey names one variant: together its
// fields are everything filter_spec() reads from a Policy.
#pragma once

#include <linux/filter.h>

#include <span>

#include "seccomp/rules.hpp"

namespace nsrun {

std::span<const sock_filter> precompiled_filter(const FilterKey& key);
std::span<const sock_filter> precompiled_no_userns_filter();

}  // namespace nsrun
