// The namespace rung, top to bottom: nsrun joins the caller's namespaces
// (bwrap --userns/--pidns), makes the channels and the sandbox's cgroup,
// clones the sandbox's first process, which becomes PID 1 (id maps,
// hostname, loopback, the root from the plan, locks, the capability
// drop) and starts the command (launch/command.cpp); nsrun then supervises
// (launch/supervise.cpp). It reads its LaunchSpec `const`; what it learns
// goes into its Attempt.
#include "launch/namespaces_rung.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

#include "launch/cgroup_account.hpp"
#include "launch/command.hpp"
#include "launch/pid1_exec.hpp"
#include "launch/supervise.hpp"
#include "launch/userns.hpp"
#include "mount/executor.hpp"
#include "ns/cgroup.hpp"
#include "ns/channel.hpp"
#include "ns/credentials.hpp"
#include "ns/net.hpp"
#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "ns/status.hpp"
#include "sys/flags.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

void print_error(const Error& e) { fmt::print(stderr, "nsrun: {}\n", e.message()); }

// Closes every fd above 2 except the held ones (lock fds) and `also`.
void close_all_but(const std::vector<Fd>& held, std::initializer_list<int> also) {
  std::vector<int> keep(also);
  for (const auto& fd : held) keep.push_back(fd.get());
  sys::close_all_but(std::move(keep));
}

// Whether the command will keep CAP_SYS_PTRACE (asked for and held), known
// before the bounding set is emptied.
bool command_may_ptrace(const Attempt& a) {
  return std::ranges::find(a.keep_caps, CAP_SYS_PTRACE) != a.keep_caps.end() &&
         !held_capabilities({CAP_SYS_PTRACE}).empty();
}

// PID 1 of a dynamic nsrun, re-exec'd before the root is built
// (launch/pid1_exec.hpp): `setup` builds it and becomes the command. PID 1
// confines itself, keeps no fd but its handover and no working directory
// but "/" (the pivot moves it into the new root), and execs while the
// host's root, and its loader there, are still its own.
[[noreturn]] void reap_setup_process(int channel, const LaunchSpec& p, const Attempt& a, pid_t setup, Fd& self_exe,
                                     Fd& to_setup) {
  install_forwarding_handlers();
  if (auto r = drop_bounding_and_ambient({}); !r) die(channel, r.error());
  if (auto r = set_capabilities({}); !r) die(channel, r.error());
  if (auto r = set_no_new_privs(); !r) die(channel, r.error());
  if (::chdir("/") != 0) die(channel, sys_error(Operation::chdir, "/"));
  if (auto r = load_filter(p.seccomp); !r) die(channel, r.error());
  close_all_but({}, {a.words_fd, a.last_pid_fd, self_exe.get(), to_setup.get()});
  const Pid1Handover handover{setup, a.words_fd, a.last_pid_fd, to_setup.get(), {}, static_cast<int>(p.lock_files.size())};
  exec_pid1_reaper(self_exe.get(), handover);
  // The exec failed: PID 1 stays this fork, as confined, and serves the
  // set-up process itself.
  self_exe.reset();
  const char go = 1;
  if (::write(to_setup.get(), &go, 1) == 1) take_handed_locks(to_setup.get(), handover.locks_to_take);
  to_setup.reset();
  int raw = 0;
  const int code = wait_command(setup, WaitOptions{0, end_pid_namespace, kill_pid_namespace}, &raw);
  const int64_t last = last_pid(a.last_pid_fd);
  send_final_status(a.words_fd, raw, last > 0 ? last - 1 : -1);
  ::_exit(code);
}

// Forks the set-up process; returns in it only, once PID 1 is running and
// not dumpable, with its end of their socket.
Fd split_off_setup(int channel, const LaunchSpec& p, const Attempt& a, Fd& self_exe) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0)
    die(channel, sys_error(Operation::socketpair, "PID 1"));
  Fd to_setup(ends[0]), to_pid1(ends[1]);
  const pid_t setup = ::fork();
  if (setup < 0) die(channel, sys_error(Operation::fork, "set-up"));
  if (setup != 0) {
    to_pid1.reset();
    reap_setup_process(channel, p, a, setup, self_exe, to_setup);
  }
  to_setup.reset();
  self_exe.reset();
  // PID 1 gone: the kernel is ending the namespace.
  if (!wait_for_pid1(to_pid1.get())) ::_exit(125);
  return to_pid1;
}

