#include "launch/launch.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "landlock/abi.hpp"
#include "landlock/kernel.hpp"
#include "launch/ladder.hpp"
#include "launch/pid1_exec.hpp"
#include "launch/protect_watch.hpp"
#include "launch/refusals.hpp"
#include "launch/report.hpp"
#include "launch/userns.hpp"
#include "layers/session.hpp"
#include "mount/executor.hpp"
#include "launch/cgroup_account.hpp"
#include "ns/cgroup.hpp"
#include "ns/channel.hpp"
#include "ns/credentials.hpp"
#include "ns/net.hpp"
#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "ns/rlimits.hpp"
#include "ns/status.hpp"
#include "policy/env.hpp"
#include "probe/cgroup.hpp"
#include "seccomp/notify.hpp"
#include "policy/hosts.hpp"
#include "seccomp/user_programs.hpp"
#include "sys/argv.hpp"
#include "sys/flags.hpp"
#include "sys/raw.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

std::string current_directory() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return "/";
  return buf;
}

void print_error(const Error& e) { fmt::print(stderr, "nsrun: {}\n", e.message()); }

// --network proxy: the variables that point the command's tools at the
// proxy. An inherited value is replaced (a host proxy is unreachable from
// inside); one the policy sets itself (--setenv) is kept.
void set_proxy_environment(const Policy& policy, std::vector<std::string>& env) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  for (const auto& [key, value] : egress::proxy_environment(n > 0 ? std::string_view(self, static_cast<std::size_t>(n)) : ""))
    set_unless_policy_sets(policy, env, key, value);
}

// Child side. Each function below runs after clone and reports through
// `channel`; none returns to the caller's code on failure.

[[noreturn]] void die(int channel, const Error& e) {
  send_error(channel, e);
  ::_exit(e.exit_code());
}

// Marks every inherited fd close-on-exec instead of closing it, so the
// channel (already CLOEXEC) keeps working until the exec succeeds, then
// lets the passed ones through.
Result<void> seal_fds(const std::vector<int>& pass) {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return fail(sys_error(Operation::close_range));
  for (int fd : pass)
    if (::fcntl(fd, F_SETFD, 0) != 0) return fail(sys_error(Operation::pass_fd, std::to_string(fd)));
  return {};
}

Result<void> enter_directory(const LaunchPlan& plan) {
  if (::chdir(plan.chdir.c_str()) == 0) return {};
  if (plan.chdir_required) return fail(sys_error(Operation::chdir, plan.chdir));
  if (!plan.chdir_fallback) {
    Error e = sys_error(Operation::chdir, plan.chdir);
    e.detail = "the current directory is not visible inside the sandbox; --chdir DIR runs the command elsewhere";
    return fail(std::move(e));
  }
  if (::chdir("/") != 0) return fail(sys_error(Operation::chdir, "/"));
  return {};
}

// Closes every fd above 2 except the held ones (lock fds) and `also`.
void close_all_but(const std::vector<Fd>& held, std::initializer_list<int> also) {
  std::vector<int> keep;
  for (int fd : also)
    if (fd >= 0) keep.push_back(fd);
  for (const auto& fd : held) keep.push_back(fd.get());
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(from, ~0U, 0);
}

// The command's filter, refusals sent to nsrun when a notifying variant
// exists: the listener goes to nsrun at once and is closed here, so the
// command never holds it. Where the kernel (or an outer sandbox, whose
// filter refuses listeners) says no, the plain filter: the same refusals,
// unobserved.
Result<void> load_command_filter(const Prepared& p, const BpfProgram& plain, bool landlock) {
  // --watch-writes. The kernel allows one listener per task (a second
  // SECCOMP_FILTER_FLAG_NEW_LISTENER in the chain is EBUSY), so the watch's
  // rules are in the notifying variant when there is one, and nsrun tells
  // a refusal from an observation by the call's registers
  // (watch_continues()). Only without a variant (--seccomp log, none) is
  // the watch a filter of its own, loaded first: the plain filter's errnos
  // outrank its notifications. Where no listener can be had, the run goes
  // on unwatched and the report says "unobserved". On the Landlock rung
  // nsrun learns the private TMPDIR first (a writable place there).
  if (p.write_scope && p.words_fd >= 0 && landlock)
    if (const char* tmpdir = env_lookup(p.env, "TMPDIR"); tmpdir != nullptr) send_private_tmpdir(p.words_fd, tmpdir);
  if (!p.watch_writes.empty() && p.words_fd >= 0)
    if (auto listener = load_filter_listening(p.watch_writes)) send_watch_listener(p.words_fd, listener->get());
  if (!p.seccomp_notify.empty() && p.words_fd >= 0) {
    auto listener = load_filter_listening(p.seccomp_notify);
    if (listener) {
      send_listener(p.words_fd, listener->get());
      return {};
    }
    // The plain filter would refuse every connect(): closed, but not what
    // was asked for; say why instead.
    if (p.require_listener) {
      Error e = listener.error();
      e.detail = "--network proxy on the Landlock rung answers connect() through it";
      return fail(e);
    }
  }
  if (p.require_listener) return fail(sys_error("seccomp listener", "", ENOSYS));
  return load_filter(plain);
}

