// The Landlock system calls, as thin named steps. The ruleset is built in
// the parent (paths opened, rules added) before fork; the child only calls
// restrict_self(), after no_new_privs and before seccomp.
#pragma once

#include "landlock/ruleset.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::landlock {

// The kernel's highest Landlock ABI, asked once per process. An Error
// (ENOSYS: not built in; EOPNOTSUPP: disabled at boot) when there is none.
Result<int> kernel_abi();

// landlock_create_ruleset + one landlock_add_rule per rule (and no net
// rule: TCP bind and connect, when handled, are denied outright). The fd is
// CLOEXEC. A missing optional path is skipped; a rule on a non-directory
// keeps only the rights a file can carry.
Result<Fd> build(const Ruleset& ruleset);

// build() in two steps, for the Landlock rung, which adds the rules while
// its supervisor starts (launch/landlock_rung.cpp): the empty ruleset
// (landlock_create_ruleset), then one add_path_rule per rule. A ruleset is
// one kernel object however many processes hold its fd; the rules added
// through any of them are there when restrict_self() takes it.
Result<Fd> open_ruleset(const Ruleset& ruleset);
Result<void> add_rules(int ruleset_fd, const Ruleset& ruleset);

// One landlock_add_rule for `rule` on an existing ruleset (build() uses it
// for each rule; the Landlock rung's supervisor adds the private TMPDIR,
// which it makes only after fork).
Result<void> add_path_rule(int ruleset_fd, const PathRule& rule);

// landlock_restrict_self(ruleset_fd, 0). Requires no_new_privs (or
// CAP_SYS_ADMIN) first.
Result<void> restrict_self(int ruleset_fd);

// The Landlock rung's supervisor enters a domain of its own that handles
// only the signal scope (ABI 6), before it starts the command, whose
// domain is then nested in it. From inside, signals and ptrace reach only
// this domain and the ones nested in it: the supervisor's kill(-1) reaches
// every process of the sandbox and nothing else, and no process of the
// sandbox can signal or ptrace the supervisor (the command's domain is a
// child of its, not an ancestor). Sets no_new_privs (the supervisor never
// execs). Checked, not assumed: afterwards a signal 0 to `outside` (nsrun,
// outside the domain and of the same uid) must fail with EPERM; any other
// answer is an error, and the caller must then never use kill(-1).
// ENOTSUP when the kernel's ABI is below 6.
Result<void> enter_signal_scope(pid_t outside);

}  // namespace nsrun::landlock
