// Ubuntu's kernel.apparmor_restrict_unprivileged_userns: a user namespace
// is made, then every step that needs a capability in it fails with EPERM.
// `nsrun probe` (and the ladder's detail) names the sysctl and the profile
// on that symptom, and only on it. This kernel has no such sysctl, so the
// symptom is built from the errors the launch reports there.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>

#include <fstream>
#include <sstream>
#include <string>

#include "launch/ladder.hpp"
#include "launch/apparmor.hpp"

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

using namespace nsrun;

namespace {

constexpr auto on = UsernsRestriction::on;

Error step(Operation op, int err, std::string_view path = "/proc/self/uid_map") { return sys_error(op, path, err); }

}  // namespace

TEST_CASE("userns restriction: the sysctl's file is read as absent, 0, 1 or unknown", "[apparmor]") {
  CHECK(parse_userns_restriction(std::nullopt) == UsernsRestriction::absent);
  CHECK(parse_userns_restriction("0\n") == UsernsRestriction::off);
  CHECK(parse_userns_restriction("1\n") == UsernsRestriction::on);
  CHECK(parse_userns_restriction("1") == UsernsRestriction::on);
  CHECK(parse_userns_restriction("") == UsernsRestriction::unknown);
  CHECK(parse_userns_restriction("11\n") == UsernsRestriction::unknown);
  CHECK(parse_userns_restriction(std::string_view("1\0", 2)) == UsernsRestriction::unknown);
}

TEST_CASE("userns restriction: the symptoms seen under it name the sysctl and the profile", "[apparmor]") {
  // What the namespace rung reports on such a host: the id map written
  // from inside refused (unshare -U: "write failed /proc/self/uid_map"),
  // or, where no map is written, the first mount or sethostname.
  const Error seen[] = {
      step(Operation::write_uid_map, EPERM),
      step(Operation::write_setgroups, EPERM, "/proc/self/setgroups"),
      step(Operation::write_gid_map, EACCES, "/proc/self/gid_map"),
      step(Operation::make_private, EPERM, "/"),
      step(Operation::mount_fs, EPERM, "/tmp"),
      step(Operation::mount_bind, EPERM, "/usr"),
      step(Operation::sethostname, EPERM, ""),
      step(Operation::pivot_root, EPERM, "/"),
  };
  for (const Error& e : seen) {
    INFO(e.message());
    const std::string why = classify_namespace_failure(e, ProcMode::fresh);
    CHECK(userns_capabilities_refused(e, true, why));
    const std::string hint = userns_restriction_hint(e, true, why, on);
    CHECK(hint.find("kernel.apparmor_restrict_unprivileged_userns is 1") != std::string::npos);
    CHECK(hint.find("/etc/apparmor.d/nsrun") != std::string::npos);
    CHECK(hint.find("apparmor_parser -r /etc/apparmor.d/nsrun") != std::string::npos);
    // A sysctl that exists but cannot be read still points at it.
    CHECK(userns_restriction_hint(e, true, why, UsernsRestriction::unknown).find("could not be read") !=
          std::string::npos);
    // Without the sysctl, or with it off, the same failure is something else.
    CHECK(userns_restriction_hint(e, true, why, UsernsRestriction::absent).empty());
    CHECK(userns_restriction_hint(e, true, why, UsernsRestriction::off).empty());
    // No user namespace made (root, or --userns FD): not this restriction.
    CHECK_FALSE(userns_capabilities_refused(e, false, why));
    CHECK(userns_restriction_hint(e, false, why, on).empty());
  }
  // A clone refused for another namespace when the user namespace alone
  // could be made: that namespace needed CAP_SYS_ADMIN in the new one.
  const Error clone = step(Operation::clone, EPERM, "");
  const std::string mntns = diagnose_clone(CLONE_NEWUSER | CLONE_NEWNS, [](uint64_t f) {
    return f == CLONE_NEWUSER ? 0 : EPERM;
  });
  CHECK(mntns == reason::mntns_denied);
  CHECK_FALSE(userns_restriction_hint(clone, true, mntns, on).empty());
}

TEST_CASE("userns restriction: other failures do not blame it", "[apparmor]") {
  // The user namespace itself refused: another switch (max_user_namespaces).
  const std::string userns = diagnose_clone(CLONE_NEWUSER | CLONE_NEWNS, [](uint64_t) { return EPERM; });
  CHECK(userns == reason::userns_denied);
  CHECK(userns_restriction_hint(step(Operation::clone, EPERM, ""), true, userns, on).empty());
  // Each namespace alone works, together they do not: a limit, not a profile.
  CHECK(userns_restriction_hint(step(Operation::clone, EPERM, ""), true, reason::ns_denied, on).empty());
  CHECK(userns_restriction_hint(step(Operation::clone, ENOSPC, ""), true, reason::mntns_denied, on).empty());
  // A masked /proc has its own cause and hint (proc-masked).
  const Error proc = step(Operation::mount_proc, EPERM, "/proc");
  CHECK(userns_restriction_hint(proc, true, classify_namespace_failure(proc, ProcMode::fresh), on).empty());
  // Other errnos and the user's own mistakes.
  CHECK(userns_restriction_hint(step(Operation::write_uid_map, EINVAL), true, reason::idmap_denied, on).empty());
  CHECK(userns_restriction_hint(step(Operation::mount_bind, ENOENT, "/nope"), true, "", on).empty());
  CHECK(userns_restriction_hint(step(Operation::exec, EACCES, "/bin/x"), true, "", on).empty());
  CHECK(userns_restriction_hint(step(Operation::seccomp_load, EPERM, ""), true, "", on).empty());
}

TEST_CASE("userns restriction: the AppArmor profile allows userns and nothing more, for nsrun's path only",
          "[apparmor]") {
  std::ifstream in(std::string(NSRUN_SOURCE_DIR) + "/dist/apparmor/nsrun.in");
  REQUIRE(in);
  std::string rules, line;
  bool inside = false;
  int profiles = 0;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    if (line.starts_with("profile ")) {
      ++profiles;
      CHECK(line == "profile nsrun @BINDIR@/nsrun flags=(unconfined) {");
      inside = true;
      continue;
    }
    if (line == "}") {
      inside = false;
      continue;
    }
    if (inside) rules += line + "\n";
    else CHECK((line == "abi <abi/4.0>," || line == "include <tunables/global>"));
  }
  CHECK(profiles == 1);
  // One rule; the local include is the administrator's, empty as shipped.
  CHECK(rules == "userns,\ninclude if exists <local/nsrun>\n");
}