// execvp semantics with our own PATH (glibc's execvpe reads the caller's
// environment, not the one given). Returns only on failure.
Error try_exec(Prepared& p) {
  std::vector<char*> argv = c_strings(p.argv);
  std::vector<char*> envp = c_strings(p.env);
  int first_err = ENOENT;
  for (const auto& path : p.exec_paths) {
    ::execve(path.c_str(), argv.data(), envp.data());
    int err = errno;
    // A PATH entry we may not search hides nothing we could run: "not
    // found", as a shell says, rather than "not executable".
    if (err == EACCES && ::access(path.c_str(), F_OK) != 0) err = ENOENT;
    if (err != ENOENT && err != ENOTDIR && first_err == ENOENT) first_err = err;
    if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
  }
  Error e = sys_error(Operation::exec, p.argv.front(), first_err);
  e.kind = first_err == ENOENT ? ErrorKind::not_found : ErrorKind::not_exec;
  return e;
}

}  // namespace

[[noreturn]] void start_command(int channel, Prepared& p, const sigset_t& original_mask, const CommandSetup& setup) {
  const bool landlock = setup.landlock_ruleset >= 0;
  if (p.plan.reaper || landlock) p.timeline.mark("fork");
  reset_signals(original_mask);
  const bool session = p.new_session < 0 ? ::isatty(STDIN_FILENO) == 0 : p.new_session == 1;
  if (session && ::setsid() < 0) die(channel, sys_error(Operation::setsid));
  if (!setup.confined_by_parent)
    if (auto r = enter_directory(p.plan); !r) die(channel, r.error());
  if (auto r = seal_fds(p.pass_fds); !r) die(channel, r.error());
  if (!setup.confined_by_parent) {
    if (auto r = set_capabilities(p.keep_caps, p.cap_grant_inheritable); !r) die(channel, r.error());
    if (auto r = set_no_new_privs(); !r) die(channel, r.error());
  }
  if (auto r = apply_rlimits(p.limits.rlimits); !r) die(channel, r.error());
  p.timeline.mark("credentials");
  if (landlock) {
    if (auto r = landlock::restrict_self(setup.landlock_ruleset); !r) die(channel, r.error());
    p.timeline.mark("landlock");
  }
  // Last: from here on the command's own restrictions apply to us too.
  if (!setup.confined_by_parent)
    if (auto r = load_command_filter(p, setup.filter != nullptr ? *setup.filter : p.seccomp, landlock); !r)
      die(channel, r.error());
  for (const auto& program : p.extra_seccomp)
    if (auto r = load_filter(program); !r) die(channel, r.error());
  // The check tries for real: if it succeeds, the command never runs.
  if (p.assert_userns_disabled && ::unshare(CLONE_NEWUSER) == 0)
    die(channel, sys_error(Operation::assert_userns_disabled, {}, 0, "creating a user namespace still works"));
  p.timeline.mark("seccomp");
  send_timeline(channel, p.timeline.encode());
  if (p.stop_before_exec) ::_exit(0);
  die(channel, try_exec(p));
}

namespace {

struct CommandStart {
  int channel;
  Prepared* p;
  const sigset_t* original_mask;
  const CommandSetup* setup;
};

int command_main(void* arg) {
  auto* start = static_cast<CommandStart*>(arg);
  const CommandSetup& setup = *start->setup;
  // The fd table is the child's own (no CLONE_FILES), the memory is not:
  // close the raw fd, never through the parent's Fd object.
  if (setup.close_in_child >= 0) ::close(setup.close_in_child);
  if (setup.landlock_ruleset >= 0) {
    // On the Landlock rung nsrun itself is the parent: nothing emptied the
    // bounding set before.
    if (start->p->die_with_parent) arm_die_with_parent(start->channel);
    if (auto r = drop_bounding_and_ambient({}); !r) die(start->channel, r.error());
  } else if (start->p->die_with_parent && (start->p->plan.clone_flags & CLONE_NEWPID) == 0) {
    // The parent holds --lock-file in the caller's PID namespace: not a
    // PID 1 whose death ends everything below it, so tie the command to it.
    arm_die_with_parent(start->channel);
  }
  start_command(start->channel, *start->p, *start->original_mask, setup);
}

}  // namespace

// The command starts the way posix_spawn starts a program: CLONE_VM|
// CLONE_VFORK on a stack of its own. No page tables are copied and neither
// process takes copy-on-write faults afterwards (each one a trap to the
// hypervisor on a VM); fork() here cost about 0.9 ms of the launch. The
// parent sleeps until the command has exec'd or died, so the two never run
// on the shared memory at once; the command's allocations are left behind
// in the parent's heap, which is harmless. Signal handlers, fds and the
// working directory stay per process (no CLONE_SIGHAND, CLONE_FILES or
// CLONE_FS).
pid_t spawn_command(int channel, Prepared& p, const sigset_t& original_mask, const CommandSetup& setup) {
  constexpr std::size_t stack_size = 256 * 1024;
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  CommandStart start{channel, &p, &original_mask, &setup};
  const pid_t pid = ::clone(command_main, static_cast<char*>(stack) + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  const int err = errno;
  ::munmap(stack, stack_size);
  errno = err;
  return pid;
}

namespace {

// The command when PID 1 re-execs itself (launch/pid1_exec.hpp): a plain
// fork, since PID 1 must run on (exec) while the command waits, which the
// shared-memory start above cannot do. It waits before anything else for
// one byte on the pipe whose other end `release` gets; end of file (PID 1
// gone) ends it.
pid_t spawn_held_command(int channel, Prepared& p, const sigset_t& original_mask, const CommandSetup& setup,
                         Fd& release) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return -1;
  Fd held(ends[0]);
  release.reset(ends[1]);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  release.reset();
  char go = 0;
  ssize_t n;
  while ((n = ::read(held.get(), &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) ::_exit(125);
  held.reset();
  CommandStart start{channel, &p, &original_mask, &setup};
  command_main(&start);
  ::_exit(125);
}

}  // namespace

void arm_die_with_parent(int channel) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die(channel, sys_error(Operation::die_with_parent));
  // The parent may have died before the prctl: its end of the channel is
  // then closed and the socket reports a hang-up.
  struct pollfd pfd{channel, POLLIN, 0};
  if (::poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP)) ::_exit(125);
}

