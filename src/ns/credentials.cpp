#include "ns/credentials.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include <fmt/core.h>

namespace nsrun {

namespace {
// Indexed by number, as <linux/capability.h> defines them; a unit test
// holds it against libcap's names, and the static_assert against the
// headers' last capability.
constexpr std::string_view capability_names[] = {
    "cap_chown",           "cap_dac_override",  "cap_dac_read_search", "cap_fowner",
    "cap_fsetid",          "cap_kill",          "cap_setgid",          "cap_setuid",
    "cap_setpcap",         "cap_linux_immutable", "cap_net_bind_service", "cap_net_broadcast",
    "cap_net_admin",       "cap_net_raw",       "cap_ipc_lock",        "cap_ipc_owner",
    "cap_sys_module",      "cap_sys_rawio",     "cap_sys_chroot",      "cap_sys_ptrace",
    "cap_sys_pacct",       "cap_sys_admin",     "cap_sys_boot",        "cap_sys_nice",
    "cap_sys_resource",    "cap_sys_time",      "cap_sys_tty_config",  "cap_mknod",
    "cap_lease",           "cap_audit_write",   "cap_audit_control",   "cap_setfcap",
    "cap_mac_override",    "cap_mac_admin",     "cap_syslog",          "cap_wake_alarm",
    "cap_block_suspend",   "cap_audit_read",    "cap_perfmon",         "cap_bpf",
    "cap_checkpoint_restore",
};
static_assert(std::size(capability_names) == CAP_LAST_CAP + 1, "a capability the table does not name");
static_assert(CAP_NET_ADMIN == 12 && CAP_SYS_ADMIN == 21 && CAP_CHECKPOINT_RESTORE == 40);
}  // namespace

std::string capability_name(cap_value_t c) {
  if (c >= 0 && static_cast<std::size_t>(c) < std::size(capability_names))
    return std::string(capability_names[static_cast<std::size_t>(c)]);
  return fmt::format("{}", c);
}

std::optional<cap_value_t> capability_from_name(std::string_view name) {
  for (std::size_t c = 0; c < std::size(capability_names); ++c) {
    const std::string_view known = capability_names[c];
    if (name.size() == known.size() &&
        std::equal(name.begin(), name.end(), known.begin(),
                   [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
      return static_cast<cap_value_t>(c);
  }
  return std::nullopt;
}

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
    auto value = capability_from_name(name);
    if (!value) return fail(usage_error("--cap-add", fmt::format("{}: unknown capability", raw)));
    out.push_back(*value);
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
  if (wanted.empty()) return keep;  // the usual launch: nothing to ask the kernel
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
      const int err = errno;
      if (err == EINVAL) break;
      return fail(sys_error(Operation::drop_bounding, capability_name(c), err));
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return fail(sys_error(Operation::clear_ambient));
  return {};
}

Result<void> set_capabilities(const std::vector<cap_value_t>& keep, bool grant_inheritable) {
  struct __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2]{};
  CapSets found;
  if (!grant_inheritable && !keep.empty()) {
    auto sets = current_sets();
    if (!sets) return fail(sets.error());
    found = *sets;
  }
  for (cap_value_t c : keep) {
    if (c < 0 || c >= 64) continue;
    const uint32_t bit = 1u << (c % 32);
    data[c / 32].effective |= bit;
    data[c / 32].permitted |= bit;
    if (grant_inheritable || found.has(c, &__user_cap_data_struct::inheritable)) data[c / 32].inheritable |= bit;
  }
  if (::syscall(SYS_capset, &header, data) != 0) return fail(sys_error(Operation::drop_capabilities));
  // Kept capabilities survive execve of an ordinary binary only as ambient.
  // Without the grant, each is still asked for, as bwrap does: the kernel
  // refuses (EPERM) those not inheritable, which is the answer; any other
  // failure is one.
  for (cap_value_t c : keep)
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) != 0) {
      const int err = errno;
      if (!grant_inheritable && (err == EPERM || err == EINVAL)) continue;
      return fail(sys_error(Operation::raise_ambient, capability_name(c), err));
    }
  return {};
}

Result<void> set_no_new_privs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(sys_error(Operation::no_new_privs));
  return {};
}

}  // namespace nsrun
