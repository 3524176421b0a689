#include "seccomp/rules.hpp"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <linux/btrfs.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <linux/seccomp.h>

#include <algorithm>
#include <cerrno>

namespace nsrun {

namespace {

constexpr uint64_t low32 = 0xffffffffULL;

// `int` / `unsigned int` arguments: the kernel truncates the register to 32
// bits, so only those bits may decide. Comparing all 64 is the
// CVE-2019-10063 mistake: TIOCSTI | 1 << 32 passed such a filter and still
// reached the kernel as TIOCSTI.
ArgMatch low32_equals(unsigned index, uint64_t value) { return ArgMatch{index, low32, value, false}; }

ArgMatch has_bits(unsigned index, uint64_t bits) { return ArgMatch{index, bits, bits, false}; }

void add(std::vector<Rule>& rules, std::string_view syscall, std::string_view reason, int err = EPERM,
         std::optional<ArgMatch> arg = std::nullopt) {
  rules.push_back(Rule{syscall, err, arg, reason});
}

// A rule the rung's promise rests on: refused in log mode too.
void add_always(std::vector<Rule>& rules, std::string_view syscall, std::string_view reason,
                std::optional<ArgMatch> arg = std::nullopt) {
  rules.push_back(Rule{syscall, EPERM, arg, reason, true});
}

// The Landlock rung: Landlock has no right for changing an inode's
// metadata (mode and setuid bits, owner, times, xattrs and ACLs, inode
// flags), and seccomp sees a path only as a pointer and an fd only as a
// number, so nothing tells a call on a writable root from one on /usr/bin.
// As root with every capability dropped, the command still owns root's
// files: `chmod 4755 /opt/x` made a setuid-root binary. Refused
// everywhere; the price (chmod +x, touch of an existing file, cp -p in the
// workspace fail with EPERM) is in docs/hardening.md.
void add_landlock_metadata(std::vector<Rule>& r) {
  constexpr std::string_view meta = "file metadata: Landlock cannot confine it to the writable roots";
  for (auto name : {"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
                    "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
                    "removexattr", "lremovexattr", "fremovexattr", "removexattrat", "file_setattr"})
    add_always(r, name, meta);
  // ioctls that change an inode through any fd, a read-only one too (the
  // owner may): inode flags (immutable, append-only, nodump, ...), the
  // fsxattr (project id, extent size), the generation, an encryption
  // policy, fs-verity (makes the file read-only for good). The 32-bit
  // compat numbers too: the compare is on the low 32 bits, as for TIOCSTI.
  constexpr std::string_view flags = "inode flags and attributes by ioctl: Landlock's ioctl right covers devices only";
  // ext4's own generation setter (fs/ext4/ext4.h, not in the uapi headers).
  constexpr unsigned long ext4_setversion = _IOW('f', 4, long);
  constexpr unsigned long ext4_setversion32 = _IOW('f', 4, int);
  for (unsigned long cmd : {FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION,
                            FS_IOC32_SETVERSION, ext4_setversion, ext4_setversion32, FS_IOC_SET_ENCRYPTION_POLICY,
                            FS_IOC_ENABLE_VERITY})
    add_always(r, "ioctl", flags, low32_equals(1, cmd));
  // Dedupe needs no writable fd from the file's owner, and btrfs makes,
  // deletes and flags subvolumes inside the ioctl, where Landlock's path
  // hooks (mkdir, rmdir) are not called.
  constexpr std::string_view btrfs = "dedupe and btrfs subvolume ioctls: outside Landlock's path checks";
  for (unsigned long cmd : {FIDEDUPERANGE, BTRFS_IOC_SNAP_CREATE, BTRFS_IOC_SNAP_CREATE_V2,
                            BTRFS_IOC_SUBVOL_CREATE, BTRFS_IOC_SUBVOL_CREATE_V2, BTRFS_IOC_SNAP_DESTROY,
                            BTRFS_IOC_SNAP_DESTROY_V2, BTRFS_IOC_SUBVOL_SETFLAGS, BTRFS_IOC_SET_RECEIVED_SUBVOL,
                            BTRFS_IOC_DEFAULT_SUBVOL})
    add_always(r, "ioctl", btrfs, low32_equals(1, cmd));
  // The write-life hint is an inode field the owner sets through a
  // read-only fd.
  add_always(r, "fcntl", "F_SET_RW_HINT: an inode field, set through a read-only fd", low32_equals(1, F_SET_RW_HINT));
}

// The Landlock rung has no IPC namespace: SysV segments, queues and
// semaphore sets and POSIX message queues are the host's, found by key or
// id (ipcs lists them) or by name. Landlock's scopes cover signals and
// abstract unix sockets only. shmdt is left: it only unmaps.
void add_landlock_ipc(std::vector<Rule>& r) {
  for (auto name : {"shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
                    "semtimedop", "semctl"})
    add_always(r, name, "SysV IPC: the host's, no IPC namespace on this rung");
  for (auto name : {"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"})
    add_always(r, name, "POSIX message queues: the host's, no IPC namespace on this rung");
}

// personality(2) is allowed with PER_LINUX (0) and the query 0xffffffff
// only: other personas turn off address-space randomisation
// (ADDR_NO_RANDOMIZE) or make every readable mapping executable
// (READ_IMPLIES_EXEC). libseccomp accepts one comparison per argument in a
// rule, so "not 0 and not 0xffffffff" is written as an OR of single tests:
// any bit above 31 set, or two low bits that differ (bit 0 against bit i).
void add_personality(std::vector<Rule>& rules) {
  constexpr std::string_view why = "personality other than PER_LINUX: ASLR off, READ_IMPLIES_EXEC";
  rules.push_back(Rule{"personality", EPERM, ArgMatch{0, 0, low32, true}, why});
  const uint64_t high = ~low32;
  for (unsigned i = 1; i < 32; ++i) {
    const uint64_t pair = 1ULL | (1ULL << i);
    rules.push_back(Rule{"personality", EPERM, ArgMatch{0, high | pair, 1ULL << i, false}, why});
    rules.push_back(Rule{"personality", EPERM, ArgMatch{0, high | pair, 1ULL, false}, why});
  }
}

// Without a network namespace, "no network" means no socket of a family
// that reaches one; unix sockets stay (Landlock scopes abstract ones).
void add_deny_inet(std::vector<Rule>& r) {
  for (int family : {AF_INET, AF_INET6, AF_PACKET})
    add_always(r, "socket", "--network none without a network namespace", low32_equals(0, family));
}

// --network proxy on the namespace rung: the command may not read or
// write the memory of, nor trace, a process of the sandbox (PID 1 made the
// proxy's listeners). Part of the mode's promise: refused in log mode too.
void add_proxy_namespaces(std::vector<Rule>& r) {
  for (auto name : {"ptrace", "process_vm_readv", "process_vm_writev"})
    add_always(r, name, "--network proxy: no process of the sandbox may be traced or have its memory read");
}

// --network proxy on the Landlock rung: the command shares the host's
// network, and Landlock (ABI 4..7) speaks of TCP ports only, so the filter
// keeps everything else (docs/hardening.md, "egress on the Landlock rung"):
//  - socket(): AF_UNIX, AF_NETLINK and TCP over AF_INET/AF_INET6 only. No
//    UDP, raw, SCTP or MPTCP (Landlock's TCP rules do not see them), no
//    packet, vsock, bluetooth, ... families. Family, type and protocol are
//    values: the filter sees what the kernel will use.
//  - sendto/sendmsg/sendmmsg with MSG_FASTOPEN: a TCP connect without
//    connect(2).
//  - connect() and listen(): answered by nsrun (net/connector.hpp), which
//    looks at the socket itself; listen() because listening on an unbound
//    TCP socket binds it to a port without bind(2).
void add_proxy_landlock(std::vector<Rule>& r) {
  constexpr std::string_view family = "--network proxy on the Landlock rung: a socket family outside the proxy's reach";
  auto refuse_socket = [&](ArgMatch a, std::optional<ArgMatch> b, std::string_view why) {
    r.push_back(Rule{"socket", EPERM, a, why, true, false, b});
  };
  refuse_socket(low32_equals(0, AF_UNSPEC), std::nullopt, family);
  for (int f = AF_UNIX + 2; f < AF_NETLINK; ++f)
    if (f != AF_INET6) refuse_socket(low32_equals(0, static_cast<uint64_t>(f)), std::nullopt, family);
  refuse_socket(ArgMatch{0, 0, AF_NETLINK, true}, std::nullopt, family);
  constexpr std::string_view kind = "--network proxy on the Landlock rung: inet sockets are TCP only (no UDP, raw, SCTP, MPTCP)";
  constexpr uint64_t type_mask = 0xf;  // SOCK_TYPE_MASK: the flags above it are SOCK_NONBLOCK, SOCK_CLOEXEC
  for (int f : {AF_INET, AF_INET6}) {
    const ArgMatch fam = low32_equals(0, static_cast<uint64_t>(f));
    // The type is SOCK_STREAM (1): not 0, and none of the bits 2, 4, 8.
    refuse_socket(fam, ArgMatch{1, type_mask, 0, false}, kind);
    for (uint64_t bit : {2, 4, 8}) refuse_socket(fam, has_bits(1, bit), kind);
    // The protocol is 0 or IPPROTO_TCP (6): not above 6 (on all 64 bits:
    // high garbage is refused too), and none of 1..5.
    refuse_socket(fam, ArgMatch{2, 0, IPPROTO_TCP, true}, kind);
    refuse_socket(fam, has_bits(2, 1), kind);
    refuse_socket(fam, ArgMatch{2, 6, 2, false}, kind);
    refuse_socket(fam, ArgMatch{2, 6, 4, false}, kind);
  }
  constexpr std::string_view tfo = "--network proxy on the Landlock rung: MSG_FASTOPEN connects without connect()";
  add_always(r, "sendto", tfo, has_bits(3, MSG_FASTOPEN));
  add_always(r, "sendmsg", tfo, has_bits(2, MSG_FASTOPEN));
  add_always(r, "sendmmsg", tfo, has_bits(3, MSG_FASTOPEN));
  // Answered by nsrun; EACCES when nothing answers them otherwise.
  r.push_back(Rule{"connect", EACCES, std::nullopt, "--network proxy on the Landlock rung: only the proxy, made by nsrun", true, true});
  r.push_back(Rule{"listen", EACCES, std::nullopt, "--network proxy on the Landlock rung: no inet listener", true, true});
}

}  // namespace

FilterKey filter_key(const Policy& policy, FilterRung rung) {
  FilterKey key;
  key.enabled = policy.seccomp != SeccompMode::none;
  key.log = policy.seccomp == SeccompMode::log;
  key.nested_userns = policy.allow_nested_userns;
  key.deny_inet = policy.network == Network::none && rung == FilterRung::landlock;
  key.landlock = rung == FilterRung::landlock;
  key.deny_unix = policy.unix_sockets == UnixSockets::none ||
                  (rung == FilterRung::landlock && !policy.hidden_sockets.empty());
  key.proxy = policy.network == Network::proxy;
  return key;
}

std::vector<std::string_view> landlock_refused_everywhere() { return {"file-metadata", "sysv-ipc", "posix-mqueue"}; }

FilterSpec filter_spec(const Policy& policy, FilterRung rung) { return filter_spec(filter_key(policy, rung)); }

FilterSpec filter_spec(const FilterKey& key) {
  FilterSpec spec;
  if (!key.enabled && !key.landlock && !key.deny_unix && !key.proxy) return spec;
  spec.enabled = true;
  spec.log = key.enabled && key.log;
  auto& r = spec.rules;
  if (key.landlock) {
    // The rung's promise, whatever --seccomp says: without these the
    // Landlock rung would keep file contents only.
    spec.foreign_abi_always = true;
    add_landlock_metadata(r);
    add_landlock_ipc(r);
    // io_uring sets xattrs (IORING_OP_SETXATTR) from a kernel worker this
    // filter never sees: with --seccomp none it would walk around the rules
    // above.
    for (auto name : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
      add_always(r, name, "io_uring: operations that bypass seccomp (setxattr among them)");
    // No PID namespace: prlimit(2) reaches every process of the same uid,
    // nsrun and the user's shell included (lowering nsrun's RLIMIT_CPU
    // killed it, and with it the timeout). Only pid 0, the caller itself,
    // stays; any other value of the 64-bit register is refused.
    add_always(r, "prlimit64", "prlimit on another process: the host's processes, no PID namespace on this rung",
               ArgMatch{0, ~uint64_t{0}, 0, true});
    // The same for scheduling: priority, CPU affinity, policy and I/O
    // priority of another process (or of all the user's: PRIO_USER,
    // IOPRIO_WHO_USER) slow the user's processes outside.
    constexpr std::string_view sched = "scheduling of another process: the host's processes, no PID namespace on this rung";
    for (auto name : {"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"})
      add_always(r, name, sched, ArgMatch{0, ~uint64_t{0}, 0, true});
    for (auto name : {"setpriority", "ioprio_set"}) {
      add_always(r, name, sched, ArgMatch{1, ~uint64_t{0}, 0, true});
      add_always(r, name, sched, low32_equals(0, name == std::string_view("setpriority") ? 2 : 3));  // the whole user
    }
    if (key.deny_inet) add_deny_inet(r);
    // (--network none and proxy exclude each other: such a key is none's,
    // and its precompiled program one already written.)
    if (key.proxy && !key.deny_inet) add_proxy_landlock(r);
  } else if (key.proxy) {
    add_proxy_namespaces(r);
  }
  if (key.deny_unix) {
    // A pathname socket is reached by connect() on a path the filter cannot
    // read, and Landlock (up to ABI 7) has no right for it: the one
    // decision a filter can make is the family. socketpair(2) is another
    // call and stays: pipes between the command's own processes. Abstract
    // sockets and sockets in the private /tmp go too (the price). A
    // promise, so refused whatever --seccomp says (and an i386 socketcall
    // would walk around it).
    spec.foreign_abi_always = true;
    r.push_back(Rule{"socket", EACCES, low32_equals(0, AF_UNIX),
                     "AF_UNIX: host pathname sockets (--unix-sockets none, or hidden ones on the Landlock rung)", true});
  }
  if (!key.enabled) return spec;

  // Keystroke injection into the terminal the command shares with its
  // caller: TIOCSTI pushes bytes into the input queue, TIOCLINUX (subcode
  // 2/3) pastes the console selection. Either runs commands as the caller
  // once the sandbox exits.
  add(r, "ioctl", "TIOCSTI: inject keystrokes into the caller's terminal", EPERM, low32_equals(1, TIOCSTI));
  add(r, "ioctl", "TIOCLINUX: paste into the caller's console", EPERM, low32_equals(1, TIOCLINUX));

  // io_uring performs opens, connects and socket calls from kernel workers
  // that this filter never sees; a long list of kernel CVEs besides.
  if (!key.landlock)  // there already, as one of the rung's own rules
    for (auto name : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
      add(r, name, "io_uring: operations that bypass seccomp");

  // Kernel keyrings are not namespaced by the user namespace: the session
  // and user keyrings of the caller would be reachable.
  for (auto name : {"keyctl", "add_key", "request_key"}) add(r, name, "keyrings are not namespaced");

  add(r, "bpf", "eBPF: a large kernel attack surface, not needed by commands");
  add(r, "perf_event_open", "perf events: kernel attack surface and side channels");
  add(r, "userfaultfd", "userfaultfd: turns kernel races into reliable exploits");

  for (auto name : {"kexec_load", "kexec_file_load"}) add(r, name, "kexec: replaces the running kernel");
  for (auto name : {"init_module", "finit_module", "delete_module"}) add(r, name, "kernel modules");
  add(r, "acct", "process accounting writes to a host file");
  for (auto name : {"swapon", "swapoff"}) add(r, name, "swap is host-wide");
  add(r, "reboot", "reboot is host-wide (or ends the PID namespace)");
  add(r, "open_by_handle_at", "file handles bypass the mount tree (the 2014 Docker escape)");
  for (auto name : {"quotactl", "quotactl_fd"}) add(r, name, "quotas are host-wide");

  // The sandbox's mount tree is final at exec, and every mount interface
  // is kernel attack surface. With --allow-nested-userns the mount calls
  // stay: a nested sandbox (nsrun, bwrap, unshare -m) needs them, and they
  // reach only a mount namespace owned by a user namespace where the
  // caller holds CAP_SYS_ADMIN, which the command holds in none but its
  // own nested one (capabilities are dropped in the sandbox's; a kept
  // CAP_SYS_ADMIN with this filter is refused by validate()). That
  // namespace is a copy of the sandbox's whose every mount the kernel
  // locks (copy_mnt_ns(), lock_mnt_tree(): MNT_LOCKED and the read-only,
  // nosuid, nodev, noexec and atime flags): nothing under a cover is
  // revealed, nothing read-only turns writable, and a fresh procfs is
  // refused while the visible one is masked (mount_too_revealing()).
  // On the Landlock rung Landlock itself refuses every mount change.
  if (!key.nested_userns || key.landlock)
    for (auto name : {"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
                      "fsconfig", "fspick", "mount_setattr", "open_tree_attr"})
      add(r, name, "the mount tree is fixed before exec");

  add_personality(r);

  add(r, "socket", "AF_VSOCK reaches the hypervisor and other guests, outside any network namespace", EPERM,
      low32_equals(0, AF_VSOCK));

  // prlimit(2) on another process of the same uid: the sandbox's PID 1
  // (nsrun's reaper) here; on the Landlock rung it is one of the rung's
  // own rules.
  if (!key.landlock)
    add(r, "prlimit64", "prlimit on another process (the sandbox's PID 1)", EPERM, ArgMatch{0, ~uint64_t{0}, 0, true});

  if (!key.nested_userns) {
    // A nested user namespace gives back every capability (over its own
    // namespaces) and with them the kernel code paths that only
    // CAP_SYS_ADMIN reaches: the usual first step of a kernel exploit.
    add(r, "unshare", "nested user namespace", EPERM, has_bits(0, CLONE_NEWUSER));
    add(r, "clone", "nested user namespace", EPERM, has_bits(0, CLONE_NEWUSER));
    // clone3 passes its flags in memory, out of the filter's reach: ENOSYS
    // makes libc fall back to clone, whose flags are checked above.
    add(r, "clone3", "flags in memory cannot be checked; libc falls back to clone", ENOSYS);
  }

  return spec;
}

FilterSpec no_userns_spec() {
  FilterSpec spec;
  spec.enabled = true;
  auto& r = spec.rules;
  add(r, "unshare", "a new user namespace", ENOSPC, has_bits(0, CLONE_NEWUSER));
  add(r, "clone", "a new user namespace", ENOSPC, has_bits(0, CLONE_NEWUSER));
  add(r, "setns", "entering a user namespace", EPERM, has_bits(1, CLONE_NEWUSER));
  // nstype 0 enters whatever namespace the fd names, a user namespace too.
  add(r, "setns", "entering any namespace the fd names", EPERM, ArgMatch{1, ~uint64_t{0}, 0, false});
  add(r, "clone3", "flags in memory cannot be checked; libc falls back to clone", ENOSYS);
  return spec;
}

FilterSpec notify_spec(const FilterSpec& spec) {
  FilterSpec out = spec;
  bool any = std::any_of(spec.rules.begin(), spec.rules.end(), [](const Rule& r) { return r.notify; });
  if (!spec.enabled || (spec.log && !any)) {
    out.enabled = false;
    out.rules.clear();
    return out;
  }
  // Every refusal but clone3's ENOSYS, which is libc's everyday signal to
  // fall back to clone (a round trip per fork otherwise), not a refusal.
  if (!spec.log)
    for (Rule& r : out.rules)
      if (r.err != ENOSYS) r.notify = any = true;
  if (!any) {
    out.enabled = false;
    out.rules.clear();
    return out;
  }
  // An errno outranks every notification: the command cannot load a
  // listening filter of its own that would let our notified calls through.
  // The flags are an `unsigned int`: the low 32 bits decide.
  out.rules.push_back(Rule{"seccomp", EPERM, ArgMatch{1, SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_NEW_LISTENER, false},
                           "a listening filter of the command's own could let refused calls continue", true});
  return out;
}

std::optional<int> decide(const FilterSpec& spec, std::string_view syscall, const std::array<uint64_t, 6>& args) {
  if (!spec.enabled) return std::nullopt;
  for (const Rule& rule : spec.rules) {
    if (rule.syscall != syscall) continue;
    if (!rule.arg) return rule.err;
    auto holds = [&](const ArgMatch& m) {
      const uint64_t a = args[m.index];
      return m.greater ? a > m.value : (a & m.mask) == m.value;
    };
    if (holds(*rule.arg) && (!rule.arg2 || holds(*rule.arg2))) return rule.err;
  }
  return std::nullopt;
}

}  // namespace nsrun
