// What a session's nsrun saw refused, attributed to the exec that asked
// for a report (`nsrun exec --report/--verdict`, docs/sessions.md).
//
// - Calls the session's listener refused (seccomp denials, the protect
//   guard's EROFS) are attributed by the caller's session id in the
//   session's PID namespace, read from /proc/PID/status (NSsid) while the
//   call waits (the command's name, on the Name line, has its newlines
//   escaped by the kernel: no line of it can pass for NSsid): every
//   command of a session is started in a session of its
//   own, whose id is its pid, and a process can leave its session
//   (setsid) but never join another. The id is not reused while a process
//   of that session lives. A call refused before nsrun has learnt the
//   command's pid is kept aside (bounded) and claimed by it.
// - The egress proxy's decisions carry no process: they are attributed by
//   time, every denial made from the exec's request to its end.
// Everything here is bounded: a command flooding refusals fills a capped
// list and a count.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "launch/watch.hpp"
#include "net/egress.hpp"
#include "seccomp/notify.hpp"
#include "seccomp/writes.hpp"

namespace nsrun::session {

// Distinct entries one exec keeps of each kind; more are counted only.
inline constexpr std::size_t max_exec_entries = 64;
// Calls of a session id no exec has claimed yet, kept while an exec's id is
// not known yet; past this the oldest go (uncounted, never misattributed).
inline constexpr std::size_t max_unclaimed = 256;

struct ExecObservations {
  std::vector<Denial> denials;
  std::vector<WriteAttempt> writes;        // the protect guard's refusals
  std::vector<egress::Decision> egress;    // denied decisions in the window, one per host, port and reason
  uint64_t dropped = 0;                    // refusals past max_exec_entries distinct ones (counted, not listed)
  uint64_t writes_dropped = 0;             // --watch-writes: observations past max_exec_entries distinct ones
  bool listening = false;                  // the session's listener was had
};

class Ledger final : public NotifyTap {
 public:
  // `depth`: how many PID namespaces nsrun's /proc shows above and at
  // nsrun's own (the session's is the next one).
  void set_depth(int depth) { depth_ = depth; }

  // NotifyTap (the watch loop's thread).
  int64_t identify(pid_t pid) override;
  void denial(int64_t who, const seccomp_notif& call, const Denial& d) override;
  void write(int64_t who, const WriteAttempt& w) override;
  void listening() override { listening_ = true; }
  // The egress proxy's observer (its reader's thread).
  void decision(const egress::Decision& d);

  // The serving thread: an exec asked for a report (its window opens) ...
  void expect(int64_t job);
  // ... its command runs with session id `sid` ...
  void open(int64_t job, int64_t sid);
  // ... and ended: what was attributed to it.
  ExecObservations close(int64_t job);

  // The session id in the session's PID namespace of the process whose
  // /proc/PID/status text is `status`, at level `depth` (0 when none). Pure.
  static int64_t session_id(std::string_view status, int depth);

  // How many processes below `pid1` (nsrun's view of the session's PID 1:
  // every process of the session descends from it, orphans are its
  // children) are in another session than `sid`, now: what an earlier
  // command left running. A snapshot of /proc.
  std::size_t others_in_session(pid_t pid1, int64_t sid) const;

 private:
  struct Entry {
    int64_t sid = 0;  // 0: not known yet
    uint64_t since_ns = 0;
    ExecObservations obs;
  };
  struct Unclaimed {
    int64_t sid;
    uint64_t at_ns;
    bool is_denial;
    Denial denial;
    WriteAttempt write;
  };
  Entry* by_sid(int64_t sid);
  bool pending() const;  // an exec whose session id is not known yet
  void add_denial(Entry& e, const Denial& d);
  void add_write(Entry& e, const WriteAttempt& w);

  std::mutex mutex_;
  std::atomic<int> open_count_{0};
  std::atomic<bool> listening_{false};
  int depth_ = 1;
  std::map<int64_t, Entry> execs_;  // by job
  std::deque<Unclaimed> unclaimed_;
};

}  // namespace nsrun::session
