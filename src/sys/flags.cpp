#include "sys/flags.hpp"

#include <sched.h>

#include <utility>

namespace nsrun {

namespace {
template <std::size_t N>
std::string join_names(uint64_t bits, const std::pair<uint64_t, const char*> (&table)[N]) {
  std::string out;
  for (const auto& [bit, label] : table) {
    if ((bits & bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += label;
    bits &= ~bit;
  }
  if (bits != 0) {
    if (!out.empty()) out += '|';
    out += "0x";
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (; bits != 0; bits >>= 4) hex.insert(hex.begin(), digits[bits & 0xf]);
    out += hex;
  }
  return out.empty() ? "0" : out;
}
}  // namespace

std::string clone_flag_names(uint64_t flags) {
  static const std::pair<uint64_t, const char*> table[] = {
      {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"},
      {CLONE_NEWNS, "CLONE_NEWNS"},     {CLONE_NEWNET, "CLONE_NEWNET"},
      {CLONE_NEWIPC, "CLONE_NEWIPC"},   {CLONE_NEWUTS, "CLONE_NEWUTS"},
      {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
  };
  return join_names(flags, table);
}

std::string mount_attr_names(uint64_t attrs) {
  static const std::pair<uint64_t, const char*> table[] = {
      {attr::rdonly, "rdonly"}, {attr::nosuid, "nosuid"},
      {attr::nodev, "nodev"},   {attr::noexec, "noexec"},
  };
  return join_names(attrs, table);
}

}  // namespace nsrun
