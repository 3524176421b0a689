#include "ns/credentials.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace nsrun {

Result<std::vector<cap_value_t>> parse_capabilities(const std::vector<std::string>& names) {
  std::vector<cap_value_t> out;
  for (const auto& raw : names) {
    std::string name = raw;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "all") {
      for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) out.push_back(c);
      continue;
    }
    if (!name.starts_with("cap_")) name = "cap_" + name;
    cap_value_t value = 0;
    if (cap_from_name(name.c_str(), &value) != 0)
      return fail(usage_error("--cap-add", fmt::format("{}: unknown capability", raw)));
    out.push_back(value);
  }
  return out;
}

namespace {
bool kept(const std::vector<cap_value_t>& keep, cap_value_t c) {
  return std::find(keep.begin(), keep.end(), c) != keep.end();
}

struct CapSets {
  __user_cap_data_struct data[2]{};
  bool has(cap_value_t c, uint32_t __user_cap_data_struct::*set) const {
    return c >= 0 && c < 64 && (data[c / 32].*set & (1u << (c % 32))) != 0;
  }
};

Result<CapSets> current_sets() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  CapSets sets;
  if (::syscall(SYS_capget, &header, sets.data) != 0) return fail(sys_error(Operation::read_capabilities));
  return sets;
}
}  // namespace

std::vector<cap_value_t> held_capabilities(const std::vector<cap_value_t>& wanted) {
  std::vector<cap_value_t> keep;
  auto sets = current_sets();
  if (!sets) return keep;
  for (cap_value_t c : wanted)
    if (sets->has(c, &__user_cap_data_struct::permitted) && !kept(keep, c)) keep.push_back(c);
  return keep;
}

// Plain prctl/capset instead of libcap's helpers: cap_reset_ambient() asks
// about each capability first and cap_set_proc() allocates, which made this
// step about 85 system calls where 43 do.
Result<void> drop_bounding_and_ambient(const std::vector<cap_value_t>& keep) {
  auto sets = current_sets();
  if (!sets) return fail(sets.error());
  // The bounding set must be emptied while CAP_SETPCAP is still effective;
  // it is what keeps a later execve of a setuid or file-capability binary
  // from regaining anything. The kernel answers EINVAL past its last
  // capability, which ends the loop without asking for the count first.
  if (sets->has(CAP_SETPCAP, &__user_cap_data_struct::effective)) {
    for (cap_value_t c = 0;; ++c) {
      if (kept(keep, c)) continue;
      if (::prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0) continue;
      if (errno == EINVAL) break;
      return fail(sys_error(Operation::drop_bounding, cap_to_name(c)));
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return fail(sys_error(Operation::clear_ambient));
  return {};
}

Result<void> set_capabilities(const std::vector<cap_value_t>& keep) {
  struct __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2]{};
  for (cap_value_t c : keep) {
    if (c < 0 || c >= 64) continue;
    const uint32_t bit = 1u << (c % 32);
    data[c / 32].effective |= bit;
    data[c / 32].permitted |= bit;
    data[c / 32].inheritable |= bit;
  }
  if (::syscall(SYS_capset, &header, data) != 0) return fail(sys_error(Operation::drop_capabilities));
  // Kept capabilities survive execve of an ordinary binary only as ambient.
  for (cap_value_t c : keep)
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) != 0)
      return fail(sys_error(Operation::raise_ambient, cap_to_name(c)));
  return {};
}

Result<void> set_no_new_privs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(sys_error(Operation::no_new_privs));
  return {};
}

}  // namespace nsrun
