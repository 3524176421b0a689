#include "landlock/kernel.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock/abi.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::landlock {

namespace {

int create_ruleset(const RulesetAttr* attr, std::size_t size, uint32_t flags) {
  return static_cast<int>(::syscall(SYS_landlock_create_ruleset, attr, size, flags));
}

int add_rule(int fd, int type, const void* attr) {
  return static_cast<int>(::syscall(SYS_landlock_add_rule, fd, type, attr, 0));
}

}  // namespace

Result<int> kernel_abi() {
  static const Result<int> abi = []() -> Result<int> {
    const int v = create_ruleset(nullptr, 0, create_ruleset_version);
    if (v < 0) return fail(sys_error(Operation::landlock_create, "ABI version"));
    return v;
  }();
  return abi;
}

Result<Fd> open_ruleset(const Ruleset& r) {
  RulesetAttr attr;
  attr.handled_access_fs = r.handled_fs;
  attr.handled_access_net = r.handled_net;
  attr.scoped = r.scoped;
  Fd ruleset(create_ruleset(&attr, sizeof attr, 0));
  if (!ruleset) return fail(sys_error(Operation::landlock_create));
  return ruleset;
}

Result<void> add_rules(int ruleset_fd, const Ruleset& r) {
  for (const PathRule& rule : r.rules)
    if (auto added = add_path_rule(ruleset_fd, rule); !added) return fail(added.error());
  return {};
}

Result<Fd> build(const Ruleset& r) {
  auto ruleset = open_ruleset(r);
  if (!ruleset) return fail(ruleset.error());
  if (auto added = add_rules(ruleset->get(), r); !added) return fail(added.error());
  return std::move(*ruleset);
}

Result<void> add_path_rule(int ruleset_fd, const PathRule& rule) {
  // A native writable root is opened through no symlink: a link swapped
  // in by a writer would otherwise grant write access to its target.
  const int flags = O_PATH | O_CLOEXEC | (rule.directory ? O_DIRECTORY : 0);
  Fd path(rule.no_symlinks ? sys::openat2(AT_FDCWD, rule.path.c_str(), flags, 0, RESOLVE_NO_SYMLINKS)
                           : ::open(rule.path.c_str(), flags));
  if (!path) {
    if (rule.optional && errno == ENOENT) return {};
    if (errno == ELOOP && rule.no_symlinks)
      return fail(sys_error(Operation::landlock_rule, rule.path, ELOOP,
                            "a symlink in the path (nsrun follows none in a path it makes writable; give the "
                            "resolved path)"));
    return fail(sys_error(Operation::landlock_rule, rule.path));
  }
  // The type decides only whether the rights are masked to the file
  // rights: no fstat for a known directory (O_DIRECTORY made sure of it),
  // a known non-directory (masked: fewer rights if it became a directory),
  // or rights that are all file rights already (a device: the mask changes
  // nothing).
  bool directory = rule.directory;
  if (rule.one_link) {
    bool stat_failed = false;
    if (const int err = sys::single_link_file(path.get(), &stat_failed); err != 0)
      return fail(stat_failed ? sys_error(Operation::stat, rule.path, err)
                              : sys_error(Operation::landlock_rule, rule.path, err, sys::single_link_rule));
  }
  if (!directory && !rule.file && (rule.access & ~fs::file_rights) != 0) {
    struct stat st{};
    if (::fstat(path.get(), &st) != 0) return fail(sys_error(Operation::stat, rule.path));
    directory = S_ISDIR(st.st_mode);
  }
  PathBeneathAttr beneath;
  beneath.allowed_access = directory ? rule.access : rule.access & fs::file_rights;
  beneath.parent_fd = path.get();
  if (add_rule(ruleset_fd, rule_path_beneath, &beneath) != 0) return fail(sys_error(Operation::landlock_add_rule, rule.path));
  return {};
}

Result<void> restrict_self(int ruleset_fd) {
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) return fail(sys_error(Operation::landlock_restrict));
  return {};
}

Result<void> enter_signal_scope(pid_t outside) {
  auto abi = kernel_abi();
  if (!abi) return fail(abi.error());
  if ((scopes(*abi) & scope::signal) == 0)
    return fail(sys_error(Operation::landlock_restrict, "signal scope", ENOTSUP,
                          "the kernel's Landlock ABI has no signal scope (6 needed)"));
  RulesetAttr attr;
  attr.scoped = scope::signal;
  Fd ruleset(create_ruleset(&attr, sizeof attr, 0));
  if (!ruleset) return fail(sys_error(Operation::landlock_create, "signal scope"));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(sys_error(Operation::no_new_privs, "supervisor"));
  // The supervisor's kill(-1) is refused for every host process: one audit
  // record each (ABI 7 logs denials) would flood the log. The supervisor
  // never execs, so "same exec" is all of its life.
  const uint32_t flags = *abi >= 7 ? restrict_flags::log_same_exec_off : 0;
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), flags) != 0)
    return fail(sys_error(Operation::landlock_restrict, "signal scope"));
  // The one check that matters before a kill(-1): nsrun, outside the
  // domain, can no longer be signalled. A scope not in force answers 0.
  const int err = ::kill(outside, 0) == 0 ? 0 : errno;
  if (err != EPERM)
    return fail(sys_error(Operation::landlock_restrict, "signal scope", err,
                          "a process outside the domain can still be signalled"));
  return {};
}

}  // namespace nsrun::landlock
