#include "launch/landlock_rung.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>

#include <fmt/core.h>

#include "landlock/abi.hpp"
#include "landlock/kernel.hpp"
#include "launch/cgroup_account.hpp"
#include "launch/home_fallback.hpp"
#include "launch/protect_restore.hpp"
#include "launch/supervise.hpp"
#include "launch/command.hpp"
#include "net/connector.hpp"
#include "policy/env.hpp"
#include "ns/cgroup.hpp"
#include "ns/channel.hpp"
#include "ns/outcome.hpp"
#include "ns/credentials.hpp"
#include "ns/reaper.hpp"
#include "policy/gitdirs.hpp"
#include "policy/protect.hpp"
#include "seccomp/filter.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::landlock {

namespace {

// Where the private temporary directory goes: the caller's TMPDIR (when it
// is an absolute directory) or /tmp.
std::string tmpdir_base() {
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && t[0] == '/') {
    struct stat st{};
    if (::stat(t, &st) == 0 && S_ISDIR(st.st_mode)) return t;
  }
  return "/tmp";
}

constexpr std::string_view tmpdir_prefix = "/nsrun-";
constexpr std::size_t tmpdir_random = 12;  // characters after the prefix

// The private temporary directory's name, unpredictable (71 random bits:
// no other process can have made it before us, nor guess it to make it
// first). Named before it exists so that nsrun can be told first: mkdtemp
// would create and name it in one call, and a supervisor killed between
// that call and the telling would leave a directory nobody knows of (the
// set-up kills of tools/soak.sh found one).
Result<std::string> tmpdir_name() {
  static constexpr std::string_view chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[tmpdir_random];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return fail(sys_error("getrandom", "TMPDIR name"));
  std::string name = tmpdir_base() + std::string(tmpdir_prefix);
  for (unsigned char b : bytes) name += chars[b % chars.size()];
  return name;
}

// Best effort, after every process of the run is gone. Directories the
// command made unreadable are opened up first so the removal can descend.
void remove_tree(const std::string& dir) {
  // The usual case, a command that left nothing behind: one rmdir instead
  // of two walks of the tree (about twenty system calls).
  // ENOENT: the supervisor removed it already.
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
  ::nftw(dir.c_str(), [](const char* p, const struct stat* st, int type, FTW*) {
    if (type == FTW_D || type == FTW_DNR) ::chmod(p, (st->st_mode & 07777) | 0700);
    return 0;
  }, 16, FTW_PHYS | FTW_MOUNT);
  const int rc = ::nftw(dir.c_str(), [](const char* p, const struct stat*, int, FTW*) {
    return ::remove(p) == 0 || errno == ENOENT ? 0 : 1;
  }, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  if (rc != 0) fmt::print(stderr, "nsrun: warning: could not remove the private TMPDIR {}\n", printable(dir));
}

// (pid, parent) of every process /proc lists now.
std::vector<std::pair<pid_t, pid_t>> process_links() {
  std::vector<std::pair<pid_t, pid_t>> links;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return links;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
    char buf[512];
    const ssize_t n = fd ? ::read(fd.get(), buf, sizeof buf) : -1;
    if (n > 0)
      links.emplace_back(static_cast<pid_t>(pid), parent_in_stat(std::string_view(buf, static_cast<std::size_t>(n))));
  }
  ::closedir(proc);
  return links;
}

// Without a PID namespace nothing ends the command's background processes
// for us: nsrun is their subreaper, so every one of them is, or becomes, our
// child. Kill and reap until none is left. One by one: a command that forks
// faster than this loop kills (a fork bomb) can keep it going (nsrun's own
// last line, and the supervisor's without a signal scope).
void end_leftovers() {
  const pid_t self = ::getpid();
  while (true) {
    // The usual case, no process left, costs one call and no /proc scan.
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, WNOHANG);
    if (reaped < 0 && errno == ECHILD) return;
    if (reaped > 0) continue;
    for (const auto& [pid, parent] : process_links())
      if (parent == self) ::kill(pid, SIGKILL);
    if (::waitpid(-1, &status, 0) < 0 && errno == ECHILD) return;
  }
}

