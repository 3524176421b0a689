#include "launch/ladder.hpp"

#include "launch/home_fallback.hpp"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "launch/home_fallback.hpp"
#include "launch/landlock_rung.hpp"
#include "launch/protect_restore.hpp"
#include "policy/json.hpp"
#include "launch/apparmor.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

std::string rung_line(const RungReport& r) {
  if (r.detail.empty()) return fmt::format("{}: {}", r.name, r.reason);
  return fmt::format("{}: {} ({})", r.name, r.reason, r.detail);
}

// One line naming each rung and why it was not usable.
Error no_sandbox(const RungReport& ns, const RungReport& ll) {
  Error e{"no sandbox available", 0, {}, fmt::format("{}; {}", rung_line(ns), rung_line(ll))};
  e.phase = Phase::choose_rung;
  return e;
}

struct NamespaceVerdict {
  std::string reason;  // empty: usable
  std::string detail;
};

// Fills reason and detail for a namespace-rung failure that the host caused.
NamespaceVerdict verdict_for(const Error& e, ProcMode proc, uint64_t clone_flags) {
  NamespaceVerdict v;
  v.reason = classify_namespace_failure(e, proc);
  if (v.reason == clone_refused) v.reason = diagnose_clone(clone_flags, try_clone);
  v.detail = e.message();
  if (v.reason == reason::proc_masked) v.detail += fmt::format("; {}", proc_masked_hint());
  const bool made_userns = (clone_flags & CLONE_NEWUSER) != 0;
  if (userns_capabilities_refused(e, made_userns, v.reason))
    if (auto hint = userns_restriction_hint(e, made_userns, v.reason, read_userns_restriction()); !hint.empty())
      v.detail += fmt::format("; {}", hint);
  return v;
}

// The namespace rung as `nsrun probe` sees it: the launch itself (the
// same clone, id maps, mounts, /proc, confinement and the command's start),
// stopped where the command would exec. `p` is a copy, spent here.
NamespaceVerdict probe_namespaces(Prepared p) {
  p.stop_before_exec = true;
  LaunchOutcome o = run_namespaces(p);
  if (!o.error) {
    if (o.exit_code == 0) return {};
    return {std::string(reason::failed), fmt::format("the launch ended with status {} before the exec", o.exit_code)};
  }
  NamespaceVerdict v = verdict_for(*o.error, p.plan.proc, p.plan.clone_flags);
  if (v.reason.empty()) v.reason = reason::failed;
  return v;
}

// The same for the Landlock rung, once assess() found it expressible: the
// supervisor, the private TMPDIR and the command's confinement, up to the
// exec.
void probe_landlock(Prepared p, landlock::Readiness& ready) {
  p.stop_before_exec = true;
  LaunchOutcome o = landlock::run(p, ready);
  if (!o.error && o.exit_code == 0) return;
  ready.reason = reason::failed;
  ready.detail = o.error ? o.error->message() : fmt::format("the launch ended with status {} before the exec", o.exit_code);
}

void note_landlock(LaunchReport& report, const landlock::Readiness& ready) {
  report.landlock_abi = ready.abi;
  if (!ready.reason.empty()) return;
  report.landlock_enforcement = landlock::name(ready.ruleset.enforcement);
  report.landlock_dropped = ready.ruleset.dropped;
  report.landlock_refused = ready.ruleset.refused;
}

}  // namespace

