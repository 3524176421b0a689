// The copy-on-write home's fallback where no overlay can be made: the home
// stays as the read-only root shows it, and the well-known caches
// (policy/cow.hpp cache_redirects()) go to the layer's private `redirect`
// directory instead. Never more than the cow home gives: the real home is
// still never written, and the redirect directory is nsrun's own (0700, the
// caller's, beside the layer).
//
// The Landlock rung has no overlay at all and always takes it; the
// namespace rung takes it when the kernel or the file system refuses the
// home's overlay (rootless overlayfs needs kernel 5.11+, a lower layer it
// can stack on and an upper file system with user xattrs), before the
// command ran, so the launch stays on the stronger rung.
#pragma once

#include <string>
#include <vector>

#include "launch/spec.hpp"
#include "launch/report.hpp"
#include "policy/cow.hpp"  // existing_home_base()
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// Pure. Whether `e`, the namespace rung's failure with `plan`, is the home
// layer's overlay refused by this host (not a workspace overlay's, not a
// bad path): the case for the fallback.
bool home_overlay_refused(const Error& e, const LaunchPlan& plan, const Policy& policy);

// Pure. The Policy of the fallback: no home overlay, the redirect
// directory bound writable on itself (right after the presets, so the
// caller's own mounts still win over it).
Policy cache_redirect_policy(const Policy& policy);

// Points the well-known caches at `redirect` in `env` (MAVEN_OPTS keeps
// what it had).
void redirect_caches(std::vector<std::string>& env, const std::string& redirect);

// The report's "layers" for the fallback.
void note_cache_redirect(LaunchReport& report, const std::string& redirect);

// The namespace rung's spec for the fallback, a new one made from `p`
// (which stays as it is): the mounts of cache_redirect_policy() (tmpfs
// sizes of the limits kept) and the redirected caches; stated on stderr
// with `why` when --home cow was asked for (the default's fallback is in
// the report: the rung's detail and layers.home "cache-redirect").
Result<LaunchSpec> cache_redirect_spec(const LaunchSpec& p, const Policy& policy, const std::string& why);

}  // namespace nsrun
