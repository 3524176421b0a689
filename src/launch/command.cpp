// The command's start, shared by the rungs (launch/command.hpp), top to
// bottom: the child side that becomes the command (session, directory,
// fds, capabilities, no_new_privs, rlimits, Landlock, seccomp last, exec),
// then the ways a parent starts it. Reached from the namespace rung's PID 1
// (launch/namespaces_rung.cpp) and the Landlock rung's supervisor
// (launch/landlock_rung.cpp); nsrun's side of what follows is supervision
// (launch/supervise.cpp).
#include "launch/command.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "landlock/kernel.hpp"
#include "ns/channel.hpp"
#include "ns/credentials.hpp"
#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "ns/rlimits.hpp"
#include "policy/env.hpp"
#include "seccomp/notify.hpp"
#include "sys/argv.hpp"

namespace nsrun {

// Child side. Each function below runs after clone and reports through
// `channel`; none returns to the caller's code on failure.

[[noreturn]] void die(int channel, const Error& e) {
  send_error(channel, e);
  ::_exit(e.exit_code());
}

namespace {

// Marks every inherited fd close-on-exec instead of closing it, so the
// channel (already CLOEXEC) keeps working until the exec succeeds, then
// lets the passed ones through.
Result<void> seal_fds(const std::vector<int>& pass) {
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return fail(sys_error(Operation::close_range));
  for (int fd : pass)
    if (::fcntl(fd, F_SETFD, 0) != 0) return fail(sys_error(Operation::pass_fd, std::to_string(fd)));
  return {};
}

}  // namespace

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

// The command's filter, refusals sent to nsrun when a notifying variant
// exists: the listener goes to nsrun at once and is closed here, so the
// command never holds it. Where the kernel (or an outer sandbox, whose
// filter refuses listeners) says no, the plain filter: the same refusals,
// unobserved.
Result<void> load_command_filter(const LaunchSpec& p, const Attempt& a, const BpfProgram& plain, bool landlock) {
  // --watch-writes. The kernel allows one listener per task (a second
  // SECCOMP_FILTER_FLAG_NEW_LISTENER in the chain is EBUSY), so the watch's
  // rules are in the notifying variant when there is one, and nsrun tells
  // a refusal from an observation by the call's registers
  // (watch_continues()). Only without a variant (--seccomp log, none) is
  // the watch a filter of its own, loaded first: the plain filter's errnos
  // outrank its notifications. Where no listener can be had, the run goes
  // on unwatched and the report says "unobserved". On the Landlock rung
  // nsrun learns the private TMPDIR first (a writable place there).
  if (p.write_scope && a.words_fd >= 0 && landlock)
    if (const char* tmpdir = env_lookup(command_env(p, a), "TMPDIR"); tmpdir != nullptr) send_private_tmpdir(a.words_fd, tmpdir);
  if (!p.watch_writes.empty() && a.words_fd >= 0)
    if (auto listener = load_filter_listening(p.watch_writes)) send_watch_listener(a.words_fd, listener->get());
  if (!p.seccomp_notify.empty() && a.words_fd >= 0) {
    auto listener = load_filter_listening(p.seccomp_notify);
    if (listener) {
      send_listener(a.words_fd, listener->get());
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
Error try_exec(const LaunchSpec& p, const std::vector<std::string>& env) {
  std::vector<char*> argv = c_strings(p.argv);
  std::vector<char*> envp = c_strings(env);
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

[[noreturn]] void start_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                                const CommandSetup& setup) {
  const bool landlock = setup.landlock_ruleset >= 0;
  if (p.plan.reaper || landlock) a.timeline.mark("fork");
  reset_signals(original_mask);
  const bool session = p.new_session < 0 ? ::isatty(STDIN_FILENO) == 0 : p.new_session == 1;
  if (session && ::setsid() < 0) die(channel, sys_error(Operation::setsid));
  if (!setup.confined_by_parent)
    if (auto r = enter_directory(p.plan); !r) die(channel, r.error());
  if (auto r = seal_fds(p.pass_fds); !r) die(channel, r.error());
  if (!setup.confined_by_parent) {
    if (auto r = set_capabilities(a.keep_caps, p.cap_grant_inheritable); !r) die(channel, r.error());
    if (auto r = set_no_new_privs(); !r) die(channel, r.error());
  }
  if (auto r = apply_rlimits(p.limits.rlimits); !r) die(channel, r.error());
  a.timeline.mark("credentials");
  if (landlock) {
    if (auto r = landlock::restrict_self(setup.landlock_ruleset); !r) die(channel, r.error());
    a.timeline.mark("landlock");
  }
  // Last: from here on the command's own restrictions apply to us too.
  if (!setup.confined_by_parent)
    if (auto r = load_command_filter(p, a, setup.filter != nullptr ? *setup.filter : p.seccomp, landlock); !r)
      die(channel, r.error());
  for (const auto& program : p.extra_seccomp)
    if (auto r = load_filter(program); !r) die(channel, r.error());
  // The check tries for real: if it succeeds, the command never runs.
  if (p.assert_userns_disabled && ::unshare(CLONE_NEWUSER) == 0)
    die(channel, sys_error(Operation::assert_userns_disabled, {}, 0, "creating a user namespace still works"));
  a.timeline.mark("seccomp");
  send_timeline(channel, a.timeline.encode());
  if (p.stop_before_exec) ::_exit(0);
  die(channel, try_exec(p, command_env(p, a)));
}

namespace {

struct CommandStart {
  int channel;
  const LaunchSpec* p;
  Attempt* a;
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
  start_command(start->channel, *start->p, *start->a, *start->original_mask, setup);
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
pid_t spawn_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                    const CommandSetup& setup) {
  constexpr std::size_t stack_size = 256 * 1024;
  void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  CommandStart start{channel, &p, &a, &original_mask, &setup};
  const pid_t pid = ::clone(command_main, static_cast<char*>(stack) + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  const int err = errno;
  ::munmap(stack, stack_size);
  errno = err;
  return pid;
}

// The command when PID 1 re-execs itself (launch/pid1_exec.hpp): a plain
// fork, since PID 1 must run on (exec) while the command waits, which the
// shared-memory start above cannot do. It waits before anything else for
// one byte on the pipe whose other end `release` gets; end of file (PID 1
// gone) ends it.
pid_t spawn_held_command(int channel, const LaunchSpec& p, Attempt& a, const sigset_t& original_mask,
                         const CommandSetup& setup, Fd& release) {
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
  CommandStart start{channel, &p, &a, &original_mask, &setup};
  command_main(&start);
  ::_exit(125);
}

void arm_die_with_parent(int channel) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die(channel, sys_error(Operation::die_with_parent));
  // The parent may have died before the prctl: its end of the channel is
  // then closed and the socket reports a hang-up.
  struct pollfd pfd{channel, POLLIN, 0};
  if (::poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP)) ::_exit(125);
}

}  // namespace nsrun