[[noreturn]] void sandbox_child(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask) {
  a.timeline.mark("clone");
  if (p.die_with_parent) arm_die_with_parent(channel);
  // Opened while the host's /proc is still here; decided for good at the
  // command's start, when the capabilities it keeps are known.
  Pid1ExecCase pid1_exec{p.plan.reaper,
                         (p.plan.clone_flags & CLONE_NEWPID) != 0,
                         (p.plan.clone_flags & CLONE_NEWUSER) != 0,
                         p.userns2_fd >= 0,
                         p.info_fd >= 0 || p.json_status_fd >= 0,
                         false,
                         false};
  Fd self_exe;
  if (pid1_exec_moment(pid1_exec) != Pid1Exec::stays) {
    pid1_exec.self_has_interpreter = self_has_interpreter();
    pid1_exec.root_by_chroot = pid1_exec.self_has_interpreter && root_enters_by_chroot();
    if (pid1_exec_moment(pid1_exec) != Pid1Exec::stays) self_exe.reset(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
  }
  // Written by the child, first thing: only it may read its own namespace
  // links once it is not dumpable, and the host's procfs (still mounted
  // here) names it by its pid in the caller's PID namespace. A caller may
  // need the pid before the sandbox goes on (--userns-block-fd).
  if (p.info_fd >= 0 || p.json_status_fd >= 0) {
    const pid_t outside = own_pid_outside();
    const NamespaceIds ids = namespace_ids("self", p.plan.clone_flags);
    if (p.info_fd >= 0)
      if (auto r = write_status(p.info_fd, start_status(outside, ids, true), Operation::info_fd); !r) die(channel, r.error());
    if (p.json_status_fd >= 0)
      if (auto r = write_status(p.json_status_fd, start_status(outside, ids, false), Operation::json_status_fd); !r)
        die(channel, r.error());
    if (p.info_fd >= 0) ::close(p.info_fd);
  }
  if (auto r = write_id_maps(p.plan); !r) die(channel, r.error());
  // bwrap's order: uid first (so a gid switch after losing root fails as
  // it does there).
  if (p.join_uid && ::setuid(*p.join_uid) != 0) die(channel, sys_error(Operation::setuid, std::to_string(*p.join_uid)));
  if (p.join_gid && ::setgid(*p.join_gid) != 0) die(channel, sys_error(Operation::setgid, std::to_string(*p.join_gid)));
  if (p.userns_block_fd >= 0)
    if (auto r = wait_on_fd(p.userns_block_fd, Operation::userns_block_fd); !r) die(channel, r.error());
  // Not dumpable: the command, same uid, must not reach PID 1 through
  // /proc/1/{exe,root,fd,mem}. Only after the id maps: a non-dumpable
  // process's /proc/self files belong to root, and an unprivileged caller
  // could no longer write its own maps.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (!p.plan.hostname.empty() && ::sethostname(p.plan.hostname.data(), p.plan.hostname.size()) != 0)
    die(channel, sys_error(Operation::sethostname, p.plan.hostname));
  a.timeline.mark("id-maps");
  if ((p.plan.clone_flags & CLONE_NEWNET) != 0) {
    if (auto r = bring_up_loopback(); !r) die(channel, r.error());
    a.timeline.mark("loopback");
  }
  // Read at the end: the sysctl answers for the reader's PID namespace,
  // whichever procfs the file was opened on (the host's, still mounted).
  if (p.observe && p.plan.reaper && (p.plan.clone_flags & CLONE_NEWPID) != 0)
    a.last_pid_fd = ::open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
  // A dynamic nsrun's PID 1 execs here, before the root (launch/pid1_exec.hpp);
  // this process goes on as the set-up process.
  Fd to_pid1;
  if (self_exe.valid() && pid1_exec.self_has_interpreter) {
    pid1_exec.command_may_ptrace = command_may_ptrace(a);
    if (pid1_exec_moment(pid1_exec) == Pid1Exec::before_root) to_pid1 = split_off_setup(channel, p, a, self_exe);
    self_exe.reset();
  }
  const bool setup_process = to_pid1.valid();
  if (a.egress_fd >= 0) {
    if (auto r = egress::send_listeners(a.egress_fd); !r) die(channel, r.error());
    ::close(a.egress_fd);
    a.egress_fd = -1;
  }
  if (auto r = build_root(p.plan.mounts, a.timeline); !r) die(channel, r.error());
  // bwrap --userns2: the set-up needed the outer namespace's capabilities;
  // the command (and PID 1) live in the inner one. Before the capability
  // drop below, which then applies to the sets this namespace gave us.
  if (p.userns2_fd >= 0 && ::setns(p.userns2_fd, CLONE_NEWUSER) != 0)
    die(channel, sys_error(Operation::setns_userns2, std::to_string(p.userns2_fd)));
  // Held by this process (PID 1 when there is a reaper; the set-up process
  // hands them to it) for the sandbox's life.
  auto locks = take_locks(p.lock_files);
  if (!locks) die(channel, locks.error());
  if (setup_process) {
    if (auto r = hand_locks_to_pid1(to_pid1.get(), *locks, p.lock_files); !r) die(channel, r.error());
    to_pid1.reset();
  }
  if (p.block_fd >= 0)
    if (auto r = wait_on_fd(p.block_fd, Operation::block_fd); !r) die(channel, r.error());
  if (a.words_parent_fd >= 0) ::close(a.words_parent_fd);
  // Once for PID 1 and the command: both inherit the emptied sets. Only
  // what this process holds can be kept (bwrap's --cap-add ALL).
  if (p.keep_setfcap) a.keep_caps.push_back(CAP_SETFCAP);
  a.keep_caps = held_capabilities(a.keep_caps);
  if (auto r = drop_bounding_and_ambient(a.keep_caps); !r) die(channel, r.error());
  a.timeline.mark("bounding");

  if (!p.plan.reaper || setup_process) start_command(channel, p, a, original_mask, {});

  install_forwarding_handlers();
  // PID 1 confines itself first and the command inherits it: one filter
  // load fewer (the kernel compiles each one), and nothing left for PID 1
  // to do while the command execs. Not when the command keeps capabilities
  // (--cap-add): PID 1 could not hand on what it had dropped.
  CommandSetup setup;
  setup.confined_by_parent = a.keep_caps.empty();
  if (setup.confined_by_parent) {
    if (auto r = enter_directory(p.plan); !r) die(channel, r.error());
    if (auto r = set_capabilities({}); !r) die(channel, r.error());
    if (auto r = set_no_new_privs(); !r) die(channel, r.error());
    if (auto r = load_command_filter(p, a, p.seccomp, false); !r) die(channel, r.error());
  }
  // A session's PID 1 serves its requests from here, confined as the
  // command would be (src/session/pid1.cpp); it never returns.
  if (a.session) a.session->serve(p, a, channel, original_mask, setup, *locks);
  pid1_exec.command_may_ptrace = std::ranges::find(a.keep_caps, CAP_SYS_PTRACE) != a.keep_caps.end();
  const bool reexec = self_exe.valid() && pid1_exec_moment(pid1_exec) == Pid1Exec::after_root;
  Fd release;
  const pid_t command = reexec ? spawn_held_command(channel, p, a, original_mask, setup, release)
                               : spawn_command(channel, p, a, original_mask, setup);
  if (command < 0) die(channel, sys_error(Operation::fork, "command"));

  close_all_but(*locks, {channel, a.words_fd, a.last_pid_fd, self_exe.get(), release.get()});
  if (!setup.confined_by_parent) {
    // PID 1 must not go on unconfined beside the command: when its own
    // confinement fails it reports and exits, and the kernel ends the
    // PID namespace with it.
    if (auto r = set_capabilities({}); !r) die(channel, r.error());
    if (auto r = set_no_new_privs(); !r) die(channel, r.error());
    if (auto r = load_filter(p.seccomp); !r) die(channel, r.error());
  }
  ::close(channel);
  if (reexec) {
    Pid1Handover handover{command, a.words_fd, a.last_pid_fd, release.get(), {}};
    for (const auto& fd : *locks) handover.held.push_back(fd.get());
    exec_pid1_reaper(self_exe.get(), handover);
    // The exec failed: PID 1 stays this fork of nsrun, as confined as
    // before (only its caller cannot reach it), and reaps itself.
    const char go = 1;
    (void)!::write(release.get(), &go, 1);
    release.reset();
  }
  self_exe.reset();
  int raw = 0;
  const int code = wait_command(command, WaitOptions{0, end_pid_namespace, kill_pid_namespace}, &raw);
  // Minus PID 1: the command's processes and threads.
  const int64_t last = last_pid(a.last_pid_fd);
  send_final_status(a.words_fd, raw, last > 0 ? last - 1 : -1);
  ::_exit(code);
}

// bwrap --pidns with --unshare-pid. The kernel makes a PID namespace only
// from a process already inside the one it nests in (after setns(), a
// clone with CLONE_NEWPID gives EINVAL), so this process, forked into the
// joined namespace, makes the sandbox and then relays as PID 1 does:
// signals down, the exit status up. It keeps no fd: the caller's (status
// fds, the channel) must reach EOF when the sandbox's copies close.
[[noreturn]] void relay_into_nested_pidns(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask) {
  if (p.die_with_parent) arm_die_with_parent(channel);
  const pid_t child = sys::clone_fork(p.plan.clone_flags);
  if (child < 0) die(channel, sys_error(Operation::clone, clone_flag_names(p.plan.clone_flags)));
  if (child == 0) sandbox_child(channel, p, a, original_mask);
  install_forwarding_handlers();
  ::close_range(3, ~0U, 0);
  // It only waits from here on: nothing to keep the joined namespace's
  // capabilities for (as nsrun's PID 1).
  (void)set_capabilities({});
  (void)set_no_new_privs();
  ::_exit(wait_forwarding(child));
}

// A session's proxy is forked at once, before the session's hook starts
// its control-socket thread: fork() copies only the calling thread, and
// the proxy would inherit any lock another thread held (malloc's,
// stdio's). The sandbox sends the listeners before it builds its root, so
// this waits only for its first steps (or its death, an end of file).
void wake_proxy_now(egress::Egress& proxy) {
  for (std::vector<int> fds = proxy.wake_fds(); fds.size() == 1; fds = proxy.wake_fds()) {
    struct pollfd pfd{fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR) break;
  }
  if (!proxy.wake())
    fmt::print(stderr, "nsrun: --network proxy: the proxy could not start; the sandbox's connections are refused\n");
}

}  // namespace

