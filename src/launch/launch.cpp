// The launch, top to bottom: the report's sink, the copy-on-write layers,
// the spec (launch/spec.cpp), the ladder that runs it on the first usable
// rung (launch/ladder.cpp), then what is said and reported after. A Policy
// goes from here to the spec, the ladder, a rung
// (launch/namespaces_rung.cpp or launch/landlock_rung.cpp), the command's
// start (launch/command.cpp) and nsrun's supervision (launch/supervise.cpp).
#include "launch/launch.hpp"

#include <sys/stat.h>

#include <fmt/core.h>

#include "launch/command.hpp"
#include "launch/ladder.hpp"
#include "launch/protect_watch.hpp"
#include "launch/refusals.hpp"
#include "launch/report.hpp"
#include "launch/rung.hpp"
#include "launch/spec.hpp"
#include "layers/session.hpp"

namespace nsrun {

namespace {

void print_error(const Error& e) { fmt::print(stderr, "nsrun: {}\n", e.message()); }

int run_unconfined(const LaunchSpec& p) {
  fmt::print(stderr, "nsrun: full-access: running the command without confinement\n");
  if (auto r = enter_directory(p.plan); !r) {
    print_error(r.error());
    return r.error().exit_code();
  }
  Error e = try_exec(p, p.env);
  print_error(e);
  return e.exit_code();
}

}  // namespace

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
  // --backend landlock: the namespace rung never runs, so its mount list
  // is not planned.
  const SpecFor spec_for =
      rung_allowed(layers->policy().backend, "namespaces") ? SpecFor::every_rung : SpecFor::landlock_only;
  auto prepared = prepare(layers->policy(), spec_for);
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
  // The spec is made: from here on every rung reads it and none writes it
  // (what a rung learns is its Attempt's, launch/attempt.hpp).
  const LaunchSpec& spec = *prepared;
  LadderOutcome outcome = run_ladder(layers->policy(), spec, report, &protect_watch);
  // Every rung has reaped what it started by now (the namespace rung its
  // PID 1, whose death ends the PID namespace's every process).
  layers->mark_ended();
  layers->close();
  // nsrun's own failure (a refused rung, no sandbox available): nothing
  // of the command's is in an empty run layer to review.
  if (outcome.error) drop_unused_run(*layers, report);
  // From the filter's key: a spec made for the Landlock rung alone has the
  // namespace rung's program unpacked nowhere.
  report.seccomp_filter = filter_loads(spec.filter);
  report_protected(protect_watch, policy, report, outcome.error);
  if (spec.egress) report.network = std::move(outcome.egress_decisions);
  // The rung that ran decided how each limit was kept: a best-effort
  // RLIMIT_AS standing in for the memory limit is said whatever the end.
  for (const auto& d : report.verdict.limits)
    if (d.limit == "memory" && d.how == LimitEnforcement::rlimit)
      fmt::print(stderr, "nsrun: --limit-memory: {}\n", d.detail);
  if (report.rung == "namespaces" && outcome.exit_code != 0)
    note_hidden_tmp(policy, outcome.plan ? *outcome.plan : spec.plan);
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
