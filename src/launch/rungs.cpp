// The ladder's table (launch/rung.hpp), top to bottom: the namespace rung
// (its launch is its own probe; a refusal of the home's overlay is retried
// on the same rung with the caches redirected; a failure the host caused
// moves the ladder on), then the Landlock rung (assessed before it runs:
// the ABI, a ruleset that keeps the promise, its filter), and what
// `nsrun probe` and `nsrun explain` print for each. A new rung is one class here and one entry
// in rungs().
#include "launch/rung.hpp"

#include <sched.h>

#include <cstdlib>

#include <fmt/format.h>

#include "launch/apparmor.hpp"
#include "launch/home_fallback.hpp"
#include "launch/ladder.hpp"
#include "launch/landlock_rung.hpp"
#include "launch/namespaces_rung.hpp"
#include "launch/protect_restore.hpp"
#include "landlock/ruleset.hpp"
#include "ns/credentials.hpp"
#include "seccomp/filter.hpp"
#include "seccomp/rules.hpp"

namespace nsrun {

namespace {

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

void note_landlock(LaunchReport& report, const landlock::Readiness& ready) {
  report.landlock_abi = ready.abi;
  if (!ready.reason.empty()) return;
  report.landlock_enforcement = landlock::name(ready.ruleset.enforcement);
  report.landlock_dropped = ready.ruleset.dropped;
  report.landlock_refused = ready.ruleset.refused;
}

json::Value reason_value(const RungReport& rung) {
  return rung.reason.empty() ? json::Value() : json::Value(rung.reason);
}

// The namespace rung's plan: mounts, capabilities, its filter.
void explain_namespaces(const LaunchSpec& prepared, std::string& out) {
  out += describe(prepared.plan);
  std::string kept;
  for (cap_value_t c : prepared.keep_caps) {
    kept += fmt::format("{}{}", kept.empty() ? "" : " ", capability_name(c));
  }
  if (prepared.keep_setfcap)
    kept += fmt::format("{}CAP_SETFCAP (--allow-nested-userns as root: mapping uid 0 needs it)", kept.empty() ? "" : " ");
  out += kept.empty() ? "capabilities: all dropped; no_new_privs\n"
                      : fmt::format("capabilities: all dropped but {}; no_new_privs\n", kept);
  out += fmt::format("seccomp: {}\n", describe_filter(filter_spec(prepared.filter), prepared.seccomp));
  // The Landlock rung cannot tell a writable root from the rest of the host
  // for these: its filter refuses them everywhere.
  out += fmt::format("landlock rung: refuses everywhere, writable roots too: {} (Landlock cannot confine them to "
                     "the writable roots)\n",
                     fmt::join(landlock_refused_everywhere(), ", "));
  if (prepared.egress)
    out += "network: proxy (a new network namespace with only lo; HTTP/SOCKS proxy at 127.0.0.1:3128 and DNS at "
           "127.0.0.1:53, served by nsrun outside the sandbox)\n";
  else
    out += fmt::format("network: {}\n", (prepared.plan.clone_flags & CLONE_NEWNET) != 0
                                             ? "none (a new network namespace with only lo up, 127.0.0.1; pathname unix "
                                               "sockets are files, not network: see unix sockets)"
                                             : "share (the host's network)");
}

// --network proxy's rules, as given.
void explain_egress(const Policy& policy, std::string& out) {
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("-") : printable(s);
  };
  out += fmt::format("  allow: {}\n  deny: {}\n  resolve: {}\n  log: {}\n", list(policy.egress.allow),
                     list(policy.egress.deny), list(policy.egress.resolve),
                     policy.egress.log.empty() ? "-" : printable(policy.egress.log));
}

// The Landlock rung's plan, from the same spec its launch reads
// (landlock::assess): no mounts run there, so none are shown.
Result<void> explain_landlock(const Policy& policy, std::string& out) {
  const landlock::Readiness ready = landlock::assess(policy);
  if (!ready.reason.empty())
    return fail(Error{"--backend landlock", 0, {}, fmt::format("the Landlock rung cannot run this policy: {} ({})", ready.reason, ready.detail)});
  out += "rung: landlock (no namespaces: the command runs on the host's file system under the ruleset below)\n";
  out += landlock::describe(ready.ruleset);
  if (!ready.snapshot_paths.empty()) {
    std::string paths;
    for (const auto& [root, rel] : ready.snapshot_paths)
      paths += (paths.empty() ? "" : " ") + (root == "/" ? "/" + rel : root + "/" + rel);
    out += fmt::format("protected paths: {}: {}\n", snapshot_words, printable(paths));
  }
  out += "capabilities: all dropped (bounding and ambient sets emptied); no_new_privs\n";
  out += fmt::format("seccomp: {}\n", describe_filter(filter_spec(ready.filter), ready.seccomp));
  out += fmt::format("network: {}\n", policy.network == Network::none
                                           ? "none (no network namespace on this rung: the filter refuses socket() for "
                                             "AF_INET, AF_INET6 and AF_PACKET; pathname unix sockets are files, not "
                                             "network: see unix sockets)"
                                           : policy.network == Network::proxy
                                           ? "proxy (the host's network namespace: Landlock refuses every TCP connect "
                                             "and bind; the filter allows TCP sockets only; nsrun answers connect() "
                                             "with a socket to its proxy on the host's 127.0.0.1 at a port picked at "
                                             "launch, and refuses every other address; no DNS stub)"
                                           : "share (the host's network)");
  return {};
}

// The namespace rung: the real launch is the probe, so there is nothing to
// assess before it; the host's refusal shows in the launch itself.
class NamespacesRung final : public Rung {
 public:
  std::string_view name() const override { return "namespaces"; }

