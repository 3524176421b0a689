// The egress proxy's own confinement (net/egress.hpp runs the proxy in a
// process forked from nsrun). The proxy parses bytes the sandboxed
// command writes; should a parser fail, the process it fails in may
// reach the network (that is its job) and nothing else of the host:
//  - it dies with nsrun (PR_SET_PDEATHSIG, then the parent checked, for
//    a nsrun that died before the prctl), in a session of its own (no
//    terminal signal reaches it);
//  - no_new_privs, every capability dropped (nsrun may run as root);
//  - Landlock, where the kernel has it: a ruleset that handles every file
//    right of the kernel's ABI and grants none, so no path opens, for
//    reading or writing, and (ABI 6) no signal or abstract socket leaves
//    the domain;
//  - the allow-list filter of seccomp/proxy_filter.hpp: no open, exec,
//    fork, kill, ptrace, mount or namespace call at all.
// The parent prepares what can be prepared (the filter, the ruleset fd)
// before fork; the child only applies it.
#pragma once

#include <sys/types.h>

#include "seccomp/filter.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::egress {

struct ProxyConfinement {
  BpfProgram filter;
  Fd landlock;  // empty ruleset; none when the kernel has no Landlock
  int landlock_abi = 0;
};

// In nsrun, before fork.
Result<ProxyConfinement> prepare_proxy_confinement();

// In the child, first: die when `parent` does (false: it already has).
bool die_with(pid_t parent);

// In the child, once it has read the files it needs: no_new_privs,
// capabilities, Landlock (the ruleset fd may be closed afterwards).
Result<void> confine_proxy_files(const ProxyConfinement& c);
// Last before serving, once its fds are arranged: the filter (which
// would refuse the calls above).
Result<void> confine_proxy_calls(const ProxyConfinement& c);

}  // namespace nsrun::egress
