// Credentials of the sandboxed processes: capabilities and no_new_privs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"

namespace nsrun {

// A capability's number, as the kernel counts them (CAP_CHOWN is 0).
using cap_value_t = int;

// The kernel's name of capability `c` in libcap's spelling ("cap_chown"),
// or its number for one the kernel headers nsrun was built with do not
// name. A table of nsrun's own rather than libcap's cap_to_name(): linking
// libcap runs its library constructor in every nsrun process (6 prctl
// calls to find the kernel's last capability), for nothing nsrun
// uses but these names.
std::string capability_name(cap_value_t c);

// The number of the capability named `name` ("cap_net_admin", any case),
// nullopt for a name the table lacks. Only whole names: no numbers.
std::optional<cap_value_t> capability_from_name(std::string_view name);

// Capability names ("CAP_NET_ADMIN", "net_admin", "ALL") -> values; decided
// before clone.
Result<std::vector<cap_value_t>> parse_capabilities(const std::vector<std::string>& names);

// The capabilities of `wanted` this process holds in its permitted set
// ("ALL" means all of those): asking the kernel for more is refused.
std::vector<cap_value_t> held_capabilities(const std::vector<cap_value_t>& wanted);

// Empties the bounding and ambient sets but for `keep`. They are inherited
// by fork, so the namespace rung does this once, before PID 1 forks the
// command. A process without CAP_SETPCAP (an unprivileged caller on the
// Landlock rung) cannot change its bounding set and needs not: with
// no_new_privs, exec adds nothing.
Result<void> drop_bounding_and_ambient(const std::vector<cap_value_t>& keep);

// Sets this process's effective and permitted sets to `keep`. With
// `grant_inheritable` its inheritable set too, and the kept ones are raised
// as ambient so they survive exec; without (bwrap's default for root), the
// inheritable set keeps only what it already held of `keep`, so only those
// can be raised (the kernel refuses the rest, which is not an error): uid
// 0 gets its permitted set back at exec anyway.
Result<void> set_capabilities(const std::vector<cap_value_t>& keep, bool grant_inheritable = true);

Result<void> set_no_new_privs();

}  // namespace nsrun
