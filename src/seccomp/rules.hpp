// The default seccomp filter as data: which system calls are refused, on
// which arguments, with which errno, and why. Building the table makes no
// system call and needs no libseccomp, so it is unit-tested on its own;
// filter.cpp turns it into BPF.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun {

// Which rung will load the filter: the Landlock rung has no network
// namespace, so `--network none` must be enforced by the filter there.
enum class FilterRung { namespaces, landlock };

// One argument test: (arg[index] & mask) == value, on the full 64 bits.
// A mask of 0xffffffff compares the low 32 bits only, which is what the
// kernel itself looks at for `unsigned int` / `int` arguments.
struct ArgMatch {
  unsigned index = 0;
  uint64_t mask = ~uint64_t{0};
  uint64_t value = 0;
  bool greater = false;  // instead: arg[index] > value (unmasked)

  bool operator==(const ArgMatch&) const = default;
};

// A refused call: `syscall` (by its x86_64 / native name) matching `arg`
// (always, when unset) fails with `err` instead of running.
struct Rule {
  std::string_view syscall;
  int err = 1;  // EPERM
  std::optional<ArgMatch> arg;
  std::string_view reason;
  // Part of a rung's promise rather than hardening: refused even with
  // `--seccomp log` (which only logs the others).
  bool always = false;
  // Answered through SECCOMP_RET_USER_NOTIF: nsrun records the call and
  // answers `err`; see seccomp/notify.hpp.
  bool notify = false;
  // A second argument test, both must hold (socket's family and type).
  std::optional<ArgMatch> arg2 = std::nullopt;

  bool operator==(const Rule&) const = default;
};

struct FilterSpec {
  bool enabled = false;  // false: no program at all (--seccomp none)
  bool log = false;      // log matches instead of refusing them (--seccomp log)
  // Calls of another ABI (i386, x32 on x86_64) get this errno: the rules
  // name native system calls only, so another ABI would walk around them.
  int foreign_abi_err = 1;
  // Another ABI is refused even in log mode: some rule is `always`, and an
  // i386 chmod would walk around it.
  bool foreign_abi_always = false;
  // Another ABI is let through (the --watch-writes filter, which only
  // observes: the default filter refuses other ABIs).
  bool foreign_abi_allowed = false;
  std::vector<Rule> rules;
};

// The parts of a Policy (and rung) the default filter depends on.
struct FilterKey {
  bool enabled = true;         // false: --seccomp none
  bool log = false;            // --seccomp log
  bool nested_userns = false;  // --allow-nested-userns
  bool deny_inet = false;      // --network none on the Landlock rung
  // The Landlock rung: the calls whose target Landlock cannot confine to
  // the writable roots (file metadata) or that reach host IPC are refused.
  // With deny_inet, these are the rung's promise: loaded whatever
  // --seccomp says.
  bool landlock = false;
  bool deny_unix = false;      // --unix-sockets none, or host sockets to hide on the Landlock rung
  // --network proxy. Namespace rung: ptrace and process_vm_*
  // refused. Landlock rung: only TCP sockets of the inet families, no
  // fast-open, and connect()/listen() answered by nsrun (net/connector.hpp).
  bool proxy = false;

  // 0..127 over (log, nested_userns, deny_inet, landlock, !enabled,
  // deny_unix, proxy); the precompiled table's order.
  unsigned index() const {
    return (log ? 1u : 0u) | (nested_userns ? 2u : 0u) | (deny_inet ? 4u : 0u) | (landlock ? 8u : 0u) |
           (enabled ? 0u : 16u) | (deny_unix ? 32u : 0u) | (proxy ? 64u : 0u);
  }
  static FilterKey from_index(unsigned i) {
    return FilterKey{(i & 16) == 0, (i & 1) != 0, (i & 2) != 0, (i & 4) != 0, (i & 8) != 0, (i & 32) != 0, (i & 64) != 0};
  }
  static constexpr unsigned variants = 128;

  bool operator==(const FilterKey&) const = default;
};

// What the Landlock rung's filter refuses everywhere because neither
// Landlock nor seccomp can tell a writable root from the rest of the host
// for it, by stable name ("file-metadata", "sysv-ipc", "posix-mqueue"), for
// the report and `nsrun probe`.
std::vector<std::string_view> landlock_refused_everywhere();

FilterKey filter_key(const Policy& policy, FilterRung rung);
FilterSpec filter_spec(const FilterKey& key);
FilterSpec filter_spec(const Policy& policy, FilterRung rung);

// A filter refusing every way to make or enter a user namespace: unshare
// and clone with CLONE_NEWUSER, setns into one, and clone3 (its flags are
// out of a filter's reach, so it answers ENOSYS and libc falls back to
// clone). The errno is ENOSPC, what a user-namespace limit of 1 gives.
FilterSpec no_userns_spec();

// The notifying variant of `spec`: its refusing rules (all but
// clone3's ENOSYS) go to nsrun's listener, which answers each with the
// rule's errno (decide()), and
// seccomp(2) with SECCOMP_FILTER_FLAG_NEW_LISTENER is refused (see
// seccomp/notify.hpp). Disabled (no variant) for log mode and no filter,
// unless some rule notifies already (connect() under --network proxy on the
// Landlock rung): then in log mode only those notify.
FilterSpec notify_spec(const FilterSpec& spec);

// What the filter decides for one native call, evaluated from the table
// (not from BPF): the errno, or nullopt when the call is allowed. For tests
// and for `nsrun explain`; log mode still answers with the errno that
// would have been given.
std::optional<int> decide(const FilterSpec& spec, std::string_view syscall,
                          const std::array<uint64_t, 6>& args);

}  // namespace nsrun
