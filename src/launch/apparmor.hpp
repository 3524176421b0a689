// Ubuntu's restriction of unprivileged user namespaces (Ubuntu 23.10 and
// later, AppArmor 4): with kernel.apparmor_restrict_unprivileged_userns=1
// an unprivileged process may still create a user namespace, but AppArmor
// moves it to a profile that holds no capabilities in it, unless the
// program's own profile has a `userns,` rule. The clone succeeds; what
// fails, with EPERM, is the first step that needs a capability inside:
// writing uid_map, a mount, sethostname. Unexplained, that reads like a
// broken kernel; nsrun names the sysctl and the profile that lifts it
// (dist/apparmor/nsrun.in, docs/packaging.md).
//
// Recognising the symptom is pure (tested without such a kernel); only
// read_userns_restriction() looks at the host.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sys/error.hpp"

namespace nsrun {

inline constexpr std::string_view userns_restriction_sysctl = "kernel.apparmor_restrict_unprivileged_userns";
inline constexpr std::string_view userns_restriction_file = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";
// Where the package puts the profile (debian/nsrun.postinst).
inline constexpr std::string_view nsrun_apparmor_profile = "/etc/apparmor.d/nsrun";

// What the sysctl file says: no such file (a kernel without the
// restriction), 0, 1, or a file that exists but could not be read or
// holds something else.
enum class UsernsRestriction { absent, off, on, unknown };

// Pure: the file's text, or nullopt when it does not exist.
UsernsRestriction parse_userns_restriction(std::optional<std::string_view> text);

// The host's /proc/sys file.
UsernsRestriction read_userns_restriction();

// Pure: whether the namespace rung's failure `e` is a user namespace that
// was made but refused its capabilities. `made_userns`: the launch's clone
// asked for a user namespace; `reason`: the ladder's code for the failure
// (a clone refusal counts when the user namespace alone could be made:
// another namespace then needed CAP_SYS_ADMIN in it).
bool userns_capabilities_refused(const Error& e, bool made_userns, std::string_view reason);

// Pure: the sentence naming the sysctl and the profile when the failure
// is the symptom and the sysctl is on (or exists but cannot be read);
// empty otherwise.
std::string userns_restriction_hint(const Error& e, bool made_userns, std::string_view reason,
                                    UsernsRestriction restriction);

}  // namespace nsrun