namespace {

[[noreturn]] void sandbox_child(int channel, Prepared& p, const sigset_t& original_mask) {
  p.timeline.mark("clone");
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
  if (pid1_execs_in_sandbox(pid1_exec) && !(pid1_exec.self_has_interpreter = self_has_interpreter()))
    self_exe.reset(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
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
  p.timeline.mark("id-maps");
  if ((p.plan.clone_flags & CLONE_NEWNET) != 0) {
    if (auto r = bring_up_loopback(); !r) die(channel, r.error());
    p.timeline.mark("loopback");
  }
  // Read at the end: the sysctl answers for the reader's PID namespace,
  // whichever procfs the file was opened on (the host's, still mounted).
  if (p.observe && p.plan.reaper && (p.plan.clone_flags & CLONE_NEWPID) != 0)
    p.last_pid_fd = ::open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
  if (p.egress_fd >= 0) {
    if (auto r = egress::send_listeners(p.egress_fd); !r) die(channel, r.error());
    ::close(p.egress_fd);
    p.egress_fd = -1;
  }
  if (auto r = build_root(p.plan.mounts, p.timeline); !r) die(channel, r.error());
  // bwrap --userns2: the set-up needed the outer namespace's capabilities;
  // the command (and PID 1) live in the inner one. Before the capability
  // drop below, which then applies to the sets this namespace gave us.
  if (p.userns2_fd >= 0 && ::setns(p.userns2_fd, CLONE_NEWUSER) != 0)
    die(channel, sys_error(Operation::setns_userns2, std::to_string(p.userns2_fd)));
  // Held by this process (PID 1 when there is a reaper) for the sandbox's life.
  auto locks = take_locks(p.lock_files);
  if (!locks) die(channel, locks.error());
  if (p.block_fd >= 0)
    if (auto r = wait_on_fd(p.block_fd, Operation::block_fd); !r) die(channel, r.error());
  if (p.words_parent_fd >= 0) ::close(p.words_parent_fd);
  // Once for PID 1 and the command: both inherit the emptied sets. Only
  // what this process holds can be kept (bwrap's --cap-add ALL).
  if (p.keep_setfcap) p.keep_caps.push_back(CAP_SETFCAP);
  p.keep_caps = held_capabilities(p.keep_caps);
  if (auto r = drop_bounding_and_ambient(p.keep_caps); !r) die(channel, r.error());
  p.timeline.mark("bounding");

  if (!p.plan.reaper) start_command(channel, p, original_mask, {});

  install_forwarding_handlers();
  // PID 1 confines itself first and the command inherits it: one filter
  // load fewer (the kernel compiles each one), and nothing left for PID 1
  // to do while the command execs. Not when the command keeps capabilities
  // (--cap-add): PID 1 could not hand on what it had dropped.
  CommandSetup setup;
  setup.confined_by_parent = p.keep_caps.empty();
  if (setup.confined_by_parent) {
    if (auto r = enter_directory(p.plan); !r) die(channel, r.error());
    if (auto r = set_capabilities({}); !r) die(channel, r.error());
    if (auto r = set_no_new_privs(); !r) die(channel, r.error());
    if (auto r = load_command_filter(p, p.seccomp, false); !r) die(channel, r.error());
  }
  if (p.session_serve) p.session_serve(p, channel, original_mask, setup, *locks);
  pid1_exec.command_may_ptrace = std::ranges::find(p.keep_caps, CAP_SYS_PTRACE) != p.keep_caps.end();
  const bool reexec = self_exe.valid() && pid1_execs_in_sandbox(pid1_exec);
  Fd release;
  const pid_t command = reexec ? spawn_held_command(channel, p, original_mask, setup, release)
                               : spawn_command(channel, p, original_mask, setup);
  if (command < 0) die(channel, sys_error(Operation::fork, "command"));

  close_all_but(*locks, {channel, p.words_fd, p.last_pid_fd, self_exe.get(), release.get()});
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
    Pid1Handover handover{command, p.words_fd, p.last_pid_fd, release.get(), {}};
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
  const int code = wait_command(command, WaitOptions{0, end_pid_namespace}, &raw);
  // Minus PID 1: the command's processes and threads.
  const int64_t last = last_pid(p.last_pid_fd);
  send_final_status(p.words_fd, raw, last > 0 ? last - 1 : -1);
  ::_exit(code);
}

// bwrap --pidns with --unshare-pid. The kernel makes a PID namespace only
// from a process already inside the one it nests in (after setns(), a
// clone with CLONE_NEWPID gives EINVAL), so this process, forked into the
// joined namespace, makes the sandbox and then relays as PID 1 does:
// signals down, the exit status up. It keeps no fd: the caller's (status
// fds, the channel) must reach EOF when the sandbox's copies close.
[[noreturn]] void relay_into_nested_pidns(int channel, Prepared& p, const sigset_t& original_mask) {
  if (p.die_with_parent) arm_die_with_parent(channel);
  const pid_t child = sys::clone_fork(p.plan.clone_flags);
  if (child < 0) die(channel, sys_error(Operation::clone, clone_flag_names(p.plan.clone_flags)));
  if (child == 0) sandbox_child(channel, p, original_mask);
  install_forwarding_handlers();
  ::close_range(3, ~0U, 0);
  // It only waits from here on: nothing to keep the joined namespace's
  // capabilities for (as nsrun's PID 1).
  (void)set_capabilities({});
  (void)set_no_new_privs();
  ::_exit(wait_forwarding(child));
}

// `status` is the sandbox's first process's (PID 1, or the Landlock rung's
// supervisor). Killed itself, it names itself; exited, it passed on the
// status of the command's process, which died before its exec.
Error died_in_setup(int status, std::string_view first_process) {
  std::string what;
  if (WIFSIGNALED(status)) {
    what = fmt::format("{} was killed by signal {} (SIG{}) before the command's exec", first_process,
                       WTERMSIG(status), sigabbrev_np(WTERMSIG(status)));
  } else {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code > 128 && sigabbrev_np(code - 128) != nullptr)
      what = fmt::format("the command's process was killed by signal {} (SIG{}) before its exec", code - 128,
                         sigabbrev_np(code - 128));
    else
      what = fmt::format("the command's process ended with status {} before its exec", code);
  }
  Error e{"set-up", 0, {}, std::move(what)};
  // Seen by nsrun while it supervises; which step the sandbox had reached
  // (build, confine, the command's start) it did not say before dying.
  e.phase = Phase::supervise;
  return e;
}

int run_unconfined(Prepared& p) {
  fmt::print(stderr, "nsrun: full-access: running the command without confinement\n");
  if (auto r = enter_directory(p.plan); !r) {
    print_error(r.error());
    return r.error().exit_code();
  }
  Error e = try_exec(p);
  print_error(e);
  return e.exit_code();
}

}  // namespace

