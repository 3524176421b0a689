// The launch spec (launch/spec.hpp), made before any clone, top to bottom:
// prepare() turns the Policy and the host facts into the namespace rung's
// LaunchSpec (plan, environment, exec candidates, capabilities, filters,
// status fds), then the rung's limits; arm_protect_guard() is the last of
// it, once the launch has scanned the protected paths. From here on the
// spec is read, never written (launch/attempt.hpp).
#include "launch/spec.hpp"

#include <linux/capability.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include <fmt/core.h>

#include "landlock/abi.hpp"
#include "landlock/kernel.hpp"
#include "policy/env.hpp"
#include "policy/hosts.hpp"
#include "probe/cgroup.hpp"
#include "seccomp/notify.hpp"
#include "seccomp/user_programs.hpp"

namespace nsrun {

namespace {

std::string current_directory() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return "/";
  return buf;
}

// --network proxy: the variables that point the command's tools at the
// proxy. An inherited value is replaced (a host proxy is unreachable from
// inside); one the policy sets itself (--setenv) is kept.
void set_proxy_environment(const Policy& policy, std::vector<std::string>& env) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  for (const auto& [key, value] : egress::proxy_environment(n > 0 ? std::string_view(self, static_cast<std::size_t>(n)) : ""))
    set_unless_policy_sets(policy, env, key, value);
}

}  // namespace

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

Result<LaunchSpec> prepare(const Policy& policy, SpecFor rungs) {
  LaunchSpec p;
  p.timeline.start();
  HostFacts host{::getuid(), ::getgid(), current_directory()};
  if (rungs == SpecFor::landlock_only) {
    p.plan = plan_without_mounts(policy, host);
  } else {
    auto plan = make_plan(policy, host);
    if (!plan) return fail(plan.error());
    p.plan = std::move(*plan);
  }
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
  p.filter = filter_key(policy, FilterRung::namespaces);
  // The namespace rung's program, unpacked only for a spec it may run: the
  // Landlock rung loads its own (landlock::assess()).
  const RungPrograms unpack = rungs == SpecFor::every_rung ? RungPrograms::unpacked : RungPrograms::none;
  if (unpack == RungPrograms::unpacked) {
    auto filter = compile_filter(policy);
    if (!filter) return fail(filter.error());
    p.seccomp = std::move(*filter);
  }
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
  // Planned for every spec: a limit the namespace rung cannot keep refuses
  // the launch here, whichever rung --backend allows.
  auto limits = rung_limits(policy, FilterRung::namespaces, unpack);
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

Result<RungLimits> rung_limits(const Policy& policy, FilterRung rung, RungPrograms programs) {
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
  if (programs == RungPrograms::none) return out;
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

void apply_limits(LaunchSpec& p, RungLimits l) {
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
Result<void> arm_protect_guard(LaunchSpec& p, const Policy& policy, std::vector<std::string> held) {
  if (!p.plan.mounts_planned) return {};
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

}  // namespace nsrun