// Set once the supervisor is in its signal scope (landlock::
// enter_signal_scope()): from then on, and only then, kill(-1) reaches
// the sandbox's processes and nothing else.
bool in_signal_scope = false;

// The supervisor in its signal scope: kill(-1, SIGKILL) ends every process
// of the sandbox in one call, however fast it forks. The kernel sends it
// while walking the task list under tasklist_lock, which fork takes to add
// a child: a fork either finished before (the child is on the list and
// killed) or sees the fatal signal pending and is undone. Every process of
// the sandbox descends from us, its subreaper, so they all end up reaped
// here; the kill is repeated whenever there is nothing left to reap yet.
void end_scope() {
  while (true) {
    ::kill(-1, SIGKILL);
    int status = 0;
    pid_t reaped;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return;
    if (::waitpid(-1, &status, 0) < 0 && errno == ECHILD) return;
  }
}

void end_everything() {
  if (in_signal_scope) end_scope();
  else end_leftovers();
}

void set_env(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  const std::string prefix = fmt::format("{}=", name);
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
  env.push_back(prefix + std::string(value));
}

// Second line: the TMPDIR the supervisor named (it names it before making
// it), if it is there. Only exactly one whole line naming a direct child
// of the TMPDIR base with nsrun's prefix is taken: a short or foreign name,
// or a name taken back by a second line, removes nothing.
void remove_reported_tmpdir(int name_in) {
  char buf[PIPE_BUF + 1];
  std::size_t got = 0;
  while (got < sizeof buf) {
    const ssize_t n = ::read(name_in, buf + got, sizeof buf - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  std::string_view name(buf, got);
  if (name.empty() || name.back() != '\n') return;
  name.remove_suffix(1);
  const std::string prefix = tmpdir_base() + std::string(tmpdir_prefix);
  if (!name.starts_with(prefix) || name.size() != prefix.size() + tmpdir_random ||
      name.substr(prefix.size()).find('/') != std::string_view::npos)
    return;
  remove_tree(std::string(name));
}

// `sig` to every process of the sandbox: without a PID namespace that is
// every process of the supervisor's signal scope (kill(-1) from inside it),
// or without one, every descendant of the supervisor (it is their
// subreaper, so a daemonised one is still below it), found by walking
// /proc's parent links from here.
void signal_sandbox(int sig) {
  if (in_signal_scope) {
    ::kill(-1, sig);
    return;
  }
  const pid_t self = ::getpid();
  const auto links = process_links();
  std::vector<pid_t> below{self};
  for (std::size_t i = 0; i < below.size(); ++i)
    for (const auto& [pid, parent] : links)
      if (parent == below[i] && std::find(below.begin(), below.end(), pid) == below.end()) below.push_back(pid);
  for (std::size_t i = 1; i < below.size(); ++i) ::kill(below[i], sig);
}

// nsrun's timer asks the supervisor to end the sandbox, twice: SIGTERM
// first, SIGKILL at the kill-after (the wait for the command then ends,
// and end_everything() reaps).
void end_sandbox() {
  static int asked = 0;
  signal_sandbox(++asked == 1 ? SIGTERM : SIGKILL);
}

// The command has begun to exit after a signal was passed on
// (WaitOptions::command_exiting): the rest of the sandbox ends now, as it
// would at the command's end; end_everything() reaps it afterwards.
void kill_sandbox() { signal_sandbox(SIGKILL); }

// The supervisor's parent-death signal: a real-time one, outside the set
// forwarded to the command, so it cannot be confused with a forwarded
// SIGHUP and is queued (blocked) until the wait loop takes it.
int parent_death_signal() { return SIGRTMIN + 2; }

// The supervisor: nsrun's own code in a forked process (its own memory;
// no exec), between nsrun and the command. It exists so that nothing of
// the run outlives nsrun however nsrun ends, SIGKILL included: it is the
// subreaper of every descendant of the command (a double-forked daemon in
// a new session too), gets a signal when nsrun dies, and then, or when the
// command exits, kills and reaps every descendant (all at once from its
// signal scope, kernel ABI 6: end_scope()) and removes the private TMPDIR.
// nsrun keeps the channel and the exit status: the supervisor exits with
// the command's status (code, or 128+N), which nsrun reads as its own
// child's. nsrun stays a subreaper as well, for a supervisor that
// is itself killed.
//
// The supervisor makes the private TMPDIR itself, once it is armed, so a
// nsrun killed at any instant leaves none behind; it tells nsrun the name
// before making it (one write on `tmpdir_out`), so that nsrun can still
// remove it if the supervisor is killed at any instant.
//
// nsrun adds the ruleset's rules while the supervisor starts (the same
// kernel object through nsrun's copy of the fd) and sends one byte, 'R',
// once every rule is in: the supervisor spawns the command only after it
// has read that byte. End of file or anything else (nsrun failed a rule,
// or died) and the command never starts: the supervisor removes its
// TMPDIR and exits.
[[noreturn]] void supervisor(pid_t nsrun_pid, int channel, int tmpdir_out, int ruleset_complete, const LaunchSpec& p,
                             Attempt& a, const sigset_t& original_mask, const CommandSetup& setup,
                             const Ruleset& ruleset, bool signal_scope) {
  // Orphans of the command come to us, so none outlives the run.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const int death = parent_death_signal();
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, death);
  // A write to a dead nsrun's pipe must fail with EPIPE (and clean up), not
  // kill us. Blocked, not ignored: an ignored SIGPIPE would be inherited
  // across the command's exec; the command gets the original mask back.
  sigaddset(&block, SIGPIPE);
  sigprocmask(SIG_BLOCK, &block, nullptr);
  if (p.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, death, 0, 0, 0);
    // nsrun may have died before the prctl: then nothing will signal us.
    if (::getppid() != nsrun_pid) ::_exit(125);
  }
  auto named = tmpdir_name();
  if (!named) {
    send_error(channel, named.error());
    ::_exit(125);
  }
  const std::string& tmpdir = *named;
  // Told first, made second: killed in between, nsrun finds nothing to
  // remove. One write below PIPE_BUF is atomic: nsrun reads the whole name
  // or none.
  const std::string line = tmpdir + "\n";
  if (line.size() > PIPE_BUF || ::write(tmpdir_out, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    send_error(channel, sys_error("tell nsrun the TMPDIR", tmpdir, line.size() > PIPE_BUF ? ENAMETOOLONG : errno));
    ::_exit(125);
  }
  // mkdir never follows a symlink in the last component (EEXIST instead).
  // Not made: a second line takes the name back (nsrun then removes
  // nothing; the name is not ours).
  if (::mkdir(tmpdir.c_str(), 0700) != 0) {
    Error e = sys_error("mkdir", tmpdir);
    (void)!::write(tmpdir_out, "-\n", 2);
    send_error(channel, e);
    ::_exit(125);
  }
  ::close(tmpdir_out);
  char complete = 0;
  ssize_t got;
  do got = ::recv(ruleset_complete, &complete, 1, 0);
  while (got < 0 && errno == EINTR);
  if (got != 1 || complete != 'R') {
    remove_tree(tmpdir);
    ::_exit(125);
  }
  ::close(ruleset_complete);
  if (auto r = add_path_rule(setup.landlock_ruleset, tmpdir_rule(ruleset, tmpdir)); !r) {
    send_error(channel, r.error());
    remove_tree(tmpdir);
    ::_exit(125);
  }
  a.env = p.env;
  set_env(*a.env, "TMPDIR", tmpdir);
  // Last before the command: the command's domain is nested in this one.
  if (signal_scope) {
    if (auto r = enter_signal_scope(nsrun_pid); !r) {
      send_error(channel, r.error());
      remove_tree(tmpdir);
      ::_exit(125);
    }
    in_signal_scope = true;
  }
  a.timeline.mark("supervisor");
  const pid_t command = spawn_command(channel, p, a, original_mask, setup);
  if (command < 0) {
    send_error(channel, sys_error(Operation::fork, "command"));
    remove_tree(tmpdir);
    ::_exit(125);
  }
  // Nothing of nsrun's is needed from here on: the channel, the ruleset,
  // status fds and the caller's fds stay with nsrun and the command; only
  // the socket for the command's last words.
  if (a.words_fd >= 3) {
    ::close_range(3, static_cast<unsigned>(a.words_fd) - 1, 0);
    ::close_range(static_cast<unsigned>(a.words_fd) + 1, ~0U, 0);
  } else {
    ::close_range(3, ~0U, 0);
  }
  int raw = 0;
  const int code = wait_command(command, WaitOptions{death, end_sandbox, kill_sandbox}, &raw);
  if (code >= 0) send_final_status(a.words_fd, raw, -1);
  // The command exited (its descendants may live on) or nsrun died.
  end_everything();
  remove_tree(tmpdir);
  ::_exit(code < 0 ? 125 : code);
}


}  // namespace