// The parent joins the caller's namespaces itself, before the clone: a
// user namespace must be joined for the new namespaces to be owned by it
// (and to hold capabilities in it), and a PID namespace joined with setns
// only changes where the parent's children go. Neither can be undone, which
// is harmless: afterwards the parent only waits for the child and forwards
// signals to it (same kernel uid, so kill() still works), and the front end
// that sets these fds pins the namespace rung, so no other rung runs here.
static Result<void> join_namespaces(const Prepared& p) {
  // The user namespace first: it gives the capabilities that joining a PID
  // namespace it owns requires.
  if (p.userns_fd >= 0 && ::setns(p.userns_fd, CLONE_NEWUSER) != 0)
    return fail(sys_error(Operation::setns_userns, std::to_string(p.userns_fd)));
  if (p.pidns_fd >= 0 && ::setns(p.pidns_fd, CLONE_NEWPID) != 0)
    return fail(sys_error(Operation::setns_pidns, std::to_string(p.pidns_fd)));
  return {};
}

LaunchOutcome run_namespaces(Prepared& p) {
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
    p.words_fd = words->child.get();
    p.words_parent_fd = words->parent.get();
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
    p.egress_fd = egress_pair->child.get();
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
  p.child_is_command = !nested_pidns && !p.plan.reaper;
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
    if (nested_pidns) relay_into_nested_pidns(channel->child.get(), p, original_mask);
    sandbox_child(channel->child.get(), p, original_mask);
  }
  channel->child.reset();
  if (p.session_started) p.session_started(child);
  if (words) words->child.reset();
  p.words_fd = -1;
  LaunchOutcome result;
  if (!egress_pair) {
    result = supervise(child, channel->parent.get(), p, original_mask, "PID 1");
  } else {
    // Started after the clone: the sandbox's processes never inherit the
    // proxy's control socket (and its process, forked later, holds none
    // of theirs).
    egress_pair->child.reset();
    p.egress_fd = -1;
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
    result = supervise(child, channel->parent.get(), p, original_mask, "PID 1", proxy->get());
    p.egress_decisions = (*proxy)->stop();
  }
  if (cgroup || cgroup_v1) {
    account_cgroup(cgroup ? cgroup->events() : cgroup_v1->events(),
                   cgroup ? "memory.peak" : "memory.max_usage_in_bytes", p.limits, result.verdict);
    if (auto r = cgroup ? cgroup->remove() : cgroup_v1->remove(); !r) print_error(r.error());
  }
  return result;
}

void account_cgroup(const CgroupEvents& events, const char* peak_source, const LimitsPlan& plan, Verdict& v) {
  // The cgroup's own account, truer than rusage: the whole sandbox.
  if (events.peak_bytes) {
    v.usage.peak_memory_bytes = *events.peak_bytes;
    v.usage.peak_memory_source = peak_source;
  }
  if (plan.cgroup_pids) v.pids_refused = events.pids_max_hits;
  if (v.started && events.oom_kills > 0 && v.ended.how == "signal" && v.ended.signal == SIGKILL) {
    v.ended.how = "oom";
    v.ended.limit = "memory";
  }
}