  bool assess(const Policy&, const LaunchSpec& p, const ProtectWatch*, RungReport&, LaunchReport&) override {
    // A spec made for the Landlock rung alone (SpecFor::landlock_only) has
    // no mount list: run here, it would build an empty root. launch.cpp
    // makes one only when --backend leaves this rung out.
    if (!p.plan.mounts_planned) {
      fmt::print(stderr, "nsrun: internal error: the namespace rung given a spec without its mount list\n");
      std::abort();
    }
    return true;
  }

  LadderStep run(const Policy& policy, const LaunchSpec& p, Attempt& a, RungReport& ns,
                 LaunchReport& report) override {
    const Timeline start = a.timeline;
    LaunchOutcome o = run_namespaces(p, a);
    if (o.command_started || !o.error) {
      ns.used = o.command_started;
      report.rung = "namespaces";
      report.verdict = std::move(o.verdict);
      a.outcome = std::move(o);
      return LadderStep::stop;
    }
    // The home's overlay refused by this kernel or file system, before the
    // command ran: the same rung again with the caches redirected
    // (launch/home_fallback.hpp), never a rung down for it.
    if (home_overlay_refused(*o.error, p.plan, policy)) {
      const std::string why = fmt::format("no overlay for the home here ({}: {})", reason::overlay_unavailable,
                                          o.error->message());
      auto redirected = cache_redirect_spec(p, policy, why);
      if (!redirected) {
        a.outcome = LaunchOutcome{};
        a.outcome.exit_code = redirected.error().exit_code();
        a.outcome.error = redirected.error();
        a.outcome.timeline = start;
        return LadderStep::break_off;
      }
      // A second attempt, of the new spec.
      a = Attempt(*redirected, start);
      LaunchOutcome again = run_namespaces(*redirected, a);
      if (again.command_started || !again.error) {
        ns.used = again.command_started;
        ns.detail = why;
        report.rung = "namespaces";
        report.verdict = std::move(again.verdict);
        note_cache_redirect(report, policy.layers.redirect);
        a.plan = std::move(redirected->plan);
        a.outcome = std::move(again);
        return LadderStep::stop;
      }
      o = std::move(again);
    }
    NamespaceVerdict v = verdict_for(*o.error, p.plan.proc, p.plan.clone_flags);
    ns.detail = v.detail;
    a.outcome = std::move(o);
    if (v.reason.empty()) {
      // Not the host's refusal: the user's problem to see, never a reason
      // to move to another rung.
      ns.reason = reason::failed;
      report.rung = "none";
      return LadderStep::stop;
    }
    ns.reason = v.reason;
    return LadderStep::next;
  }

  Result<void> explain(const Policy& policy, const LaunchSpec& spec, std::string& out) override {
    explain_namespaces(spec, out);
    if (policy.network == Network::proxy) explain_egress(policy, out);
    return {};
  }

  void explain_probe(const RungReport& ns, std::string& text) const override {
    if (ns.reason.empty()) text += "namespaces: usable\n";
    else text += fmt::format("namespaces: unusable: {} ({})\n", ns.reason, ns.detail);
  }

  json::Value explain_probe_json(const RungReport& ns) const override {
    using json::Value;
    Value n = Value::object();
    n.set("name", "namespaces");
    n.set("usable", ns.reason.empty());
    n.set("reason", reason_value(ns));
    n.set("detail", ns.detail);
    n.set("ends_sandbox", "pid-namespace");
    return n;
  }
};

// The Landlock rung: assessed before it runs (landlock::assess(): the ABI,
// a ruleset that keeps the mode's promise, its own filter), then run as
// landlock::run().
class LandlockRung final : public Rung {
 public:
  std::string_view name() const override { return "landlock"; }