pid_t parent_in_stat(std::string_view stat) {
  const auto ppid = number_in_stat(stat, 4);
  return ppid && *ppid <= static_cast<unsigned long>(std::numeric_limits<pid_t>::max()) ? static_cast<pid_t>(*ppid) : -1;
}

std::vector<std::string> terminals() {
  std::vector<std::string> out;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) == 0) continue;
    char name[256];
    if (::ttyname_r(fd, name, sizeof name) != 0) continue;
    if (std::find(out.begin(), out.end(), std::string_view(name)) == out.end()) out.emplace_back(name);
  }
  return out;
}

namespace {

// The entries of each directory above a hidden credential (Inputs::listings),
// symlinks left out. A symlink needs no rule of its own: Landlock checks the
// path the kernel resolved, never the names on the way, so /lib -> usr/lib
// is read through /usr's rule, and a link to (or into, or above) a hidden
// path reaches only what that path's own rules allow. Leaving them out
// also spares resolving each one (realpath: a readlink per component) and
// the rule that would have been put on its target. The type comes from
// readdir's d_type (a directory's name gets a trailing '/', so its rule
// needs no fstat either); only a file system that does not fill it in
// costs an fstatat. tests/integration/startup_test.cpp holds the promise through
// links of each kind.
std::map<std::string, std::vector<std::string>> hidden_listings(const std::vector<std::string>& hidden) {
  std::map<std::string, std::vector<std::string>> out;
  // getdents64 on a plain open: opendir/fdopendir would add an fstat and
  // two fcntls per directory.
  alignas(dirent64) char buf[8192];
  for (const auto& dir : hidden_ancestors(hidden)) {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) continue;
    std::vector<std::string> names;
    bool listed = true;
    while (true) {
      const ssize_t n = ::getdents64(fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) listed = false;
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const dirent64*>(buf + at);
        at += e->d_reclen;
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
          struct stat st{};
          if (::fstatat(fd.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_LNK) continue;
        std::string& listed_name = names.emplace_back(name);
        if (type == DT_DIR) listed_name += '/';
      }
    }
    // A listing cut short is no listing: make_ruleset() then refuses,
    // rather than leave an entry without its rule (or its hiding).
    if (listed) out.emplace(dir, std::move(names));
  }
  return out;
}

