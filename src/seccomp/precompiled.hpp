// The filter programs compiled when nsrun was built (tools/gen-seccomp.cpp
// writes their definitions). A FilterKey names one variant: together its
// fields are everything filter_spec() reads from a Policy.
#pragma once

#include <linux/filter.h>

#include <span>
#include <string_view>

#include "seccomp/rules.hpp"

namespace nsrun {

std::span<const sock_filter> precompiled_filter(const FilterKey& key);
std::span<const sock_filter> precompiled_no_userns_filter();
// The --watch-writes filter (seccomp/writes.hpp).
std::span<const sock_filter> precompiled_watch_writes_filter();
// precompiled_notify_filter(key) with the watch's rules (notify_watch_spec()).
std::span<const sock_filter> precompiled_notify_watch_filter(const FilterKey& key);
// The notifying variant of precompiled_filter(key) (notify_spec()); empty
// when there is none (log mode, no filter).
std::span<const sock_filter> precompiled_notify_filter(const FilterKey& key);
// The name of a system call any filter names, by number; empty otherwise.
std::string_view precompiled_syscall_name(int nr);

}  // namespace nsrun
