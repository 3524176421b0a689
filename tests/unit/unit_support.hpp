// Small helpers several unit tests share.
#pragma once

#include <linux/filter.h>

#include <cstring>

#include "cli/native.hpp"
#include "seccomp/filter.hpp"

namespace nsrun_unit {

// Two BPF programs, instruction for instruction.
inline bool same_program(const nsrun::BpfProgram& a, const nsrun::BpfProgram& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(sock_filter)) == 0);
}

// A caller in /tmp, for parsing command lines.
inline nsrun::CallerContext caller_in_tmp() {
  nsrun::CallerContext c;
  c.cwd = "/tmp";
  return c;
}

}  // namespace nsrun_unit