// The protected paths the namespace rung keeps with mounts, which this
// rung cannot: it keeps them by snapshot and restore instead
// (launch/protect_restore.hpp).
// The launch's own scan, made just before for the same roots and set, is
// the same walk: taken as it is (23 system calls fewer with the default
// set).
std::vector<std::pair<std::string, std::string>> protected_present(const Policy& policy, const ProtectWatch* scanned) {
  std::vector<ProtectedPathState> fresh;
  const bool same = scanned != nullptr && scanned->roots == writable_roots(policy) && scanned->set == protected_paths(policy);
  if (!same) fresh = scan_protected(policy);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& st : same ? scanned->before : fresh)
    if (kept_by_snapshot(st)) out.emplace_back(st.root, st.path);
  return out;
}

}  // namespace

LaunchSpec rung_spec(const LaunchSpec& base, RungLimits limits, const std::string& redirect,
                     std::optional<uint16_t> proxy_port) {
  LaunchSpec p = base;
  apply_limits(p, std::move(limits));
  if (!redirect.empty()) redirect_caches(p.env, redirect);
  if (p.egress && proxy_port) {
    egress::retarget_proxy_environment(p.env, *proxy_port);
    p.egress->announced_peers_only = true;
    p.require_listener = true;
  }
  return p;
}