LaunchOutcome supervise(pid_t child, int channel, Prepared& p, const sigset_t& original_mask,
                        std::string_view first_process, egress::Egress* proxy) {
  LaunchOutcome out;
  // Not zeroed: only the bytes received are touched.
  ChannelBytes bytes;
  receive_raw(channel, bytes);
  if (bytes.failed_errno != 0) {
    // Nothing more can be learnt from the sandbox: end it before reporting.
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  auto received = decode(bytes);
  out.timeline = p.timeline;
  if (received) out.timeline.merge(received->timeline);
  if (!received || received->error) {
    int status = 0;
    ::waitpid(child, &status, 0);
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    out.error = received ? *received->error : received.error();
    out.exit_code = out.error->exit_code();
    // An exec failure happens after the sandbox was built: the command's
    // own fate, not a reason to try another rung.
    out.command_started = out.error->kind == ErrorKind::not_found || out.error->kind == ErrorKind::not_exec;
    return out;
  }
  if (!received->exec_next) {
    // Every copy of the channel closed with neither an error nor the
    // command's last message: a process of the sandbox was killed in
    // set-up (SIGKILL, the OOM killer). The command never ran; say so
    // instead of passing the death on as if it were the command's.
    int status = 0;
    ::waitpid(child, &status, 0);
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    if (p.setup_death_as_status) {
      // Not a failure to move on from: no other rung may run the command.
      out.command_started = true;
      out.exit_code = exit_status(status);
      return out;
    }
    out.error = died_in_setup(status, first_process);
    out.exit_code = out.error->exit_code();
    return out;
  }
  out.timeline.mark("exec");
  out.command_started = true;
  WatchSetup watching;
  watching.child = child;
  watching.child_is_command = p.child_is_command;
  watching.child_is_supervisor = p.child_is_supervisor;
  watching.words_fd = p.words_parent_fd;
  watching.timeout_ms = p.limits.timeout_ms;
  watching.kill_after_ms = p.limits.kill_after_ms;
  watching.rlimits = p.limits.rlimits;
  watching.notify_key = p.seccomp_notify_key;
  watching.notify_handler = p.notify_handler;
  watching.writes = p.write_scope;
  // --network proxy: its process starts at the first connection or query.
  if (proxy != nullptr) {
    watching.wake_fds = proxy->wake_fds();
    watching.wake = [proxy] {
      if (!proxy->wake()) fmt::print(stderr, "nsrun: --network proxy: the proxy could not start; the sandbox's connections are refused\n");
    };
  }
  out.verdict = watch(watching);
  out.verdict.limits = p.limits.decisions;
  out.exit_code = out.verdict.ended.code;
  if (p.json_status_fd >= 0) {
    (void)write_status(p.json_status_fd, exit_status_line(out.exit_code), Operation::json_status_fd);
    ::close(p.json_status_fd);
  }
  return out;
}

std::vector<std::string> exec_candidates(const std::string& name, const char* path_var) {
  if (name.find('/') != std::string::npos) return {name};
  std::string_view path = path_var != nullptr ? path_var : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> out;
  while (true) {
    const std::size_t colon = path.find(':');
    std::string_view dir = path.substr(0, colon);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    out.push_back(fmt::format("{}/{}", dir, name));
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return out;
}

Result<Prepared> prepare(const Policy& policy) {
  Prepared p;
  p.timeline.start();
  HostFacts host{::getuid(), ::getgid(), current_directory()};
  auto plan = make_plan(policy, host);
  if (!plan) return fail(plan.error());
  p.plan = std::move(*plan);
  // A cgroup namespace where the kernel has one (CONFIG_CGROUPS): asking
  // for it elsewhere would fail the clone for no confinement gained.
  if ((p.plan.clone_flags & CLONE_NEWCGROUP) != 0 && ::access("/proc/self/ns/cgroup", F_OK) != 0)
    p.plan.clone_flags &= ~static_cast<uint64_t>(CLONE_NEWCGROUP);
  p.env = resolve_env(policy, current_environment());
  if (wants_offline_environment(policy))
    for (const auto& [key, value] : offline_environment()) set_unless_policy_sets(policy, p.env, key, value);
  if (policy.network == Network::proxy) {
    auto rules = hosts::parse_rules(policy.egress.allow, policy.egress.deny);
    if (!rules) return fail(rules.error());
    auto pins = egress::parse_pins(policy.egress.resolve);
    if (!pins) return fail(pins.error());
    p.egress = egress::EgressConfig{std::move(*rules), std::move(*pins), -1, {}};
    set_proxy_environment(policy, p.env);
  }
  p.argv = policy.argv;
  // No command: `nsrun probe`, which stops before the exec.
  if (!policy.argv.empty()) {
    p.exec_paths = exec_candidates(policy.argv.front(), env_lookup(p.env, "PATH"));
    if (!policy.argv0.empty()) p.argv.front() = policy.argv0;
  }
  p.pass_fds = policy.pass_fds;
  auto caps = parse_capabilities(policy.cap_add);
  if (!caps) return fail(caps.error());
  p.keep_caps = std::move(*caps);
  p.cap_grant_inheritable = policy.cap_grant_inheritable;
  // --allow-nested-userns run by root: the sandbox's uid maps to the
  // host's uid 0, and since Linux 5.12 a user namespace whose map includes
  // uid 0 may only be made by a process holding CAP_SETFCAP where it is
  // made (kernel/user_namespace.c, verify_root_map(); that map lets file
  // capabilities set inside count on the host). Without it `unshare -Ur`
  // and a nested sandbox fail to write their uid_map. Only the native
  // dialect: bwrap drops it unless --cap-add CAP_SETFCAP says so.
  p.keep_setfcap = policy.allow_nested_userns && policy.preset && ::geteuid() == 0 && policy.ns.user &&
                   !policy.userns_fd &&
                   std::find(p.keep_caps.begin(), p.keep_caps.end(), CAP_SETFCAP) == p.keep_caps.end();
  auto filter = compile_filter(policy);
  if (!filter) return fail(filter.error());
  p.filter = filter_key(policy, FilterRung::namespaces);
  p.seccomp = std::move(*filter);
  if (policy.disable_userns) {
    auto no_userns = compile_no_userns_filter();
    if (!no_userns) return fail(no_userns.error());
    p.extra_seccomp.push_back(std::move(*no_userns));
  }
  auto programs = read_user_programs(policy.seccomp_fds);
  if (!programs) return fail(programs.error());
  for (auto& program : *programs) p.extra_seccomp.push_back(std::move(program));
  p.assert_userns_disabled = policy.assert_userns_disabled;
  p.info_fd = policy.info_fd.value_or(-1);
  p.json_status_fd = policy.json_status_fd.value_or(-1);
  p.block_fd = policy.block_fd.value_or(-1);
  p.userns_block_fd = policy.userns_block_fd.value_or(-1);
  p.userns_fd = policy.userns_fd.value_or(-1);
  p.userns2_fd = policy.userns2_fd.value_or(-1);
  p.pidns_fd = policy.pidns_fd.value_or(-1);
  // In a joined user namespace the ids are switched, not mapped; as bwrap,
  // only when they differ from the caller's (kernel) ones.
  if (policy.userns_fd && policy.uid && *policy.uid != host.uid) p.join_uid = policy.uid;
  if (policy.userns_fd && policy.gid && *policy.gid != host.gid) p.join_gid = policy.gid;
  p.lock_files = policy.lock_files;
  if (policy.new_session) p.new_session = *policy.new_session ? 1 : 0;
  p.die_with_parent = policy.die_with_parent;
  auto limits = rung_limits(policy, FilterRung::namespaces);
  if (!limits) return fail(limits.error());
  apply_limits(p, std::move(*limits));
  p.timeline.mark("prepare");
  return p;
}

// The facts, and the delegated cgroup v2 they found (`cgroup_dir`), so the
// launch does not look for it twice.
static LimitFacts limit_facts(const Policy& policy, bool namespaces_rung, std::string* cgroup_dir) {
  LimitFacts f;
  f.namespaces_rung = namespaces_rung;
  f.new_user_ns = namespaces_rung && policy.ns.user && !policy.userns_fd;
  // The sandbox's processes run as the caller's kernel uid.
  f.kernel_root = ::geteuid() == 0;
  const Limits& l = policy.limits;
  const bool wants_cgroup = l.memory || l.pids || l.cpu_millis || l.mode == LimitsMode::require_cgroup;
  if (!namespaces_rung) {
    // Its supervisor ends the sandbox from a signal scope (landlock_rung.cpp).
    const auto abi = landlock::kernel_abi();
    f.ends_all_at_once = abi && (landlock::scopes(*abi) & landlock::scope::signal) != 0;
  }
  if (wants_cgroup) {
    // Only asked when a limit could use it: the normal launch reads nothing.
    // The Landlock rung too: its supervisor starts in the sandbox's cgroup.
    const CgroupHost host = detect_cgroup_v2();
    f.cgroup = host.usable;
    f.cgroup_why = host.why;
    if (cgroup_dir) *cgroup_dir = host.dir;
    std::vector<std::string> controllers = host.controllers;
    if (!host.usable && namespaces_rung && ::access("/proc/self/ns/pid", F_OK) == 0) {
      // v1 only with a PID namespace of the sandbox's own: it is what ends
      // every process of the cgroup (v1 has no cgroup.kill).
      const CgroupV1Host v1 = detect_cgroup_v1();
      if (v1.usable && policy.ns.pid && !policy.as_pid_1) {
        f.cgroup = true;
        f.cgroup_version = 1;
        controllers.clear();
        for (const auto& [c, dir] : v1.dirs) controllers.push_back(c);
      } else if (!v1.why.empty()) {
        f.cgroup_why += "; " + v1.why;
      }
    }
    for (const auto& c : controllers) {
      f.cgroup_memory |= c == "memory";
      f.cgroup_pids |= c == "pids";
      f.cgroup_cpu |= c == "cpu";
    }
  }
  return f;
}

LimitFacts limit_facts(const Policy& policy, bool namespaces_rung) {
  return limit_facts(policy, namespaces_rung, nullptr);
}

Result<RungLimits> rung_limits(const Policy& policy, FilterRung rung) {
  RungLimits out;
  std::string cgroup_dir;
  const LimitFacts facts = limit_facts(policy, rung == FilterRung::namespaces, &cgroup_dir);
  auto limits = plan_limits(policy.limits, facts);
  if (!limits) return fail(limits.error());
  out.plan = std::move(*limits);
  if (out.plan.use_cgroup) {
    if (facts.cgroup_version == 1) out.cgroup_v1_dirs = detect_cgroup_v1().dirs;
    else out.cgroup_base = std::move(cgroup_dir);
  }
  out.observe = !policy.report_path.empty() || policy.report_fd.has_value() || policy.verdict || policy.watch_writes;
  // --network proxy on the Landlock rung: nsrun answers the command's
  // connect() through the listener (net/connector.hpp), observed or not.
  const bool answers = rung == FilterRung::landlock && policy.network == Network::proxy;
  if (answers) out.observe = true;
  // Not with --assert-userns-disabled: its check is a notified call made
  // before the exec, while nsrun still waits for the exec (a wait on itself).
  if (out.observe && (!policy.assert_userns_disabled || answers)) {
    auto notify = compile_notify_filter(policy, rung);
    if (!notify) return fail(notify.error());
    out.notify = std::move(*notify);
    out.notify_key = filter_key(policy, rung);
  }
  if (policy.watch_writes) {
    auto watch = out.notify.empty() ? compile_watch_writes_filter() : compile_notify_watch_filter(policy, rung);
    if (!watch) return fail(watch.error());
    (out.notify.empty() ? out.watch_writes : out.notify) = std::move(*watch);
    out.write_scope = write_scope(policy, rung == FilterRung::landlock);
  }
  return out;
}

void apply_limits(Prepared& p, RungLimits l) {
  p.limits = std::move(l.plan);
  if (p.limits.tmpfs_size)
    for (auto& step : p.plan.mounts)
      if (step.op == MountStep::Op::tmpfs && step.size == 0) step.size = *p.limits.tmpfs_size;
  p.observe = l.observe;
  p.seccomp_notify = std::move(l.notify);
  p.seccomp_notify_key = l.notify_key;
  p.watch_writes = std::move(l.watch_writes);
  p.write_scope = std::move(l.write_scope);
  p.cgroup_base = std::move(l.cgroup_base);
  p.cgroup_v1_dirs = std::move(l.cgroup_v1_dirs);
}

// The protect guard (seccomp/writes.hpp) on the namespace rung: a rename
// onto a protected path that a mount holds reads EROFS, not the mount
// point's EBUSY, and is a refusal in the verdict. Armed only when the
// launch's scan found such a path (`held`, held_mounts()): a workspace
// without a .git (the bench's) pays nothing. Without a report it still
// makes the listener nsrun answers through. --watch-writes guards as it
// watches; no notifying variant (--seccomp none or log,
// --assert-userns-disabled): the kernel's EBUSY stands.
static Result<void> arm_protect_guard(Prepared& p, const Policy& policy, std::vector<std::string> held) {
  if (p.write_scope) {
    if (!p.write_scope->landlock) p.write_scope->held = std::move(held);
    return {};
  }
  if (held.empty() || policy.assert_userns_disabled) return {};
  if (p.observe && p.seccomp_notify.empty()) return {};
  auto guard = compile_notify_guard_filter(policy, FilterRung::namespaces);
  if (!guard) return fail(guard.error());
  if (guard->empty()) return {};
  p.observe = true;
  p.seccomp_notify = std::move(*guard);
  p.seccomp_notify_key = filter_key(policy, FilterRung::namespaces);
  p.write_scope = write_scope(policy, false);
  p.write_scope->watch_all = false;
  p.write_scope->held = std::move(held);
  return {};
}

// The run id goes to stderr before the command starts: the one place a
// caller finds it without --report. --home rw is said, as full-access is.
static void note_layers(const layers::Session& layers, LaunchReport& report) {
  const Policy& p = layers.policy();
  if (p.mode == Mode::full_access) return;
  if (!layers.run_id().empty()) {
    report.layers.run_id = layers.run_id();
    report.layers.run_layer = p.layers.workspace.upper;
    fmt::print(stderr, "nsrun: run {}: the workspace is copy-on-write (nsrun changes {} [--patch]; nsrun commit {}; "
                       "nsrun discard {})\n",
               layers.run_id(), layers.run_id(), layers.run_id(), layers.run_id());
  }
  if (p.layers.home.empty()) return;
  // Said either way: a layer that cannot be made is the caller's setup to
  // fix (or --home ro to say so), not a property of the host.
  if (!layers.home_note().empty())
    fmt::print(stderr, "nsrun: --home cow: no home layer ({}); the home stays read-only\n", layers.home_note());
  report.layers.home = name(p.home);
  if (layers.home_layer()) report.layers.home_layer = p.layers.home_layer.upper;
  if (p.home == HomeMode::rw)
    fmt::print(stderr, "nsrun: --home rw: the command can write your home directory {}\n", printable(p.layers.home));
}

// A launch refused before its command ran leaves no run layer behind (an
// agent would otherwise collect them). Not said: the refusal is the one
// line a refused launch prints after the run id, and the report names no
// run.
static void drop_unused_run(layers::Session& layers, LaunchReport& report) {
  if (!layers.discard_unused()) return;
  report.layers.run_id.clear();
  report.layers.run_layer.clear();
}

// A harness writes a script to the host's /tmp and runs `nsrun -- bash
// /tmp/x.sh`: the sandbox's private /tmp hides it and the command says
// only "No such file". After a failure on the namespace rung, the first
// argument that names an existing host path under /tmp which the private
// tmpfs covers (the last mount over a path decides, as in the kernel's
// tree) is named, with the options that fix it.
static void note_hidden_tmp(const Policy& policy, const LaunchPlan& plan) {
  if (!policy.preset) return;
  auto covers = [](std::string_view dest, std::string_view path) {
    return dest == "/" || path == dest || (path.starts_with(dest) && path[dest.size()] == '/');
  };
  for (const auto& arg : policy.argv) {
    if (!arg.starts_with("/tmp/")) continue;
    const MountStep* last = nullptr;
    for (const auto& m : plan.mounts)
      if ((m.op == MountStep::Op::bind || m.op == MountStep::Op::tmpfs || m.op == MountStep::Op::overlay) &&
          covers(m.dest, arg))
        last = &m;
    struct stat st{};
    if (last == nullptr || last->op != MountStep::Op::tmpfs || last->dest != "/tmp" || ::lstat(arg.c_str(), &st) != 0)
      continue;
    fmt::print(stderr, "nsrun: {} is in the host's /tmp, which the sandbox's private /tmp hides (--tmp host shares "
                       "the host's /tmp; --tmp DIR mounts DIR on /tmp; or put it in the workspace)\n",
               printable(arg));
    return;
  }
}

int run(const Policy& policy) {
  return run(policy, [](const Error& e, const std::optional<Error>&) {
    print_error(e);
    return e.exit_code();
  });
}

int run(const Policy& policy, const ErrorReporter& report_error, SetupDeath setup_death) {
  // Before anything runs: the command must not be able to choose what the
  // report overwrites (see ReportSink).
  auto sink = ReportSink::open(policy);
  if (!sink) return report_error(sink.error(), std::nullopt);
  LaunchReport report;
  report.mode = policy.mode;
  report.host_backend = policy.host_backend;
  report.seccomp = policy.seccomp;
  auto finish = [&](int code, const std::optional<Error>& error, const std::optional<Error>& cause = std::nullopt) {
    report.exit_code = code;
    report.error = error;
    if (error) code = report_error(*error, cause);
    if (auto r = sink->write(report); !r) {
      print_error(r.error());
      if (code == 0) code = 125;
    }
    return code;
  };

  // The copy-on-write layers, made as the caller before anything else
  // (src/layers/); from here on the Policy with their directories.
  auto layers = layers::Session::open(policy);
  if (!layers) return finish(layers.error().exit_code(), layers.error());
  auto prepared = prepare(layers->policy());
  if (!prepared) {
    drop_unused_run(*layers, report);
    return finish(prepared.error().exit_code(), prepared.error());
  }
  note_layers(*layers, report);
  prepared->setup_death_as_status = setup_death == SetupDeath::as_status;
  report.proc = prepared->plan.proc;
  if (policy.mode == Mode::full_access) {
    report.rung = "unconfined";
    if (sink->empty()) return run_unconfined(*prepared);
    (void)finish(0, std::nullopt);  // written before exec: nothing runs after it
    return run_unconfined(*prepared);
  }
  // Opened as the report is, before anything runs (--network-log).
  Fd network_log;
  if (prepared->egress && !policy.egress.log.empty()) {
    auto log = open_network_log(policy);
    if (!log) return finish(log.error().exit_code(), log.error());
    network_log = std::move(*log);
    prepared->egress->log_fd = network_log.get();
  }
  // The ladder (launch/ladder.cpp) picks the rung and fills the report.
  const ProtectWatch protect_watch = watch_protected(policy);
  if (auto r = arm_protect_guard(*prepared, layers->policy(), held_mounts(protect_watch)); !r)
    return finish(r.error().exit_code(), r.error());
  LadderOutcome outcome = run_ladder(layers->policy(), *prepared, report, &protect_watch);
  // Every rung has reaped what it started by now (the namespace rung its
  // PID 1, whose death ends the PID namespace's every process).
  layers->mark_ended();
  layers->close();
  // nsrun's own failure (a refused rung, no sandbox available): nothing
  // of the command's is in an empty run layer to review.
  if (outcome.error) drop_unused_run(*layers, report);
  report.seccomp_filter = !prepared->seccomp.empty();
  report_protected(protect_watch, policy, report, outcome.error);
  if (prepared->egress) report.network = std::move(prepared->egress_decisions);
  // The rung that ran decided how each limit was kept: a best-effort
  // RLIMIT_AS standing in for the memory limit is said whatever the end.
  for (const auto& d : report.verdict.limits)
    if (d.limit == "memory" && d.how == LimitEnforcement::rlimit)
      fmt::print(stderr, "nsrun: --limit-memory: {}\n", d.detail);
  if (report.rung == "namespaces" && outcome.exit_code != 0) note_hidden_tmp(policy, prepared->plan);
  RefusalFacts facts = refusal_facts(policy, report.rung == "landlock");
  facts.seccomp_filter = report.seccomp_filter;
  if (report.network) facts.egress = &*report.network;
  collect_refusals(report.verdict, facts);
  // The timeout is said whether or not --verdict was asked: exit 124 alone
  // does not tell a caller that nsrun ended the command.
  if (const std::string line = policy.verdict ? verdict_line(report.verdict) : timeout_line(report.verdict);
      !line.empty())
    fmt::print(stderr, "{}\n", line);
  return finish(outcome.exit_code, outcome.error, outcome.cause);
}

}  // namespace nsrun
