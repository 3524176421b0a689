// --watch-writes: the command's write-intent calls, observed.
//
// The command's write-intent calls (open* with a write or create flag,
// creat, mkdir*, mknod*, unlink*, rmdir, rename*, link*, symlink*,
// *chmod*, *chown*, truncate) are sent to nsrun, which reads the path the
// command named, resolves it as the command sees it (its cwd or dirfd
// through /proc/PID/cwd and /proc/PID/fd/N) and answers
// SECCOMP_USER_NOTIF_FLAG_CONTINUE: the call then runs exactly as it would
// have without the watch, against the mounts and the Landlock ruleset.
//
// Why it decides nothing:
//  - The path is read from the command's memory while the call waits; any
//    other thread of the command may rewrite it before the kernel reads it
//    (the TOCTOU seccomp_unotify(2) warns of). So the path is an
//    observation, never a reason.
//  - One listener per task: a second SECCOMP_FILTER_FLAG_NEW_LISTENER in
//    a task's filter chain fails with EBUSY (kernel/seccomp.c,
//    has_duplicate_listener()). So the watch's rules join the default
//    filter's notifying variant (notify_watch_spec()), and nsrun tells a
//    refusal from an observation by the call's number and registers, as
//    the filter saw them: watch_continues() continues only a watched call
//    no refusing rule matches; everything else gets its errno.
//  - Without a notifying variant (--seccomp log, none) the watch is a
//    filter of its own with the listener, loaded before the plain one: the
//    kernel keeps the most restrictive action of all filters, and an errno
//    outranks a notification.
//  - Calls of another ABI pass the watch (the default filter refuses them);
//    plain reads (open without O_WRONLY|O_RDWR|O_CREAT|O_TRUNC) never leave
//    the kernel: the flags are tested in BPF. openat2 keeps its flags in
//    memory, so every openat2 is sent and the flags read there.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <linux/seccomp.h>

#include "policy/write_scope.hpp"
#include "seccomp/rules.hpp"

namespace nsrun {

// The watch filter's rules: every one notifies; other ABIs are allowed.
// Loaded on its own only where the default filter has no notifying
// variant (--seccomp log or none): the kernel allows one listener per
// task (a second SECCOMP_FILTER_FLAG_NEW_LISTENER in the same chain is
// EBUSY), so otherwise the rules join the notifying variant instead.
FilterSpec watch_writes_spec();

// The notifying variant `notify` (notify_spec()) with the watch's rules
// added: one program, one listener for refusals and observations.
// Disabled when `notify` is.
FilterSpec notify_watch_spec(const FilterSpec& notify);

// The protect guard: without --watch-writes, on the namespace rung, when
// a writable root has protected paths. A protected path that exists is a
// read-only bind on itself, and the kernel answers a rename onto (or of)
// a mount point EBUSY before it looks at the mount's flags: git's atomic
// update (`config.lock` renamed over `config`) then reads "Device or
// resource busy", a riddle. The guard sends rename, renameat and
// renameat2 to nsrun, which answers EROFS when a path the call names is
// protected and CONTINUE otherwise. It decides nothing the mounts do not:
// a path rewritten by another thread after nsrun read it only turns
// EROFS into the kernel's EBUSY, or an allowed rename into EROFS (the
// command's own loss). Only renames: unlink and rmdir of a protected
// path still read EBUSY (rare in practice, and each notified call is a
// round trip).
FilterSpec protect_guard_spec();
// The notifying variant `notify` with the guard's rules added.
FilterSpec notify_guard_spec(const FilterSpec& notify);

// The errno nsrun answers for one guarded call whose paths (absolute, as
// the command sees them) are `paths`: EROFS when one is protected in
// `scope` (namespace rung), 0 (continue) otherwise. Pure.
int guard_errno(const WriteScope& scope, std::string_view syscall, const std::vector<std::string>& paths);

// Whether nsrun may answer one notification with CONTINUE: only a watched
// call that `deny` (the notifying variant's rules, as compiled) does not
// refuse, decided from the registers the filter saw, never from memory.
// Everything else is a refusal, answered with its errno (fail closed).
bool watch_continues(const FilterSpec& deny, std::string_view syscall, const std::array<uint64_t, 6>& args);

// One observed attempt at a path outside the writable roots (or at a
// protected path inside one). Racy by nature: see above.
struct WriteAttempt {
  std::string path;     // as the command saw it, made absolute and lexically normal
  std::string syscall;
  WritePlace where = WritePlace::outside;
  uint64_t count = 0;
  pid_t first_pid = 0;  // as nsrun sees it
  std::string protected_entry;  // protected: the entry of the set it lies in (for --unprotect)
  int refused = 0;              // the errno nsrun answered instead of letting it run (the guard)
};

class WriteLog {
 public:
  explicit WriteLog(WriteScope scope) : scope_(std::move(scope)) {}
  // For one received notification that watch_continues(): reads its paths,
  // answers CONTINUE (or the guard's EROFS, guard_errno()), then records
  // what lies outside the scope; `recorded`, when given, gets this call's
  // attempts (count 1 each).
  void answer(int listener, const seccomp_notif& notif, std::vector<WriteAttempt>* recorded = nullptr);
  // The Landlock rung's private TMPDIR, learnt when the listener arrives.
  void set_private_tmpdir(std::string dir) { scope_.tmpdir = std::move(dir); }
  const std::vector<WriteAttempt>& attempts() const { return attempts_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void record(std::string path, std::string_view syscall, pid_t pid, int refused, std::vector<WriteAttempt>* recorded);

  WriteScope scope_;
  std::vector<WriteAttempt> attempts_;
  uint64_t dropped_ = 0;  // attempts at distinct paths beyond the cap
};

// The shape of one watched call: which arguments name the paths written.
struct PathArg {
  int dirfd = -1;  // argument index of the directory fd; -1: the cwd (AT_FDCWD)
  int path = -1;   // argument index of the path pointer; -1: none
};
struct WriteCallShape {
  std::string_view syscall;
  PathArg first{};
  PathArg second{};     // rename*: the new name too
  int fd = -1;          // fchmod, fchown: the fd itself is the target
  int flags = -1;       // argument holding AT_EMPTY_PATH (fchownat, fchmodat2)
  int open_how = -1;    // openat2: struct open_how *
};
// nullptr for a call not watched.
const WriteCallShape* write_call_shape(std::string_view syscall);

// `path` made absolute against `base` (the cwd or dirfd as /proc shows
// it) and lexically normal: no ".", "..", or repeated '/'. Pure.
std::string resolve_path(std::string_view base, std::string_view path);

}  // namespace nsrun
