// The filter programs compiled when nsrun was built (tools/gen-seccomp.cpp
// writes them, packed: seccomp/packed.hpp). A FilterKey names one variant:
// together its fields are everything filter_spec() reads from a Policy.
// Each function unpacks one program; a damaged table is an error, never an
// empty program (which would mean "no filter").
#pragma once

#include <cstddef>
#include <string_view>

#include "seccomp/filter.hpp"
#include "seccomp/rules.hpp"

namespace nsrun {

Result<BpfProgram> precompiled_filter(const FilterKey& key);
// The size of precompiled_filter(key)'s program, read from the table
// without unpacking it (0: no filter).
std::size_t precompiled_filter_size(const FilterKey& key);
Result<BpfProgram> precompiled_no_userns_filter();
// The --watch-writes filter (seccomp/writes.hpp).
Result<BpfProgram> precompiled_watch_writes_filter();
// precompiled_notify_filter(key) with the watch's rules (notify_watch_spec()).
Result<BpfProgram> precompiled_notify_watch_filter(const FilterKey& key);
// precompiled_notify_filter(key) with the protect guard's rules (notify_guard_spec()).
Result<BpfProgram> precompiled_notify_guard_filter(const FilterKey& key);
// The notifying variant of precompiled_filter(key) (notify_spec()); empty
// when there is none (log mode, no filter).
Result<BpfProgram> precompiled_notify_filter(const FilterKey& key);
// The name of a system call any filter names, by number; empty otherwise.
std::string_view precompiled_syscall_name(int nr);

}  // namespace nsrun
