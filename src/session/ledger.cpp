#include "session/ledger.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "sys/fd.hpp"
#include "sys/timeline.hpp"

namespace nsrun::session {

int64_t Ledger::session_id(std::string_view status, int depth) {
  const auto at = status.find("\nNSsid:");
  if (at == std::string_view::npos || depth < 0) return 0;
  std::string_view line = status.substr(at + 7);
  line = line.substr(0, line.find('\n'));
  int level = 0;
  while (!line.empty()) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    const auto end = std::min(line.find_first_of(" \t"), line.size());
    if (level == depth) {
      int64_t sid = 0;
      const auto r = std::from_chars(line.data(), line.data() + end, sid);
      return r.ec == std::errc() && r.ptr == line.data() + end && sid > 0 ? sid : 0;
    }
    line.remove_prefix(end);
    ++level;
  }
  return 0;
}

int64_t Ledger::identify(pid_t pid) {
  // Nothing asked for a report: no /proc read on the refusal's way.
  if (open_count_.load() == 0 || pid <= 0) return 0;
  Fd f(::open(fmt::format("/proc/{}/status", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!f) return 0;
  char buf[4096];
  const ssize_t n = ::read(f.get(), buf, sizeof buf);
  if (n <= 0) return 0;
  return session_id(std::string_view(buf, static_cast<std::size_t>(n)), depth_);
}

bool Ledger::pending() const {
  return std::any_of(execs_.begin(), execs_.end(), [](const auto& kv) { return kv.second.sid == 0; });
}

Ledger::Entry* Ledger::by_sid(int64_t sid) {
  for (auto& [job, e] : execs_)
    if (e.sid == sid) return &e;
  return nullptr;
}

void Ledger::add_denial(Entry& e, const Denial& d) {
  auto it = std::find_if(e.obs.denials.begin(), e.obs.denials.end(), [&](const Denial& x) { return x.nr == d.nr; });
  if (it != e.obs.denials.end()) it->count += d.count;
  else if (e.obs.denials.size() < max_exec_entries) e.obs.denials.push_back(d);
  else e.obs.dropped += d.count;
}

void Ledger::add_write(Entry& e, const WriteAttempt& w) {
  auto it = std::find_if(e.obs.writes.begin(), e.obs.writes.end(),
                         [&](const WriteAttempt& x) { return x.path == w.path && x.syscall == w.syscall; });
  if (it != e.obs.writes.end()) it->count += w.count;
  else if (e.obs.writes.size() < max_exec_entries) e.obs.writes.push_back(w);
  else if (w.refused != 0) e.obs.dropped += w.count;
  else ++e.obs.writes_dropped;
}

void Ledger::denial(int64_t who, const seccomp_notif& call, const Denial& aggregate) {
  // This call's own pid and arguments, not the session's first.
  Denial d;
  d.syscall = aggregate.syscall;
  d.nr = aggregate.nr;
  d.count = 1;
  d.first_pid = static_cast<pid_t>(call.pid);
  d.args = fmt::format("{:#x}, {:#x}, {:#x}", call.data.args[0], call.data.args[1], call.data.args[2]);
  const std::lock_guard lock(mutex_);
  if (Entry* e = by_sid(who)) return add_denial(*e, d);
  if (!pending()) return;
  if (unclaimed_.size() >= max_unclaimed) unclaimed_.pop_front();
  unclaimed_.push_back(Unclaimed{who, Timeline::now_ns(), true, std::move(d), {}});
}

void Ledger::write(int64_t who, const WriteAttempt& w) {
  const std::lock_guard lock(mutex_);
  if (Entry* e = by_sid(who)) return add_write(*e, w);
  if (!pending()) return;
  if (unclaimed_.size() >= max_unclaimed) unclaimed_.pop_front();
  unclaimed_.push_back(Unclaimed{who, Timeline::now_ns(), false, {}, w});
}

void Ledger::decision(const egress::Decision& d) {
  if (d.decision != "denied" || open_count_.load() == 0) return;
  const std::lock_guard lock(mutex_);
  for (auto& [job, e] : execs_) {
    auto& list = e.obs.egress;
    auto it = std::find_if(list.begin(), list.end(), [&](const egress::Decision& x) {
      return x.host == d.host && x.port == d.port && x.reason == d.reason && x.rule == d.rule;
    });
    if (it != list.end()) it->count += d.count;
    else if (list.size() < max_exec_entries) list.push_back(d);
    else e.obs.dropped += d.count;
  }
}

void Ledger::expect(int64_t job) {
  const std::lock_guard lock(mutex_);
  Entry e;
  e.since_ns = Timeline::now_ns();
  execs_[job] = std::move(e);
  open_count_ = static_cast<int>(execs_.size());
}

void Ledger::open(int64_t job, int64_t sid) {
  const std::lock_guard lock(mutex_);
  auto it = execs_.find(job);
  if (it == execs_.end() || sid <= 0) return;
  Entry& e = it->second;
  e.sid = sid;
  // Calls made between the command's exec and now, by its session: the
  // id was no other live session's once the command had it, and only
  // what came after the request is taken.
  std::erase_if(unclaimed_, [&](const Unclaimed& u) {
    if (u.sid != sid || u.at_ns < e.since_ns) return false;
    if (u.is_denial) add_denial(e, u.denial);
    else add_write(e, u.write);
    return true;
  });
}

std::size_t Ledger::others_in_session(pid_t pid1, int64_t sid) const {
  Fd dir(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return 0;
  struct Proc {
    pid_t pid, ppid;
    int64_t sid;
  };
  std::vector<Proc> procs;
  DIR* d = ::fdopendir(::dup(dir.get()));
  if (d == nullptr) return 0;
  while (struct dirent* e = ::readdir(d)) {
    pid_t pid = 0;
    const std::string_view name(e->d_name);
    if (std::from_chars(name.data(), name.data() + name.size(), pid).ptr != name.data() + name.size() || pid <= 0)
      continue;
    Fd f(::openat(dir.get(), fmt::format("{}/status", pid).c_str(), O_RDONLY | O_CLOEXEC));
    if (!f) continue;
    char buf[4096];
    const ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n <= 0) continue;
    const std::string_view text(buf, static_cast<std::size_t>(n));
    const auto at = text.find("\nPPid:");
    if (at == std::string_view::npos) continue;
    std::string_view ppid_text = text.substr(at + 6);
    ppid_text.remove_prefix(std::min(ppid_text.find_first_not_of(" \t"), ppid_text.size()));
    pid_t ppid = 0;
    (void)std::from_chars(ppid_text.data(), ppid_text.data() + ppid_text.size(), ppid);
    procs.push_back(Proc{pid, ppid, session_id(text, depth_)});
  }
  ::closedir(d);
  std::map<pid_t, pid_t> parent;
  for (const auto& p : procs) parent[p.pid] = p.ppid;
  std::size_t others = 0;
  for (const auto& p : procs) {
    if (p.pid == pid1 || p.sid == sid) continue;
    pid_t up = p.ppid;
    for (int hops = 0; hops < 256 && up > 1 && up != pid1; ++hops) {
      auto it = parent.find(up);
      up = it == parent.end() ? 0 : it->second;
    }
    if (up == pid1) ++others;
  }
  return others;
}

ExecObservations Ledger::close(int64_t job) {
  const std::lock_guard lock(mutex_);
  auto it = execs_.find(job);
  if (it == execs_.end()) return {};
  ExecObservations out = std::move(it->second.obs);
  execs_.erase(it);
  open_count_ = static_cast<int>(execs_.size());
  if (execs_.empty()) unclaimed_.clear();
  out.listening = listening_.load();
  return out;
}

}  // namespace nsrun::session