Readiness assess(const Policy& policy, const ProtectWatch* scanned) {
  Readiness r;
  auto abi = kernel_abi();
  if (!abi) {
    r.reason = "landlock-missing";
    r.detail = abi.error().message();
    return r;
  }
  r.abi = *abi;
  r.signal_scope = (scopes(*abi) & scope::signal) != 0;
  // A copy-on-write workspace needs an overlay, which this rung has not;
  // writing the real workspace instead would break the promise.
  if (policy.workspace_mode == WorkspaceMode::cow && policy.mode == Mode::workspace_write) {
    r.reason = "landlock-cannot-express";
    r.detail = "--workspace-mode cow needs an overlay (the namespace rung)";
    return r;
  }
  // --network proxy: nsrun answers the command's connect() through a
  // seccomp listener (net/connector.hpp); Landlock's part needs ABI 4,
  // which make_ruleset() checks.
  if (policy.network == Network::proxy) {
    if (!egress::user_notification_available()) {
      r.reason = "landlock-cannot-express";
      r.detail = "--network proxy (the kernel has no seccomp user notification to answer connect())";
      return r;
    }
    // Its check is a notified call before the exec, while nsrun waits for
    // the exec: with every connect() notified too, nsrun would wait on itself.
    if (policy.assert_userns_disabled) {
      r.reason = "landlock-cannot-express";
      r.detail = "--network proxy with --assert-userns-disabled";
      return r;
    }
  }
  // A copy-on-write home has no overlay here: its redirect directory is a
  // writable root instead, and run() points the caches at it.
  // Without a layer made (nsrun probe, a layer that could not be made) it
  // is the home as the read-only root shows it, and nothing redirected.
  std::optional<Policy> redirected;
  if (policy.home == HomeMode::cow) {
    redirected = policy;
    redirected->home = HomeMode::ro;  // no overlay: the home as the read-only root shows it
    if (!policy.layers.redirect.empty()) redirected->writable.push_back(policy.layers.redirect);
    // The other workspaces' home layers are under the same base, readable
    // in a read-only home: what a run wrote into its cow home (an ssh key
    // made there, a token from `npm login`) was read by any other
    // workspace's command on this rung. The
    // base is hidden as a credential is (and, like them, shown with
    // --hide-defaults none); the redirect directory, a writable root below
    // it, keeps its own rule.
    if (std::string base = existing_home_base(policy); policy.hide_defaults && !base.empty())
      redirected->hidden_paths.push_back(base + "/");
  }
  const Policy& effective = redirected ? *redirected : policy;
  // No rule can keep them (make_ruleset() would refuse them): run()
  // snapshots them before the command and restores them after.
  r.snapshot_paths = protected_present(effective, scanned);
  Inputs inputs{terminals(), {}, {}, {}};
  if (!effective.hidden_paths.empty()) inputs.listings = hidden_listings(effective.hidden_paths);
  auto ruleset = make_ruleset(effective, *abi, inputs);
  if (!ruleset) {
    r.reason = "landlock-cannot-express";
    r.detail = ruleset.error().item;
    return r;
  }
  // Without a network namespace, --network none is the filter's to keep.
  auto filter = compile_filter(policy, FilterRung::landlock);
  if (!filter) {
    r.reason = "failed";
    r.detail = filter.error().message();
    return r;
  }
  r.ruleset = std::move(*ruleset);
  r.filter = filter_key(policy, FilterRung::landlock);
  r.seccomp = std::move(*filter);
  // The limits again, for this rung: what an rlimit can keep differs
  // without a user namespace, and there is no tmpfs to size. A limit it
  // cannot keep is not a reason the rung is unusable: run() refuses with it.
  auto limits = rung_limits(policy, FilterRung::landlock);
  if (limits) r.limits = std::move(*limits);
  else r.limits_error = limits.error();
  r.redirect = policy.layers.redirect;
  r.redirect_stated = policy.home_given;
  return r;
}

