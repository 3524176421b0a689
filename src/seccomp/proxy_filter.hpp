// The egress proxy's own filter (net/egress.hpp): the proxy parses HTTP,
// SOCKS, DNS and TLS bytes the sandboxed command writes, so a bug in it
// must reach no more of the host than a proxy needs. Unlike the command's
// filters (seccomp/rules.hpp: allow by default, refuse a table), this is
// an allow-list written as BPF here: memory, threads (clone only with
// CLONE_THREAD; clone3, whose flags a filter cannot read, answers ENOSYS
// so that libc falls back to clone), the socket calls of an IPv4/IPv6
// TCP or UDP client and server (socket() only of those families and
// types), poll, time and randomness. Everything else fails with EPERM:
// no open of any path, no exec, no fork, no signal to another process,
// no ptrace, no new namespace, no mount. Another architecture's calls end
// the process.
#pragma once

#include "seccomp/filter.hpp"

namespace nsrun {

BpfProgram proxy_filter();

}  // namespace nsrun
