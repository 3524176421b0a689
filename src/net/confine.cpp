#include "net/confine.hpp"

#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock/abi.hpp"
#include "landlock/kernel.hpp"
#include "landlock/ruleset.hpp"
#include "ns/credentials.hpp"
#include "seccomp/proxy_filter.hpp"

namespace nsrun::egress {

Result<ProxyConfinement> prepare_proxy_confinement() {
  ProxyConfinement c;
  c.filter = proxy_filter();
  if (auto abi = landlock::kernel_abi(); abi && *abi >= 1) {
    landlock::Ruleset r;
    r.abi = *abi;
    r.handled_fs = landlock::fs_rights(*abi);
    r.scoped = landlock::scopes(*abi);
    auto fd = landlock::open_ruleset(r);
    if (!fd) return fail(fd.error());
    c.landlock = std::move(*fd);
    c.landlock_abi = *abi;
  }
  return c;
}

bool die_with(pid_t parent) {
  // The signal comes when the thread that forked ends: nsrun forks the
  // proxy from its main thread, whose end is nsrun's.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return false;
  // nsrun may have died between fork and prctl: then no signal will come,
  // and the parent is another process already.
  return ::getppid() == parent;
}

Result<void> confine_proxy_files(const ProxyConfinement& c) {
  if (auto r = set_no_new_privs(); !r) return r;
  struct __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct none[2]{};
  if (::syscall(SYS_capset, &header, none) != 0) return fail(sys_error(Operation::drop_capabilities));
  if (c.landlock)
    if (auto r = landlock::restrict_self(c.landlock.get()); !r) return r;
  return {};
}

Result<void> confine_proxy_calls(const ProxyConfinement& c) { return load_filter(c.filter); }

}  // namespace nsrun::egress
