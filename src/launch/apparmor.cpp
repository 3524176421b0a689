#include "launch/apparmor.hpp"

#include <fcntl.h>

#include <cerrno>

#include <fmt/core.h>

#include "launch/ladder.hpp"
#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

UsernsRestriction parse_userns_restriction(std::optional<std::string_view> text) {
  if (!text) return UsernsRestriction::absent;
  std::string_view t = *text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.remove_suffix(1);
  if (t == "0") return UsernsRestriction::off;
  if (t == "1") return UsernsRestriction::on;
  return UsernsRestriction::unknown;
}

UsernsRestriction read_userns_restriction() {
  Fd fd(::open(std::string(userns_restriction_file).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return errno == ENOENT ? UsernsRestriction::absent : UsernsRestriction::unknown;
  auto text = read_all(fd.get(), "read", userns_restriction_file, 64);
  if (!text) return UsernsRestriction::unknown;
  return parse_userns_restriction(*text);
}

bool userns_capabilities_refused(const Error& e, bool made_userns, std::string_view reason) {
  if (!made_userns || (e.err != EPERM && e.err != EACCES)) return false;
  switch (e.op) {
    // The first steps inside that need a capability of the new namespace.
    case Operation::write_uid_map:
    case Operation::write_gid_map:
    case Operation::write_setgroups:
    case Operation::sethostname:
    case Operation::make_private:
    case Operation::mount_fs:
    case Operation::mount_bind:
    case Operation::mount_data:
    case Operation::mount_layer:
    case Operation::remount:
    case Operation::staging:
    case Operation::pivot_root:
      return true;
    case Operation::clone:
      // userns-denied: the user namespace itself was refused (another
      // switch: user.max_user_namespaces, kernel.unprivileged_userns_clone).
      return e.err == EPERM && reason != reason::userns_denied && reason != reason::ns_denied &&
             reason != clone_refused;
    // mount_proc among them: its EPERM has a commoner cause with its own
    // hint (a masked /proc, proc-masked).
    default:
      return false;
  }
}

std::string userns_restriction_hint(const Error& e, bool made_userns, std::string_view reason,
                                    UsernsRestriction restriction) {
  if (restriction != UsernsRestriction::on && restriction != UsernsRestriction::unknown) return {};
  if (!userns_capabilities_refused(e, made_userns, reason)) return {};
  return fmt::format("{} {}: the user namespace was made but AppArmor refuses it capabilities; the AppArmor "
                     "profile {} (nsrun's package installs it where the parser knows `userns`, for "
                     "/usr/bin/nsrun) allows them: load it with apparmor_parser -r {} (docs/packaging.md)",
                     userns_restriction_sysctl, restriction == UsernsRestriction::on ? "is 1" : "could not be read",
                     nsrun_apparmor_profile, nsrun_apparmor_profile);
}

}  // namespace nsrun
