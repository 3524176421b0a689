#include "launch/home_fallback.hpp"

#include <unistd.h>

#include <fmt/core.h>

#include "launch/ladder.hpp"
#include "policy/cow.hpp"
#include "policy/env.hpp"
#include "policy/paths.hpp"
#include "policy/presets.hpp"

namespace nsrun {

bool home_overlay_refused(const Error& e, const LaunchPlan& plan, const Policy& policy) {
  const CowLayers& l = policy.layers;
  if (e.op != Operation::mount_layer || l.redirect.empty() || l.home_layer.upper.empty()) return false;
  if (e.plan_step >= plan.mounts.size() || plan.mounts[e.plan_step].dest != l.home) return false;
  // A copy-on-write workspace that is $HOME itself mounts on the same
  // path: its refusal is not the home's to fall back from.
  if (policy.workspace_mode == WorkspaceMode::cow && policy.workspace == l.home) return false;
  return classify_namespace_failure(e, plan.proc) == reason::overlay_unavailable;
}

Policy cache_redirect_policy(const Policy& policy) {
  Policy out = policy;
  out.home = HomeMode::ro;  // no overlay: the home as the read-only root shows it
  out.mounts.insert(out.mounts.begin(), mount_op(MountOp::Kind::bind, policy.layers.redirect, policy.layers.redirect));
  // The home layers' base under an empty tmpfs first, as the cow home hides
  // it: the read-only home showed every workspace's layer, with what their
  // runs wrote into their homes (keys, tokens).
  // A tmpfs the command may write (in memory, gone at exit), not a
  // read-only one: the redirect bind above needs its mount point made in it.
  if (!policy.layers.home_base.empty())
    out.mounts.insert(out.mounts.begin(), mount_op(MountOp::Kind::tmpfs, "", policy.layers.home_base));
  return out;
}

void redirect_caches(std::vector<std::string>& env, const std::string& redirect) {
  const char* maven = env_lookup(env, "MAVEN_OPTS");
  for (auto& [var, value] : cache_redirects(redirect, maven ? maven : "")) {
    const std::string prefix = var + "=";
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
    env.push_back(prefix + value);
  }
}

void note_cache_redirect(LaunchReport& report, const std::string& redirect) {
  report.layers.home = "cache-redirect";
  report.layers.home_layer = redirect;
  report.layers.redirected.clear();
  for (const auto& [var, value] : cache_redirects(redirect, "")) report.layers.redirected.push_back(var);
}

Result<LaunchSpec> cache_redirect_spec(const LaunchSpec& base, const Policy& policy, const std::string& why) {
  const Policy fallback = cache_redirect_policy(policy);
  auto plan = make_plan(fallback, HostFacts{::getuid(), ::getgid(), base.plan.chdir});
  if (!plan) return fail(plan.error());
  LaunchSpec p = base;
  p.plan.mounts = std::move(plan->mounts);
  if (p.limits.tmpfs_size)
    for (auto& step : p.plan.mounts)
      if (step.op == MountStep::Op::tmpfs && step.size == 0) step.size = *p.limits.tmpfs_size;
  redirect_caches(p.env, policy.layers.redirect);
  if (policy.home_given)
    fmt::print(stderr, "nsrun: --home cow: {}; the home stays read-only and the well-known caches go to {}\n", why,
             printable(policy.layers.redirect));
  return p;
}

}  // namespace nsrun
