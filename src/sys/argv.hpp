// The NULL-terminated char* arrays execve() and posix_spawn() take, over
// strings that outlive the call. The kernel does not write through them.
#pragma once

#include <string>
#include <vector>

namespace nsrun {

inline std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace nsrun