LaunchOutcome run(const LaunchSpec& base, Attempt& a, Readiness ready) {
  LaunchOutcome out;
  if (ready.limits_error) {
    out.error = *ready.limits_error;
    out.timeline = a.timeline;
    return out;
  }
  if (!ready.redirect.empty() && ready.redirect_stated)
    fmt::print(stderr, "nsrun: --home cow: no overlay on the Landlock rung; the home stays read-only and the "
                       "well-known caches go to {}\n",
               printable(ready.redirect));
  // --network proxy: the proxy listens on the host's loopback,
  // on a port the kernel picks, and serves only the sockets nsrun makes
  // when it answers the command's connect() (net/connector.hpp).
  Fd proxy_listener;
  std::shared_ptr<egress::Connector> connector;
  std::optional<uint16_t> proxy_port;
  if (base.egress) {
    uint16_t port = 0;
    auto listener = egress::host_listener(port);
    if (!listener) {
      out.error = listener.error();
      out.timeline = a.timeline;
      return out;
    }
    proxy_listener = std::move(*listener);
    proxy_port = port;
    connector = std::make_shared<egress::Connector>(port);
    a.notify_handler = [connector](int l, const seccomp_notif& call) { return connector->handle(l, call); };
  }
  // This rung's spec, made before its fork and read only from here on.
  const LaunchSpec p = rung_spec(base, std::move(ready.limits), ready.redirect, proxy_port);
  // The ruleset's rules are added after the fork, while the supervisor
  // starts and makes the TMPDIR: the two overlap on
  // two CPUs, and the command waits for both (supervisor()).
  Result<Fd> fd = open_ruleset(ready.ruleset);
  if (!fd) {
    out.error = fd.error();
    out.timeline = a.timeline;
    return out;
  }

  // Before the fork: the command must not start before its copy is taken.
  auto snapshot = snapshot_protected(ready.snapshot_paths);
  if (!snapshot) {
    out.error = snapshot.error();
    out.error->detail = fmt::format("{}{}the protected set cannot be restored after the run on the Landlock rung; "
                                    "--unprotect the path or use the namespace rung",
                                    out.error->detail, out.error->detail.empty() ? "" : "; ");
    out.timeline = a.timeline;
    return out;
  }
  auto channel = make_channel();
  if (!channel) {
    out.error = channel.error();
    out.timeline = a.timeline;
    return out;
  }
  int names[2];
  if (::pipe2(names, O_CLOEXEC) != 0) {
    out.error = sys_error("pipe", "TMPDIR name");
    out.timeline = a.timeline;
    return out;
  }
  Fd name_in(names[0]);
  Fd name_out(names[1]);
  // nsrun -> supervisor: 'R' once every rule is in. A socket, so that a
  // supervisor already gone fails the send (MSG_NOSIGNAL) instead of
  // raising SIGPIPE in nsrun.
  auto complete = make_channel();
  if (!complete) {
    out.error = complete.error();
    out.timeline = a.timeline;
    return out;
  }
  std::optional<ChannelPair> words;
  if (p.observe) {
    auto pair = make_channel();
    if (!pair) {
      out.error = pair.error();
      out.timeline = a.timeline;
      return out;
    }
    words = std::move(*pair);
    a.words_fd = words->child.get();
    a.words_parent_fd = words->parent.get();
  }
  // A second line behind the supervisor: if it is killed, the command's
  // processes come to nsrun, which ends them as before.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const sigset_t original_mask = block_for_launch();
  CommandSetup setup;
  setup.landlock_ruleset = fd->get();
  setup.filter = &ready.seccomp;
  const pid_t nsrun_pid = ::getpid();
  // The sandbox's cgroup (v2, delegated): the supervisor starts in it, so
  // every process of the command does; cgroup.kill ends what is left.
  std::optional<SandboxCgroup> cgroup;
  if (p.limits.use_cgroup) {
    auto made = SandboxCgroup::make(p.cgroup_base, nsrun_pid, p.limits);
    if (!made) {
      out.error = made.error();
      sigprocmask(SIG_SETMASK, &original_mask, nullptr);
      out.timeline = a.timeline;
      return out;
    }
    cgroup = std::move(*made);
  }
  auto drop_cgroup = [&] {
    if (cgroup)
      if (auto r = cgroup->remove(); !r) fmt::print(stderr, "nsrun: {}\n", r.error().message());
  };
  const pid_t child = cgroup ? sys::clone_fork_into(0, cgroup->fd()) : ::fork();
  if (child < 0) {
    out.error = sys_error(Operation::fork, "supervisor");
    drop_cgroup();
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    out.timeline = a.timeline;
    return out;
  }
  if (child == 0) {
    channel->parent.reset();
    name_in.reset();
    proxy_listener.reset();
    complete->parent.reset();
    if (words) words->parent.reset();
    supervisor(nsrun_pid, channel->child.get(), name_out.get(), complete->child.get(), p, a, original_mask, setup,
               ready.ruleset, ready.signal_scope);
  }
  channel->child.reset();
  name_out.reset();
  complete->child.reset();
  if (words) words->child.reset();
  a.words_fd = -1;
  // Everything but the private TMPDIR, which the supervisor adds.
  auto added = add_rules(fd->get(), ready.ruleset);
  a.timeline.mark("landlock-plan");
  fd->reset();
  if (!added) {
    // No 'R': the supervisor removes its TMPDIR and exits, the command
    // never started.
    complete->parent.reset();
    ::waitpid(child, nullptr, 0);
    end_leftovers();
    drop_cgroup();
    remove_reported_tmpdir(name_in.get());
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    out.error = added.error();
    out.timeline = a.timeline;
    return out;
  }
  // A supervisor already gone (its set-up failed) is heard of on the
  // channel, below.
  (void)::send(complete->parent.get(), "R", 1, MSG_NOSIGNAL);
  complete->parent.reset();
  // As on the namespace rung: its process starts from nsrun's wait loop at
  // the first connection (supervise()), never before the fork.
  std::unique_ptr<egress::Egress> proxy;
  if (proxy_listener) {
    auto started = egress::Egress::start_on(*p.egress, std::move(proxy_listener));
    if (!started) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      end_leftovers();
      drop_cgroup();
      out.verdict.protected_restored = restore_protected(*snapshot, quarantine_token());
      remove_reported_tmpdir(name_in.get());
      sigprocmask(SIG_SETMASK, &original_mask, nullptr);
      out.error = started.error();
      out.timeline = a.timeline;
      return out;
    }
    proxy = std::move(*started);
    connector->on_decision([e = proxy.get()](egress::Decision d) { e->record(std::move(d)); });
    connector->on_source([e = proxy.get()](uint16_t port, bool made) { e->announce(port, made); });
  }
  a.child_is_supervisor = true;
  out = supervise(child, channel->parent.get(), p, a, original_mask, "the supervisor", proxy.get());
  if (proxy) a.egress_decisions = proxy->stop();
  // The supervisor has ended the command's processes and removed the
  // TMPDIR; only if it was killed itself is anything left, now ours.
  end_leftovers();
  if (cgroup) account_cgroup(cgroup->events(), "memory.peak", p.limits, out.verdict);
  drop_cgroup();
  // Every process of the command is dead: nothing can race the restore.
  if (!snapshot->roots.empty()) out.verdict.protected_restored = restore_protected(*snapshot, quarantine_token());
  remove_reported_tmpdir(name_in.get());
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  return out;
}

}  // namespace nsrun::landlock