  bool assess(const Policy& policy, const LaunchSpec&, const ProtectWatch* protect, RungReport& ll,
              LaunchReport& report) override {
    ready_ = landlock::assess(policy, protect);
    note_landlock(report, ready_);
    if (ready_.reason.empty()) return true;
    ll.reason = ready_.reason;
    ll.detail = ready_.detail;
    return false;
  }

  LadderStep run(const Policy& policy, const LaunchSpec& p, Attempt& a, RungReport& ll,
                 LaunchReport& report) override {
    // `nsrun probe` explains the readiness after the run: a copy then.
    LaunchOutcome o = landlock::run(p, a, p.stop_before_exec ? landlock::Readiness(ready_) : std::move(ready_));
    if (o.command_started) {
      ll.used = true;
      report.rung = "landlock";
      report.verdict = std::move(o.verdict);
      if (!policy.layers.redirect.empty()) note_cache_redirect(report, policy.layers.redirect);
      // No PID namespace here: the command sees the host's /proc, read-only
      // by the ruleset.
      report.proc = ProcMode::host_bind;
      a.outcome = std::move(o);
      return LadderStep::stop;
    }
    ll.reason = reason::failed;
    ll.detail = o.error ? o.error->message() : "";
    report.rung = "none";
    o.exit_code = o.error ? o.error->exit_code() : 125;
    a.outcome = std::move(o);
    return LadderStep::stop;
  }

  Result<void> explain(const Policy& policy, const LaunchSpec&, std::string& out) override {
    return explain_landlock(policy, out);
  }

  void explain_probe(const RungReport& rung, std::string& text) const override {
    const landlock::Readiness& ll = ready_;
    if (!rung.reason.empty()) {
      text += fmt::format("landlock: unusable: {} ({})\n", rung.reason, rung.detail);
    } else {
      std::string dropped;
      for (const auto& d : ll.ruleset.dropped) dropped += (dropped.empty() ? "" : ", ") + d;
      std::string refused;
      for (const auto& d : ll.ruleset.refused) refused += (refused.empty() ? "" : ", ") + d;
      text += fmt::format("landlock: usable (ABI {}, enforcement {}{}{})\n", ll.abi, landlock::name(ll.ruleset.enforcement),
                          dropped.empty() ? "" : "; not enforced: " + dropped,
                          refused.empty() ? "" : "; refused everywhere, writable roots too: " + refused);
    }
    if (rung.reason.empty() && !ll.snapshot_paths.empty())
      text += fmt::format("landlock: protected paths: {}\n", snapshot_words);
    if (ll.abi > 0)
      text += fmt::format("landlock: ends the sandbox {}\n",
                          ll.signal_scope
                              ? "at once: kill(-1) from the supervisor's Landlock signal scope (ABI 6), which holds "
                                "only the sandbox"
                              : "one process at a time (no Landlock signal scope below ABI 6): a fork bomb can "
                                "outlive --timeout and nsrun; --timeout is refused unless --limits best-effort");
  }

  json::Value explain_probe_json(const RungReport& rung) const override {
    using json::Value;
    const landlock::Readiness& ll = ready_;
    Value l = Value::object();
    l.set("name", "landlock");
    l.set("usable", rung.reason.empty());
    l.set("reason", reason_value(rung));
    l.set("detail", rung.detail);
    l.set("abi", ll.abi);
    // How the rung ends every process of the sandbox (at a --timeout, when
    // the command exits, when nsrun dies).
    l.set("ends_sandbox", ll.abi == 0 ? Value() : Value(ll.signal_scope ? "signal-scope" : "one-by-one"));
    l.set("enforcement", rung.reason.empty() ? landlock::name(ll.ruleset.enforcement) : std::string_view());
    // How the rung keeps the protected paths no Landlock rule can.
    l.set("protected", rung.reason.empty() && !ll.snapshot_paths.empty() ? Value("snapshot-restore") : Value());
    Value dropped = Value::array();
    for (const auto& d : ll.ruleset.dropped) dropped.push_back(d);
    l.set("dropped", std::move(dropped));
    Value refused = Value::array();
    for (const auto& d : ll.ruleset.refused) refused.push_back(d);
    l.set("refused", std::move(refused));
    return l;
  }

 private:
  landlock::Readiness ready_;
};

}  // namespace

bool rung_allowed(Backend backend, std::string_view rung) {
  return backend == Backend::automatic || name(backend) == rung;
}

std::vector<std::unique_ptr<Rung>> rungs() {
  std::vector<std::unique_ptr<Rung>> table;
  table.push_back(std::make_unique<NamespacesRung>());
  table.push_back(std::make_unique<LandlockRung>());
  return table;
}

}  // namespace nsrun