// The parent joins the caller's namespaces itself, before the clone: a
// user namespace must be joined for the new namespaces to be owned by it
// (and to hold capabilities in it), and a PID namespace joined with setns
// only changes where the parent's children go. Neither can be undone, which
// is harmless: afterwards the parent only waits for the child and forwards
// signals to it (same kernel uid, so kill() still works), and the front end
// that sets these fds pins the namespace rung, so no other rung runs here.
static Result<void> join_namespaces(const LaunchSpec& p) {
  // The user namespace first: it gives the capabilities that joining a PID
  // namespace it owns requires.
  if (p.userns_fd >= 0 && ::setns(p.userns_fd, CLONE_NEWUSER) != 0)
    return fail(sys_error(Operation::setns_userns, std::to_string(p.userns_fd)));
  if (p.pidns_fd >= 0 && ::setns(p.pidns_fd, CLONE_NEWPID) != 0)
    return fail(sys_error(Operation::setns_pidns, std::to_string(p.pidns_fd)));
  return {};
}

LaunchOutcome run_namespaces(const LaunchSpec& p, Attempt& a) {
  LaunchOutcome out;
  if (auto r = join_namespaces(p); !r) {
    out.error = r.error();
    return out;
  }
  auto channel = make_channel();
  if (!channel) {
    out.error = channel.error();
    return out;
  }
  std::optional<ChannelPair> words;
  if (p.observe) {
    auto pair = make_channel();
    if (!pair) {
      out.error = pair.error();
      return out;
    }
    words = std::move(*pair);
    a.words_fd = words->child.get();
    a.words_parent_fd = words->parent.get();
  }
  // --network proxy: the sandbox makes the listeners in its network
  // namespace and sends them here, to the proxy (net/egress.hpp).
  std::optional<ChannelPair> egress_pair;
  if (p.egress) {
    auto pair = make_channel();
    if (!pair) {
      out.error = pair.error();
      return out;
    }
    egress_pair = std::move(*pair);
    a.egress_fd = egress_pair->child.get();
  }
  const sigset_t original_mask = block_for_launch();

  // A joined PID namespace with a new one inside: a plain fork first (see
  // relay_into_nested_pidns).
  const bool nested_pidns = p.pidns_fd >= 0 && (p.plan.clone_flags & CLONE_NEWPID) != 0;
  // PID 1 gets its own address space (fork semantics), as in bubblewrap,
  // crun and nsjail: it lives inside the sandbox next to an untrusted
  // command, while nsrun runs outside every namespace with the caller's
  // privileges. Memory shared between the two would make any write bug in
  // PID 1 code execution outside the sandbox. Only the command's own start
  // shares memory (CLONE_VM|CLONE_VFORK, suspended until its exec).
  a.child_is_command = !nested_pidns && !p.plan.reaper;
  std::optional<SandboxCgroup> cgroup;
  std::optional<SandboxCgroupV1> cgroup_v1;
  if (p.limits.use_cgroup && !p.cgroup_v1_dirs.empty()) {
    auto made = SandboxCgroupV1::make(p.cgroup_v1_dirs, ::getpid(), p.limits);
    if (made) {
      cgroup_v1 = std::move(*made);
      if (auto r = cgroup_v1->enter(::getpid()); !r) {
        (void)cgroup_v1->leave(::getpid());
        (void)cgroup_v1->remove();
        made = fail(r.error());
      }
    }
    if (!made) {
      out.error = made.error();
      sigprocmask(SIG_SETMASK, &original_mask, nullptr);
      return out;
    }
  } else if (p.limits.use_cgroup) {
    auto made = SandboxCgroup::make(p.cgroup_base, ::getpid(), p.limits);
    if (!made) {
      out.error = made.error();
      sigprocmask(SIG_SETMASK, &original_mask, nullptr);
      return out;
    }
    cgroup = std::move(*made);
  }
  const uint64_t flags = nested_pidns ? 0 : p.plan.clone_flags;
  const pid_t child = cgroup ? sys::clone_fork_into(flags, cgroup->fd()) : sys::clone_fork(flags);
  // v1: PID 1 started in the sandbox's cgroups; nsrun goes back to its own.
  // A failure here leaves nsrun counted in the sandbox's cgroups, not the
  // sandbox outside them: the run goes on, the message says so.
  if (cgroup_v1 && child != 0)
    if (auto r = cgroup_v1->leave(::getpid()); !r) print_error(r.error());
  if (child < 0) {
    out.error = sys_error(Operation::clone, clone_flag_names(p.plan.clone_flags));
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    return out;
  }
  if (child == 0) {
    channel->parent.reset();
    if (nested_pidns) relay_into_nested_pidns(channel->child.get(), p, a, original_mask);
    sandbox_child(channel->child.get(), p, a, original_mask);
  }
  channel->child.reset();
  if (words) words->child.reset();
  a.words_fd = -1;
  LaunchOutcome result;
  if (!egress_pair) {
    if (a.session) a.session->started(child, nullptr);
    result = supervise(child, channel->parent.get(), p, a, original_mask, "PID 1");
  } else {
    // Started after the clone: the sandbox's processes never inherit the
    // proxy's control socket (and its process, forked later, holds none
    // of theirs).
    egress_pair->child.reset();
    a.egress_fd = -1;
    auto proxy = egress::Egress::start(*p.egress, std::move(egress_pair->parent));
    if (!proxy) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      sigprocmask(SIG_SETMASK, &original_mask, nullptr);
      out.error = proxy.error();
      if (cgroup) (void)cgroup->remove();
      if (cgroup_v1) (void)cgroup_v1->remove();
      return out;
    }
    if (a.session) {
      wake_proxy_now(**proxy);
      a.session->started(child, proxy->get());
    }
    result = supervise(child, channel->parent.get(), p, a, original_mask, "PID 1", proxy->get());
    a.egress_decisions = (*proxy)->stop();
  }
  if (cgroup || cgroup_v1) {
    account_cgroup(cgroup ? cgroup->events() : cgroup_v1->events(),
                   cgroup ? "memory.peak" : "memory.max_usage_in_bytes", p.limits, result.verdict);
    if (auto r = cgroup ? cgroup->remove() : cgroup_v1->remove(); !r) print_error(r.error());
  }
  return result;
}

}  // namespace nsrun
