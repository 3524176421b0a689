// Errors are values. An Error names the launch step that failed, the path it
// was working on and the errno the kernel gave, so that one line can tell the
// user exactly what went wrong, even when the failure happened in a child
// process and crossed a socket to reach the parent. It also carries the
// step as a typed Operation and the launch Phase: the ladder and the bwrap
// dialect decide on those with exhaustive switches, so renaming a step's
// text cannot change a decision.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace nsrun {

// What the failure means for the exit status and for the ladder.
enum class ErrorKind : unsigned char {
  setup,       // nsrun could not build the sandbox (exit 125)
  usage,       // bad input: options, policy, paths (exit 125, nothing ran)
  not_found,   // the command was not found (exit 127)
  not_exec,    // the command was found but could not be executed (exit 126)
};

// The launch phases, in order (docs/ladder.md). An error carries the one it
// happened in, so a message or a report can say how far the launch got.
enum class Phase : unsigned char {
  unknown,        // not attributed (a helper outside the launch, e.g. the benchmark)
  input,          // options, the policy JSON, paths: nothing ran
  prepare,        // in nsrun before the clone: the channel, joined namespaces
  choose_rung,    // the ladder deciding which rung runs
  build,          // the new root: mounts, binds, files, pivot_root
  start_pid1,     // the clone and PID 1's own set-up: id maps, uid, hostname
  confine,        // capabilities, no_new_privs, Landlock, seccomp
  start_command,  // fds, working directory, the command's fork and exec
  supervise,      // nsrun waiting on the sandbox and its channel
  report,         // writing --report / --report-fd
};
inline constexpr std::size_t phase_count = static_cast<std::size_t>(Phase::report) + 1;

// The named steps whose failure someone decides on: the ladder (which host
// refusal moves it to the next rung) and the bwrap dialect (bwrap's
// wording). Each has the step text the native message prints, unchanged
// from when steps were plain strings. `other` is a step nothing decides on;
// its text is the Error's own `step`.
enum class Operation : unsigned char {
  other,
  // usage: a bind's or overlay's source (or path) the front end cannot use
  find_source,
  // nsrun before the clone
  socketpair, receive, setns_userns, setns_pidns,
  // PID 1
  clone, write_uid_map, write_gid_map, write_setgroups, setuid, setgid, sethostname, die_with_parent,
  info_fd, json_status_fd, userns_block_fd, block_fd, loopback_up, lock_open, lock_lock, setns_userns2,
  // the new root
  make_private, open, mkdir, create, dup, chmod, symlink, write, stat, statfs, bind, bind_fd, overlay_source,
  mount_proc,  // "mount proc on": a fresh procfs (the kernel's "too revealing" rule)
  mount_fs,    // "mount <type> on": another fresh file system
  mount_bind,  // "mount <source> on": a bind's clone attached
  mount_data,  // "mount data on": a file made from data, attached
  mount_dest,  // "mount on": the destination opened, through no symlink
  mount_layer, // "mount overlay on": a copy-on-write layer (src/layers/)
  remount,     // "mount_setattr": read-only and the other flags
  staging, pivot_root, chroot, detach, chdir,
  // confinement
  read_capabilities, drop_bounding, clear_ambient, drop_capabilities, raise_ambient, no_new_privs,
  landlock_create, landlock_rule, landlock_add_rule, landlock_restrict, seccomp_load, seccomp_read,
  assert_userns_disabled,
  // the command
  close_range, pass_fd, setsid, fork, exec,
  // the report
  write_report,
};
inline constexpr std::size_t operation_count = static_cast<std::size_t>(Operation::write_report) + 1;

// The step text of `op` as messages print it ("mount proc on", "setns
// userns"); empty for `other` and for the steps whose text names the thing
// mounted (mount_fs, mount_bind).
std::string_view step_name(Operation op);
// The phase an operation belongs to when nothing more precise is known.
Phase phase_of(Operation op);
// Short names, for tests, reports and explain: "start-pid1", "mount-proc".
std::string_view name(Phase phase);
std::string_view name(Operation op);

struct Error {
  std::string step;    // the named launch step or the option / field at fault
  int err = 0;         // errno, 0 when the failure is not a system call's
  std::string path;    // the path concerned, may be empty
  std::string detail;  // anything else worth saying, may be empty
  ErrorKind kind = ErrorKind::setup;
  // What decisions are made on: never on the text above.
  Operation op = Operation::other;
  Phase phase = Phase::unknown;
  // The index (from 0) of the mount plan's step that failed, or
  // no_plan_step; `nsrun explain` lists the same steps counting from 1.
  uint32_t plan_step = no_plan_step;
  static constexpr uint32_t no_plan_step = UINT32_MAX;

  // "<step> <path>: <detail or strerror>", printable() (one line).
  std::string message() const;
  int exit_code() const;
};

template <class T = void>
using Result = std::expected<T, Error>;

// A failed system call: captures errno at the call site. The typed form
// takes its step text and phase from the operation; the string form is for
// steps nothing decides on (Operation::other).
Error sys_error(Operation op, std::string_view path = {}, int err = errno);
Error sys_error(std::string_view step, std::string_view path = {}, int err = errno);
// The same with a detail (what was wrong beyond the errno).
Error sys_error(Operation op, std::string_view path, int err, std::string_view detail);
// The same with step text of its own: a mount names what it mounts, and
// the id map files are opened, then written.
Error sys_error_named(Operation op, std::string step, std::string_view path, int err);

// Bad input: an option, a policy field or a path that cannot be used.
Error usage_error(std::string_view what, std::string_view why);

inline std::unexpected<Error> fail(Error e) { return std::unexpected<Error>(std::move(e)); }

// Text as nsrun prints it, always one line: control bytes (a newline or an
// escape sequence in a path) are written as \n, \t, \r or \xHH, so a
// file name cannot forge a second message or drive the terminal; text
// longer than `max` bytes keeps its head and tail around an ellipsis ("…"),
// so the step and the errno at either end stay visible. Backslashes are
// left alone: applying it twice changes nothing.
inline constexpr std::size_t printable_max = 8192;
std::string printable(std::string_view text, std::size_t max = printable_max);

// The error with each string field cut to at most `max` bytes (an ellipsis
// marks a cut), for a channel whose messages have a size limit.
Error bounded(const Error& e, std::size_t max);

// Serialisation for the child -> parent channel. decode_error() refuses
// (as a channel error) bytes no encode() made: an unknown kind, operation
// or phase, a plan step beyond max_plan_steps, a truncated field or
// trailing bytes.
inline constexpr uint32_t max_plan_steps = 1u << 20;
std::string encode(const Error& e);
Result<Error> decode_error(std::string_view bytes);

}  // namespace nsrun
