#include "sys/flags.hpp"

#include "sys/namespaces.hpp"

#include <sched.h>

#include <array>
#include <string_view>
#include <utility>

namespace nsrun {

namespace {
template <class Table>
std::string join_names(uint64_t bits, const Table& table) {
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
  static constexpr auto table = [] {
    std::array<std::pair<uint64_t, std::string_view>, namespace_kinds.size()> out{};
    for (std::size_t k = 0; k < namespace_kinds.size(); ++k)
      out[k] = {namespace_kinds[k].clone_flag, namespace_kinds[k].flag_name};
    return out;
  }();
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
