// Observed refusals: the default filter's refusing rules answer
// SECCOMP_RET_USER_NOTIF instead of an errno, and nsrun, outside the
// sandbox, receives each such call on the listener, records it and answers
// EPERM, so the command sees exactly what it saw before. Denied calls are
// rare, so the normal path pays nothing; each refused call costs one round
// trip to nsrun. (Answered with the rule's own errno: EPERM, or EACCES for
// AF_UNIX under --unix-sockets none.)
//
// Why this cannot be turned against the promise:
//  - nsrun only ever answers an errno: it never lets a call continue and never
//    reads the caller's memory, so nothing is decided on racy data.
//  - Among several filters' USER_NOTIF answers the newest filter's wins,
//    and its listener may let the call continue: a command able to load a
//    listening filter of its own could unlock what ours refuses. The
//    notifying variants therefore refuse seccomp(2) with
//    SECCOMP_FILTER_FLAG_NEW_LISTENER (an errno, which outranks every
//    notification). A filter of the command's without a listener makes
//    the call fail with ENOSYS: still refused.
//  - The process that loads the filter (PID 1, or the command itself before
//    exec) is never the one that serves it, and nothing it does between
//    the load and the exec is a notified call, so the launch cannot wait on
//    itself. When nsrun is gone the kernel answers ENOSYS: still refused.
#pragma once

#include <sys/types.h>

#include <linux/seccomp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "seccomp/filter.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

// Child side: loads `program` asking for a listener; the fd is O_CLOEXEC.
// Fails (the caller then loads the plain program) where the kernel has no
// USER_NOTIF or an outer sandbox refuses listeners.
Result<Fd> load_filter_listening(const BpfProgram& program);

// The kernel's sizes of seccomp_notif and seccomp_notif_resp (at least
// this build's).
struct NotifySizes {
  std::size_t notif = 0;
  std::size_t resp = 0;
};
const NotifySizes& notify_sizes();

struct Denial {
  std::string syscall;  // by name where the filter knows it, else "syscall N"
  int nr = -1;
  uint64_t count = 0;
  pid_t first_pid = 0;  // as nsrun sees it (the caller's PID namespace)
  std::string args;     // the first call's first three arguments, in hex
};

// One notification received from a listener, in a buffer of the kernel's
// size. Empty (errno set) when none could be taken: EINTR, or ENOENT when
// the caller died or was interrupted first.
class Notification {
 public:
  static Notification receive(int listener);
  explicit operator bool() const { return buf_ != nullptr; }
  const seccomp_notif& get() const { return *reinterpret_cast<const seccomp_notif*>(buf_.get()); }

 private:
  std::unique_ptr<unsigned char[]> buf_;
};

// A notification nsrun answers itself rather than with the rule's errno
// (connect() and listen() under --network proxy on the Landlock rung,
// net/connector.hpp). Returns true when it took the call and answered it.
using NotifyHandler = std::function<bool(int listener, const seccomp_notif& call)>;

class DenialLog {
 public:
  // `spec`: the filter the listener belongs to (its notify_spec()), whose
  // rules give each call's errno.
  explicit DenialLog(FilterSpec spec = {}) : spec_(std::move(spec)) {}
  // The same for the filter `key` names (none: no rules, EPERM): its
  // rules, notify_spec(filter_spec(*key)), are built at the first
  // notification instead of at every launch, which most launches never see
  // (12 to 23 µs and about 25 page faults a launch).
  explicit DenialLog(const std::optional<FilterKey>& key) : key_(key) {}
  // Receives one notification (if one is pending) and answers the rule's
  // errno (EPERM when no rule says otherwise).
  // Returns false when the listener has no more filter users.
  bool serve(int listener);
  // Answers one received notification with its rule's errno, and counts
  // it; returns its entry (this call's syscall, first seen as it says).
  const Denial& answer(int listener, const seccomp_notif& notif);
  const FilterSpec& spec() const;
  const std::vector<Denial>& denials() const { return denials_; }

 private:
  mutable std::optional<FilterKey> key_;  // set until spec() builds spec_
  mutable FilterSpec spec_;
  std::vector<Denial> denials_;
};

}  // namespace nsrun
