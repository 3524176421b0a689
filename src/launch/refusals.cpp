#include "launch/refusals.hpp"

#include <cerrno>

#include <fmt/core.h>

#include "policy/hosts.hpp"
#include "policy/protect.hpp"
#include "sys/error.hpp"

namespace nsrun {

std::string duration_words(uint64_t ms) {
  if (ms % 1000 != 0) return fmt::format("{}ms", ms);
  const uint64_t s = ms / 1000;
  if (s >= 60 && s % 60 != 0) return fmt::format("{}m{}s", s / 60, s % 60);
  if (s >= 60) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

RefusalFacts refusal_facts(const Policy& policy, bool landlock_rung) {
  RefusalFacts f;
  f.mode = policy.mode;
  f.landlock_rung = landlock_rung;
  f.watch_writes = policy.watch_writes;
  f.network = policy.network;
  f.timeout_ms = policy.limits.timeout_ms;
  f.kill_after_ms = policy.limits.kill_after_ms;
  f.memory = policy.limits.memory;
  f.pids = policy.limits.pids;
  f.rlimits = policy.limits.rlimits;
  f.hidden_credentials = policy.hidden_paths.size();
  f.hidden_sockets = policy.hidden_sockets.size();
  return f;
}

namespace {

std::string size_words(uint64_t bytes) {
  for (auto [unit, scale] : {std::pair{"G", 1ull << 30}, std::pair{"M", 1ull << 20}, std::pair{"K", 1ull << 10}})
    if (bytes >= scale && bytes % scale == 0) return fmt::format("{}{}", bytes / scale, unit);
  return fmt::format("{}", bytes);
}

constexpr std::string_view memory_rlimit_words =
    "allocations past --limit-memory, kept as RLIMIT_AS per process (best-effort, no cgroup: address space, not the "
    "sandbox's memory)";

std::string times(uint64_t n) { return n > 1 ? fmt::format(" \u00d7{}", n) : std::string(); }

// The option that lets a refused call through, where one does.
std::string seccomp_allow(const Denial& d, const RefusalFacts& f) {
  if (d.syscall == "unshare" || d.syscall == "clone" || d.syscall == "clone3" || d.syscall == "setns")
    return "--allow-nested-userns";
  if ((d.syscall == "socket" || d.syscall == "socketpair") && f.network == Network::none) return "--network proxy";
  return {};
}

// AF_UNIX is 1: the first argument of socket(), as the filter saw it.
bool unix_socket(const Denial& d) { return d.syscall == "socket" && d.args.starts_with("0x1,"); }

void timeout_refusal(Verdict& v, const RefusalFacts& f) {
  const std::string after = f.timeout_ms ? duration_words(*f.timeout_ms) : "?";
  const std::string words =
      v.ended.killed
          ? fmt::format("timed out after {}: SIGTERM, then SIGKILL {} later", after, duration_words(f.kill_after_ms))
          : fmt::format("timed out after {}: SIGTERM ended it", after);
  add_refusal(v, Refusal{"timeout", after, "--timeout", 1, words});
}

void limit_refusals(Verdict& v, const RefusalFacts& f) {
  if (v.ended.how == "oom")
    add_refusal(v, Refusal{"oom", "memory", "--limit-memory", 1,
                           fmt::format("killed by the OOM killer at the memory limit ({})",
                                       f.memory ? "--limit-memory " + size_words(*f.memory) : "the cgroup's")});
  if (v.ended.how == "rlimit")
    add_refusal(v, Refusal{"limit", v.ended.limit, "--rlimit " + v.ended.limit, 1,
                           fmt::format("ended by the {} rlimit (SIG{})", v.ended.limit,
                                       v.ended.limit == "cpu" ? "XCPU" : "XFSZ")});
  if (v.pids_refused && *v.pids_refused > 0)
    add_refusal(v, Refusal{"limit", "pids", "--limit-pids", *v.pids_refused,
                           fmt::format("the pids limit{} refused {} fork{}",
                                       f.pids ? fmt::format(" ({})", *f.pids) : "", *v.pids_refused,
                                       *v.pids_refused == 1 ? "" : "s")});
}

void egress_refusals(Verdict& v, const RefusalFacts& f) {
  if (f.egress == nullptr) return;
  for (const auto& d : *f.egress) {
    if (d.decision != "denied") continue;
    const std::string what = d.port != 0 ? fmt::format("{}:{}", printable(d.host), d.port) : printable(d.host);
    std::string why;
    if (d.reason == hosts::blocked_allowlist) why = "is not in --allow-host";
    else if (d.reason == hosts::blocked_denylist) why = fmt::format("matches --deny-host {}", printable(d.rule));
    else why = fmt::format("refused ({})", d.reason);
    add_refusal(v, Refusal{"egress", what, d.reason == hosts::blocked_allowlist ? "--allow-host " + printable(d.host) : "",
                           d.count, fmt::format("egress denied: {} {}", what, why)});
  }
}

std::string protected_allow(const WriteAttempt& w) {
  return w.protected_entry.empty() ? "--unprotect" : "--unprotect " + printable(w.protected_entry);
}

// The path, what was refused and how to allow it: an agent reading
// "Read-only file system" from git learns here which file and why.
std::string protected_words(const WriteAttempt& w) {
  const std::string path = printable(w.path);
  const std::string unprotect = protected_allow(w) + " drops it from the set";
  // The copy-on-write workspace lets .git/config change in its layer, and
  // `nsrun commit` applies the keys that run nothing.
  const std::string cow = same_folded(w.protected_entry, ".git/config")
                              ? ", or --workspace-mode cow lets it change for review by nsrun commit"
                              : "";
  if (w.refused != 0)
    return fmt::format("protected path {}: {} refused with {}{} (kept read-only: git or an editor runs what it "
                       "says; {}{})",
                       path, w.syscall, w.refused == EROFS ? "EROFS (read-only file system)" : fmt::format("errno {}", w.refused),
                       times(w.count), unprotect, cow);
  return fmt::format("write to protected path {}{} (kept read-only; {}{})", path, times(w.count), unprotect, cow);
}

void write_refusals(Verdict& v) {
  for (const auto& w : v.writes_outside) {
    const std::string path = printable(w.path);
    if (w.where == WritePlace::protected_)
      add_refusal(v, Refusal{"protected-path", w.path, protected_allow(w), w.count, protected_words(w)});
    else
      add_refusal(v, Refusal{"read-only-root", w.path, "--writable", w.count,
                             fmt::format("write to {}{} outside the writable roots (read-only; --writable DIR "
                                         "makes a directory writable)",
                                         path, times(w.count))});
  }
}

void seccomp_refusals(Verdict& v, const RefusalFacts& f) {
  for (const auto& d : v.denials) {
    if (f.landlock_rung && unix_socket(d)) {
      add_refusal(v, Refusal{"unix-socket", d.syscall, "--unix-sockets", d.count,
                             fmt::format("AF_UNIX socket refused{} (the Landlock rung cannot hide host sockets)",
                                         times(d.count))});
      continue;
    }
    const std::string allow = seccomp_allow(d, f);
    add_refusal(v, Refusal{"seccomp", d.syscall, allow, d.count,
                           fmt::format("seccomp refused {}{}{}", d.syscall, times(d.count),
                                       allow.empty() ? "" : fmt::format(" ({} allows it)", allow))});
  }
}

void unobserved(Verdict& v, const RefusalFacts& f) {
  auto add = [&](std::string kind, std::string why) { v.unobserved.emplace_back(std::move(kind), std::move(why)); };
  if (f.mode != Mode::full_access && !f.watch_writes)
    add("read-only-root", "writes to read-only or protected paths (--watch-writes shows them)");
  if (f.network == Network::none)
    add("network-none", "the network is off (--network none); connection attempts fail inside, unseen "
                        "(--network proxy --allow-host HOST opens one)");
  if (f.hidden_credentials > 0)
    add("hidden-credential", fmt::format("reads of the {} hidden credential path{} (--allow-read PATH shows one)",
                                         f.hidden_credentials, f.hidden_credentials == 1 ? "" : "s"));
  if (f.hidden_sockets > 0 && !f.landlock_rung)
    add("unix-socket", "connections to the hidden host sockets (--allow-socket PATH)");
  if (f.seccomp_filter && !v.denials_observed) add("seccomp", "system calls the filter refused (no listener here)");
  for (const auto& d : v.limits)
    if (d.limit == "pids" && d.how == LimitEnforcement::rlimit)
      add("limit", "forks refused by RLIMIT_NPROC (--limit-pids without a cgroup; the kernel answers EAGAIN)");
    else if (d.limit == "memory" && d.how == LimitEnforcement::rlimit)
      add("limit", std::string(memory_rlimit_words));
}

}  // namespace

void collect_refusals(Verdict& v, const RefusalFacts& f) {
  if (!v.started) return;
  // What ended the command first, then what it met on the way.
  if (v.ended.how == "timeout") timeout_refusal(v, f);
  limit_refusals(v, f);
  egress_refusals(v, f);
  write_refusals(v);
  seccomp_refusals(v, f);
  unobserved(v, f);
}

}  // namespace nsrun