std::string classify_namespace_failure(const Error& e, ProcMode proc) {
  const int err = e.err;
  // Every operation is named, and none by a default: a new one does not
  // compile until someone decides whether its failure moves the ladder.
  switch (e.op) {
    case Operation::clone:
      if (err == EPERM || err == EINVAL || err == ENOSPC || err == EUSERS) return std::string(clone_refused);
      return {};
    case Operation::write_uid_map:
    case Operation::write_gid_map:
    case Operation::write_setgroups:
      if (err == EPERM || err == EACCES || err == EINVAL) return std::string(reason::idmap_denied);
      return {};
    case Operation::mount_layer:
      // The copy-on-write layers need rootless overlayfs (kernel 5.11+, an
      // upper file system with user xattrs); without it they refuse here.
      // EROFS: a writable layer the kernel would only mount read-only
      // (mount/executor.cpp).
      if (err == EPERM || err == EINVAL || err == ENODEV || err == EOPNOTSUPP || err == EROFS)
        return std::string(reason::overlay_unavailable);
      return {};
    case Operation::mount_proc:
      // A bind of /proc is never a retry after this: the fresh mount was
      // the attempt, and its refusal is a reason to move on, not to weaken.
      if (err == EPERM && proc == ProcMode::fresh) return std::string(reason::proc_masked);
      return {};
    // The user's to see (a bad path, a missing command) or nsrun's own
    // failure: never a reason to move to another rung.
    case Operation::other:
    case Operation::find_source:
    case Operation::socketpair:
    case Operation::receive:
    case Operation::setns_userns:
    case Operation::setns_pidns:
    case Operation::setuid:
    case Operation::setgid:
    case Operation::sethostname:
    case Operation::die_with_parent:
    case Operation::info_fd:
    case Operation::json_status_fd:
    case Operation::userns_block_fd:
    case Operation::block_fd:
    case Operation::loopback_up:
    case Operation::lock_open:
    case Operation::lock_lock:
    case Operation::setns_userns2:
    case Operation::make_private:
    case Operation::open:
    case Operation::mkdir:
    case Operation::create:
    case Operation::dup:
    case Operation::chmod:
    case Operation::symlink:
    case Operation::write:
    case Operation::stat:
    case Operation::statfs:
    case Operation::bind:
    case Operation::bind_fd:
    case Operation::overlay_source:
    case Operation::mount_fs:
    case Operation::mount_bind:
    case Operation::mount_data:
    case Operation::mount_dest:
    case Operation::remount:
    case Operation::staging:
    case Operation::pivot_root:
    case Operation::chroot:
    case Operation::detach:
    case Operation::chdir:
    case Operation::read_capabilities:
    case Operation::drop_bounding:
    case Operation::clear_ambient:
    case Operation::drop_capabilities:
    case Operation::raise_ambient:
    case Operation::no_new_privs:
    case Operation::landlock_create:
    case Operation::landlock_rule:
    case Operation::landlock_add_rule:
    case Operation::landlock_restrict:
    case Operation::seccomp_load:
    case Operation::seccomp_read:
    case Operation::assert_userns_disabled:
    case Operation::close_range:
    case Operation::pass_fd:
    case Operation::setsid:
    case Operation::fork:
    case Operation::exec:
    case Operation::write_report:
      return {};
  }
  return {};
}

std::string diagnose_clone(uint64_t flags, const std::function<int(uint64_t)>& attempt) {
  static constexpr std::pair<uint64_t, std::string_view> each[] = {
      {CLONE_NEWNS, reason::mntns_denied},   {CLONE_NEWPID, reason::pidns_denied},
      {CLONE_NEWNET, reason::netns_denied},  {CLONE_NEWIPC, reason::ipcns_denied},
      {CLONE_NEWUTS, reason::utsns_denied},  {CLONE_NEWCGROUP, reason::cgroupns_denied},
  };
  const uint64_t user = flags & CLONE_NEWUSER;
  if (user != 0 && attempt(user) != 0) return std::string(reason::userns_denied);
  for (const auto& [bit, code] : each)
    if ((flags & bit) != 0 && attempt(user | bit) != 0) return std::string(code);
  // Each alone works; together they do not (a limit reached in between).
  return std::string(reason::ns_denied);
}

int try_clone(uint64_t flags) {
  const pid_t child = sys::clone_fork(flags);
  if (child < 0) return errno;
  if (child == 0) ::_exit(0);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return 0;
}

std::string_view proc_masked_hint() {
  return "the visible /proc is masked (other mounts cover parts of it, so the kernel refuses a fresh procfs "
         "as too revealing); on an allow-listed host set NSRUN_HOST_BACKEND=lakebox (or --host-backend "
         "lakebox), or choose --proc host-bind";
}

