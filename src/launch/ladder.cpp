// The fail-closed ladder, top to bottom: the reason codes a rung's
// failure maps to, then run_ladder(), which walks the table of rungs
// (launch/rung.hpp: the namespace rung, then Landlock) until one decides
// the launch, and `nsrun probe`, which walks the same table up to each
// rung's exec.
#include "launch/ladder.hpp"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include "launch/rung.hpp"
#include "policy/json.hpp"
#include "sys/namespaces.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

std::string rung_line(const RungReport& r) {
  if (r.detail.empty()) return fmt::format("{}: {}", r.name, r.reason);
  return fmt::format("{}: {} ({})", r.name, r.reason, r.detail);
}

// One line naming each rung and why it was not usable.
Error no_sandbox(const std::vector<RungReport>& rungs) {
  std::string lines;
  for (const auto& r : rungs) lines += (lines.empty() ? "" : "; ") + rung_line(r);
  Error e{"no sandbox available", 0, {}, std::move(lines)};
  e.phase = Phase::choose_rung;
  return e;
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
  // The user namespace alone first (every other one is tried inside it),
  // then the mount namespace, then the rest in table order.
  const uint64_t user = flags & CLONE_NEWUSER;
  if (user != 0 && attempt(user) != 0) return std::string(reason::userns_denied);
  const auto denied = [&](const NamespaceKind& k) { return (flags & k.clone_flag) != 0 && attempt(user | k.clone_flag) != 0; };
  if (const NamespaceKind* mnt = namespace_kind(CLONE_NEWNS); denied(*mnt)) return std::string(mnt->denied);
  for (const NamespaceKind& k : namespace_kinds)
    if (k.clone_flag != CLONE_NEWUSER && k.clone_flag != CLONE_NEWNS && denied(k)) return std::string(k.denied);
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

LadderOutcome run_ladder(const Policy& policy, const LaunchSpec& p, LaunchReport& report, const ProtectWatch* protect) {
  // The launch's phases between the rungs; each attempt goes on from it.
  Timeline timeline = p.timeline;
  const auto table = rungs();
  std::vector<RungReport> rungs_seen;
  for (const auto& rung : table) rungs_seen.push_back({std::string(rung->name()), false, {}, {}});
  auto done = [&](LadderOutcome o, const Timeline& phases) {
    report.rungs = rungs_seen;
    report.phases = phases.phases();
    return o;
  };

  std::vector<egress::Decision> decisions;
  // The failure behind a refusal when the ladder ends at a rung --backend
  // left out (bwrap speaks of it in its own words).
  std::optional<Error> cause;
  for (std::size_t i = 0; i < table.size(); ++i) {
    Rung& rung = *table[i];
    RungReport& seen = rungs_seen[i];
    if (!rung_allowed(policy.backend, rung.name())) {
      seen.reason = reason::not_tried;
      seen.detail = fmt::format("--backend {}", name(policy.backend));
      continue;
    }
    if (!rung.assess(policy, p, protect, seen, report)) {
      cause.reset();
      continue;
    }
    Attempt a(p, timeline);
    const LadderStep step = rung.run(policy, p, a, seen, report);
    decisions = std::move(a.egress_decisions);
    if (step == LadderStep::next) {
      cause = a.outcome.error;
      timeline.mark(rung.name());
      continue;
    }
    // The launch is decided here.
    if (step == LadderStep::stop)
      for (std::size_t j = i + 1; j < table.size(); ++j) rungs_seen[j].reason = reason::not_tried;
    LadderOutcome out;
    out.exit_code = a.outcome.exit_code;
    out.error = a.outcome.error;
    out.egress_decisions = std::move(decisions);
    out.plan = std::move(a.plan);
    return done(std::move(out), a.outcome.timeline);
  }
  report.rung = "none";
  LadderOutcome out;
  out.error = no_sandbox(rungs_seen);
  out.cause = cause;
  out.egress_decisions = std::move(decisions);
  return done(std::move(out), timeline);
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
  prepared->stop_before_exec = true;
  const LaunchSpec& spec = *prepared;
  const auto table = rungs();
  std::vector<RungReport> found;
  std::string selected = "none";
  for (const auto& rung : table) {
    RungReport seen{std::string(rung->name()), false, {}, {}};
    LaunchReport unused;
    if (rung->assess(policy, spec, nullptr, seen, unused)) {
      Attempt a(spec);
      (void)rung->run(policy, spec, a, seen, unused);
      const LaunchOutcome& o = a.outcome;
      if (!o.error && o.exit_code == 0) {
        seen.reason.clear();
        seen.detail.clear();
      } else if (!o.error) {
        seen.reason = reason::failed;
        seen.detail = fmt::format("the launch ended with status {} before the exec", o.exit_code);
      } else if (seen.reason.empty()) {
        seen.reason = reason::failed;
        seen.detail = o.error->message();
      }
    }
    if (selected == "none" && seen.reason.empty() && rung_allowed(policy.backend, rung->name()))
      selected = std::string(rung->name());
    found.push_back(std::move(seen));
  }

  if (json_out) {
    using json::Value;
    Value out = Value::object();
    out.set("backend", name(policy.backend));
    out.set("host_backend", policy.host_backend);
    out.set("proc", name(spec.plan.proc));
    out.set("selected", selected);
    Value list = Value::array();
    for (std::size_t i = 0; i < table.size(); ++i) list.push_back(table[i]->explain_probe_json(found[i]));
    out.set("rungs", std::move(list));
    fmt::print("{}\n", json::dump(out));
  } else {
    std::string text = fmt::format("host backend: {}\n", policy.host_backend.empty() ? "none" : policy.host_backend);
    text += fmt::format("proc: {}\n", name(spec.plan.proc));
    for (std::size_t i = 0; i < table.size(); ++i) table[i]->explain_probe(found[i], text);
    text += fmt::format("selected: {} (--backend {})\n", selected, name(policy.backend));
    fmt::print("{}", text);
  }
  return selected == "none" ? 1 : 0;
}

}  // namespace nsrun
