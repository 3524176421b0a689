#include "session/exec_report.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include <fmt/format.h>

namespace nsrun::session {

namespace {

std::string job_list(const std::vector<int64_t>& jobs) {
  std::string out;
  for (std::size_t i = 0; i < jobs.size() && i < 8; ++i) out += (out.empty() ? "" : ", ") + std::to_string(jobs[i]);
  if (jobs.size() > 8) out += fmt::format(" and {} more", jobs.size() - 8);
  return out;
}

}  // namespace

LaunchReport exec_report(const SessionReportBase& base, const ExecEnd& end, const ExecObservations& obs) {
  LaunchReport r = base.report;
  r.exit_code = end.code;
  Verdict& v = r.verdict;
  v.started = end.how != ExecEnd::How::failed;
  if (end.how == ExecEnd::How::failed) {
    Error e;
    e.step = end.error;
    r.error = e;
  }
  if (end.how == ExecEnd::How::exited) {
    v.ended.code = end.code;
    v.ended.how = "exit";
    if (end.timed_out) {
      v.ended.how = "timeout";
      v.ended.limit = "timeout";
      v.ended.killed = end.killed;
      if (end.wait_status && WIFSIGNALED(*end.wait_status)) v.ended.signal = WTERMSIG(*end.wait_status);
    } else if (const int w = end.wait_status.value_or(0); end.wait_status && WIFSIGNALED(w)) {
      v.ended.how = "signal";
      v.ended.signal = WTERMSIG(w);
      for (const auto& rl : base.facts.rlimits) {
        if (v.ended.signal == SIGXCPU && rl.name == "cpu") v.ended.how = "rlimit", v.ended.limit = "cpu";
        if (v.ended.signal == SIGXFSZ && rl.name == "fsize") v.ended.how = "rlimit", v.ended.limit = "fsize";
      }
    }
  } else if (end.how == ExecEnd::How::session_ended) {
    v.ended.code = end.code;
    if (end.session_timeout) {
      v.ended.how = "timeout";
      v.ended.limit = "timeout";
    } else {
      // The session's end took its PID namespace, and the command, along.
      v.ended.how = "signal";
      v.ended.signal = SIGKILL;
    }
  }
  v.usage.wall_us = end.wall_us;
  v.usage.user_us = end.user_us;
  v.usage.sys_us = end.sys_us;
  v.usage.peak_memory_bytes = end.maxrss_kb * 1024;
  v.usage.peak_memory_source = "ru_maxrss";
  v.usage.processes.reset();  // the PID namespace's counter is the session's, not the exec's
  v.denials = obs.denials;
  v.denials_observed = obs.listening;
  v.writes_outside = obs.writes;
  // --watch-writes at session start: each exec's own observations.
  v.writes_watched = base.facts.watch_writes;
  v.writes_observed = obs.listening;
  v.writes_outside_dropped = obs.writes_dropped;
  RefusalFacts facts = base.facts;
  if (end.timed_out) {
    facts.timeout_ms = end.timeout_ms;
    facts.kill_after_ms = end.kill_after_ms;
  }
  // Egress by time: listed only when no other job ran in the window.
  const bool egress_alone = end.beside.empty() && end.strays == 0;
  if (egress_alone) facts.egress = &obs.egress;
  collect_refusals(v, facts);
  for (auto& refusal : v.refusals)
    if (refusal.kind == "timeout" && end.how == ExecEnd::How::session_ended)
      refusal.words = fmt::format("the session's time limit (--timeout {}) ended it, and every process of the session",
                                  refusal.what);
  if (!egress_alone && !obs.egress.empty()) {
    uint64_t denied = 0;
    for (const auto& d : obs.egress) denied += d.count;
    const std::string who =
        !end.beside.empty()
            ? fmt::format("job{} {} of the session ran", end.beside.size() == 1 ? "" : "s", job_list(end.beside))
            : fmt::format("{} process{} left by earlier commands of the session ran", end.strays,
                          end.strays == 1 ? "" : "es");
    v.unobserved.emplace_back("egress", fmt::format("{} egress denial{} while {} beside this exec, not told apart "
                                                    "from its own (the session's --network-log has every decision)",
                                                    denied, denied == 1 ? "" : "s", who));
  }
  if (obs.dropped > 0)
    v.unobserved.emplace_back("refusals", fmt::format("{} more refusal{} past the {} distinct ones an exec keeps of "
                                                      "each kind",
                                                      obs.dropped, obs.dropped == 1 ? "" : "s", max_exec_entries));
  if (v.started)
    v.unobserved.emplace_back("attribution", "calls refused to processes of this exec that left its session "
                                             "(setsid)");
  return r;
}

json::Value bounded_json(LaunchReport report, std::size_t max_bytes) {
  const std::size_t listed = report.verdict.refusals.size();
  // Past every refusal, the denials and the session's hidden paths go too.
  for (std::size_t dropped = 0;; dropped += std::max<std::size_t>(1, (listed - std::min(dropped, listed)) / 8)) {
    LaunchReport t = report;
    auto& v = t.verdict;
    const std::size_t cut = std::min(dropped, listed);
    v.refusals.resize(listed - cut);
    if (cut > 0)
      v.unobserved.emplace_back("refusals", fmt::format("{} refusal{} left out of the list: an exec's report is at "
                                                        "most {} KiB",
                                                        cut, cut == 1 ? "" : "s", max_bytes / 1024));
    if (dropped > listed) {
      t.hidden_credentials.clear();
      v.denials.clear();
      v.unobserved.emplace_back("report", "the denials and hidden credentials were left out: the report's bound");
    }
    json::Value out = to_json(t);
    if (json::dump(out, false).size() <= max_bytes || dropped > listed) return out;
  }
}

}  // namespace nsrun::session