LadderOutcome run_ladder(const Policy& policy, Prepared& p, LaunchReport& report, const ProtectWatch* protect) {
  RungReport ns{"namespaces", false, {}, {}};
  RungReport ll{"landlock", false, {}, {}};
  auto done = [&](LadderOutcome o, const Timeline& timeline) {
    report.rungs = {ns, ll};
    report.phases = timeline.phases();
    return o;
  };

  if (policy.backend == Backend::landlock) {
    ns.reason = reason::not_tried;
    ns.detail = "--backend landlock";
  } else {
    LaunchOutcome o = run_namespaces(p);
    if (o.command_started || !o.error) {
      ns.used = o.command_started;
      ll.reason = reason::not_tried;
      report.rung = "namespaces";
      report.verdict = std::move(o.verdict);
      return done({o.exit_code, o.error, {}}, o.timeline);
    }
    // The home's overlay refused by this kernel or file system, before the
    // command ran: the same rung again with the caches redirected
    // (launch/home_fallback.hpp), never a rung down for it.
    if (home_overlay_refused(*o.error, p.plan, policy)) {
      const std::string why = fmt::format("no overlay for the home here ({}: {})", reason::overlay_unavailable,
                                          o.error->message());
      if (auto r = prepare_cache_redirect(p, policy, why); !r) return done({r.error().exit_code(), r.error(), {}}, p.timeline);
      LaunchOutcome again = run_namespaces(p);
      if (again.command_started || !again.error) {
        ns.used = again.command_started;
        ns.detail = why;
        ll.reason = reason::not_tried;
        report.rung = "namespaces";
        report.verdict = std::move(again.verdict);
        note_cache_redirect(report, policy.layers.redirect);
        return done({again.exit_code, again.error, {}}, again.timeline);
      }
      o = std::move(again);
    }
    NamespaceVerdict v = verdict_for(*o.error, p.plan.proc, p.plan.clone_flags);
    ns.detail = v.detail;
    if (v.reason.empty()) {
      // Not the host's refusal: the user's problem to see, never a reason
      // to move to another rung.
      ns.reason = reason::failed;
      ll.reason = reason::not_tried;
      report.rung = "none";
      return done({o.exit_code, o.error, {}}, o.timeline);
    }
    ns.reason = v.reason;
    p.timeline.mark("namespaces");
    if (policy.backend == Backend::namespaces) {
      ll.reason = reason::not_tried;
      ll.detail = "--backend namespaces";
      report.rung = "none";
      return done({125, no_sandbox(ns, ll), o.error}, p.timeline);
    }
  }

  landlock::Readiness ready = landlock::assess(policy, protect);
  note_landlock(report, ready);
  if (!ready.reason.empty()) {
    ll.reason = ready.reason;
    ll.detail = ready.detail;
    report.rung = "none";
    return done({125, no_sandbox(ns, ll), {}}, p.timeline);
  }
  LaunchOutcome o = landlock::run(p, std::move(ready));
  if (o.command_started) {
    ll.used = true;
    report.rung = "landlock";
    report.verdict = std::move(o.verdict);
    if (!policy.layers.redirect.empty()) note_cache_redirect(report, policy.layers.redirect);
    // No PID namespace here: the command sees the host's /proc, read-only
    // by the ruleset.
    report.proc = ProcMode::host_bind;
    return done({o.exit_code, o.error, {}}, o.timeline);
  }
  ll.reason = reason::failed;
  ll.detail = o.error ? o.error->message() : "";
  report.rung = "none";
  return done({o.error ? o.error->exit_code() : 125, o.error, {}}, o.timeline);
}

int probe_rungs(const Policy& given, bool json_out) {
  // A probe makes no home layer: each rung is tried with the home as
  // the read-only root shows it (what a launch falls back to where the
  // overlay is refused, docs/ladder.md).
  Policy policy = given;
  if (policy.home == HomeMode::cow && policy.layers.home_layer.upper.empty()) policy.home = HomeMode::ro;
  // What a launch prepares, then each rung's launch up to the exec.
  auto prepared = prepare(policy);
  if (!prepared) {
    fmt::print(stderr, "nsrun: {}\n", prepared.error().message());
    return 125;
  }
  const LaunchPlan* plan = &prepared->plan;
  const NamespaceVerdict ns = probe_namespaces(*prepared);
  landlock::Readiness ll = landlock::assess(policy);
  if (ll.reason.empty()) probe_landlock(*prepared, ll);
  const bool ns_ok = ns.reason.empty() && policy.backend != Backend::landlock;
  const bool ll_ok = ll.reason.empty() && policy.backend != Backend::namespaces;
  const std::string selected = ns_ok ? "namespaces" : ll_ok ? "landlock" : "none";

  if (json_out) {
    using json::Value;
    Value out = Value::object();
    out.set("backend", name(policy.backend));
    out.set("host_backend", policy.host_backend);
    out.set("proc", name(plan->proc));
    out.set("selected", selected);
    Value rungs = Value::array();
    Value n = Value::object();
    n.set("name", "namespaces");
    n.set("usable", ns.reason.empty());
    n.set("reason", ns.reason.empty() ? Value() : Value(ns.reason));
    n.set("detail", ns.detail);
    n.set("ends_sandbox", "pid-namespace");
    rungs.push_back(std::move(n));
    Value l = Value::object();
    l.set("name", "landlock");
    l.set("usable", ll.reason.empty());
    l.set("reason", ll.reason.empty() ? Value() : Value(ll.reason));
    l.set("detail", ll.detail);
    l.set("abi", ll.abi);
    // How the rung ends every process of the sandbox (at a --timeout, when
    // the command exits, when nsrun dies).
    l.set("ends_sandbox", ll.abi == 0 ? Value() : Value(ll.signal_scope ? "signal-scope" : "one-by-one"));
    l.set("enforcement", ll.reason.empty() ? landlock::name(ll.ruleset.enforcement) : std::string_view());
    // How the rung keeps the protected paths no Landlock rule can.
    l.set("protected", ll.reason.empty() && !ll.snapshot_paths.empty() ? Value("snapshot-restore") : Value());
    Value dropped = Value::array();
    for (const auto& d : ll.ruleset.dropped) dropped.push_back(d);
    l.set("dropped", std::move(dropped));
    Value refused = Value::array();
    for (const auto& d : ll.ruleset.refused) refused.push_back(d);
    l.set("refused", std::move(refused));
    rungs.push_back(std::move(l));
    out.set("rungs", std::move(rungs));
    fmt::print("{}\n", json::dump(out));
  } else {
    fmt::print("host backend: {}\n", policy.host_backend.empty() ? "none" : policy.host_backend);
    fmt::print("proc: {}\n", name(plan->proc));
    if (ns.reason.empty()) fmt::print("namespaces: usable\n");
    else fmt::print("namespaces: unusable: {} ({})\n", ns.reason, ns.detail);
    if (!ll.reason.empty()) {
      fmt::print("landlock: unusable: {} ({})\n", ll.reason, ll.detail);
    } else {
      std::string dropped;
      for (const auto& d : ll.ruleset.dropped) dropped += (dropped.empty() ? "" : ", ") + d;
      std::string refused;
      for (const auto& d : ll.ruleset.refused) refused += (refused.empty() ? "" : ", ") + d;
      fmt::print("landlock: usable (ABI {}, enforcement {}{}{})\n", ll.abi, landlock::name(ll.ruleset.enforcement),
                 dropped.empty() ? "" : "; not enforced: " + dropped,
                 refused.empty() ? "" : "; refused everywhere, writable roots too: " + refused);
    }
    if (ll.reason.empty() && !ll.snapshot_paths.empty())
      fmt::print("landlock: protected paths: {}\n", snapshot_words);
    if (ll.abi > 0)
      fmt::print("landlock: ends the sandbox {}\n",
                 ll.signal_scope
                     ? "at once: kill(-1) from the supervisor's Landlock signal scope (ABI 6), which holds only the "
                       "sandbox"
                     : "one process at a time (no Landlock signal scope below ABI 6): a fork bomb can outlive "
                       "--timeout and nsrun; --timeout is refused unless --limits best-effort");
    fmt::print("selected: {} (--backend {})\n", selected, name(policy.backend));
  }
  return selected == "none" ? 1 : 0;
}

}  // namespace nsrun
