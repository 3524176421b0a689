// Typed errors: the ladder's decisions and the bwrap dialect's
// words come from an error's Operation, never from its text, and the error
// crosses the channel from PID 1 whole, or not at all.
#include <catch2/catch_test_macros.hpp>

#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/bwrap.hpp"
#include "launch/ladder.hpp"
#include "ns/channel.hpp"
#include "sys/error.hpp"

using namespace nsrun;

namespace {

std::vector<Operation> every_operation() {
  std::vector<Operation> all;
  for (std::size_t i = 0; i < operation_count; ++i) all.push_back(static_cast<Operation>(i));
  return all;
}

std::string classify(Operation op, int err, ProcMode proc = ProcMode::fresh) {
  return classify_namespace_failure(sys_error(op, "/x", err), proc);
}

}  // namespace

// ---- the ladder: one decision per reason code -----------------------------

TEST_CASE("ladder: a refused clone is the host's, to be diagnosed", "[unit][ladder][typed]") {
  for (int err : {EPERM, EINVAL, ENOSPC, EUSERS}) CHECK(classify(Operation::clone, err) == clone_refused);
  // Out of memory or a signal is not a refusal.
  CHECK(classify(Operation::clone, ENOMEM).empty());
  CHECK(classify(Operation::clone, EAGAIN).empty());
}

TEST_CASE("ladder: clone-refused becomes the namespace the host refused", "[unit][ladder][typed]") {
  const uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET;
  REQUIRE(classify(Operation::clone, EPERM) == clone_refused);
  CHECK(diagnose_clone(flags, [](uint64_t f) { return f == CLONE_NEWUSER ? EPERM : 0; }) == reason::userns_denied);
  CHECK(diagnose_clone(flags, [](uint64_t f) { return (f & CLONE_NEWNET) != 0 ? EPERM : 0; }) == reason::netns_denied);
  CHECK(diagnose_clone(flags, [](uint64_t) { return 0; }) == reason::ns_denied);
}

TEST_CASE("ladder: refused id maps are idmap-denied, whichever file", "[unit][ladder][typed]") {
  for (Operation op : {Operation::write_uid_map, Operation::write_gid_map, Operation::write_setgroups})
    for (int err : {EPERM, EACCES, EINVAL}) CHECK(classify(op, err) == reason::idmap_denied);
  CHECK(classify(Operation::write_uid_map, EIO).empty());
}

TEST_CASE("ladder: a refused fresh procfs is proc-masked", "[unit][ladder][typed]") {
  CHECK(classify(Operation::mount_proc, EPERM, ProcMode::fresh) == reason::proc_masked);
  // A bind of the host's /proc was asked for: its failure is not a mask.
  CHECK(classify(Operation::mount_proc, EPERM, ProcMode::host_bind).empty());
  CHECK(classify(Operation::mount_proc, ENODEV, ProcMode::fresh).empty());
}

TEST_CASE("ladder: every other operation's failure stays the user's (failed, never the next rung)",
          "[unit][ladder][typed]") {
  const std::set<Operation> moves{Operation::clone, Operation::write_uid_map, Operation::write_gid_map,
                                  Operation::write_setgroups, Operation::mount_proc,
                                  Operation::mount_layer};  // overlay-unavailable (cow_test.cpp)
  for (Operation op : every_operation()) {
    if (moves.contains(op)) continue;
    for (int err : {EPERM, EACCES, EINVAL, ENOENT, ENOSPC, EUSERS}) {
      INFO(name(op) << " errno " << err);
      CHECK(classify(op, err).empty());
    }
  }
}

TEST_CASE("ladder: the decision follows the operation, not the step's text", "[unit][ladder][typed]") {
  // The text of a step may be reworded; the decision must not move.
  Error renamed = sys_error_named(Operation::mount_proc, "attach a new procfs at", "/proc", EPERM);
  CHECK(classify_namespace_failure(renamed, ProcMode::fresh) == reason::proc_masked);
  // And text alone decides nothing: an untyped "mount proc on" or an open
  // of the uid map by some other step is no refusal of the host's.
  CHECK(classify_namespace_failure(sys_error("mount proc on", "/proc", EPERM), ProcMode::fresh).empty());
  CHECK(classify_namespace_failure(sys_error("clone", "CLONE_NEWUSER", EPERM), ProcMode::fresh).empty());
  CHECK(classify_namespace_failure(sys_error(Operation::open, "/proc/self/uid_map", EPERM), ProcMode::fresh).empty());
}

// ---- the native message: unchanged by the types ---------------------------

TEST_CASE("typed errors print the step text messages always had", "[unit][typed]") {
  CHECK(sys_error(Operation::mount_proc, "/proc", EPERM).message() == "mount proc on /proc: Operation not permitted");
  CHECK(sys_error(Operation::setns_userns, "3", EINVAL).message() == "setns userns 3: Invalid argument");
  CHECK(sys_error(Operation::remount, "/usr", EPERM).message() == "mount_setattr /usr: Operation not permitted");
  CHECK(sys_error(Operation::loopback_up, "RTM_NEWLINK lo", EPERM).message() ==
        "loopback up RTM_NEWLINK lo: Operation not permitted");
  CHECK(sys_error_named(Operation::write_uid_map, "open", "/proc/self/uid_map", EACCES).message() ==
        "open /proc/self/uid_map: Permission denied");
  CHECK(sys_error_named(Operation::mount_fs, "mount tmpfs on", "/tmp", ENOMEM).message() ==
        "mount tmpfs on /tmp: Cannot allocate memory");
  CHECK(sys_error(Operation::create, "/a/..", EINVAL, "'..' in a path to create").message() ==
        "create /a/..: '..' in a path to create: Invalid argument");
}

TEST_CASE("every operation and phase has a distinct name and a phase", "[unit][typed]") {
  std::set<std::string_view> names;
  for (Operation op : every_operation()) {
    CHECK(names.insert(name(op)).second);
    CHECK(static_cast<std::size_t>(phase_of(op)) < phase_count);
  }
  std::set<std::string_view> phases;
  for (std::size_t i = 0; i < phase_count; ++i) CHECK(phases.insert(name(static_cast<Phase>(i))).second);
  CHECK(phase_of(Operation::clone) == Phase::start_pid1);
  CHECK(phase_of(Operation::mount_proc) == Phase::build);
  CHECK(phase_of(Operation::seccomp_load) == Phase::confine);
  CHECK(phase_of(Operation::exec) == Phase::start_command);
  CHECK(usage_error("--ro", "x").phase == Phase::input);
}

// ---- the bwrap dialect: one wording per operation --------------------------

TEST_CASE("bwrap words: binds and sources", "[unit][bwrap][typed]") {
  Error missing = usage_error("--ro-bind", "No such file or directory");
  missing.path = "/src";
  missing.op = Operation::find_source;
  CHECK(bwrap_message(missing) == "Can't find source path /src: No such file or directory");
  missing.path.clear();
  CHECK(bwrap_message(missing) == missing.message());
  // An option named --bind is not what decides: an untyped usage error
  // keeps nsrun's words.
  Error untyped = usage_error("--bind", "not an absolute path");
  untyped.path = "rel";
  CHECK(bwrap_message(untyped) == "--bind rel: not an absolute path");
  CHECK(bwrap_message(sys_error(Operation::bind, "/x", ENOENT)) == "Can't find source path /x: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::bind, "/x", EACCES)) == "Can't bind mount /x: Permission denied");
  CHECK(bwrap_message(sys_error(Operation::overlay_source, "/l", ENOENT)) ==
        "Can't find source path /l: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::overlay_source, "/l", EPERM)) == "Can't bind mount /l: Operation not permitted");
}

TEST_CASE("bwrap words: mounts", "[unit][bwrap][typed]") {
  CHECK(bwrap_message(sys_error(Operation::mount_proc, "/proc", EPERM)) ==
        "Can't mount proc on /newroot/proc: Operation not permitted");
  CHECK(bwrap_message(sys_error_named(Operation::mount_fs, "mount tmpfs on", "/tmp", ENOMEM)) ==
        "Can't mount tmpfs on /newroot/tmp: Cannot allocate memory");
  CHECK(bwrap_message(sys_error_named(Operation::mount_bind, "mount /usr on", "/usr", EPERM)) ==
        "Can't bind mount /usr on /newroot/usr: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::mount_data, "/etc/x", EPERM)) ==
        "Can't bind mount data on /newroot/etc/x: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::mount_dest, "/d", ELOOP)) ==
        "Can't mount on on /newroot/d: Too many levels of symbolic links");
  CHECK(bwrap_message(sys_error(Operation::remount, "/usr", EPERM)) ==
        "Can't remount readonly on /newroot/usr: Operation not permitted");
}

TEST_CASE("bwrap words: namespaces and id maps", "[unit][bwrap][typed]") {
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWUSER", EINVAL), true)
            .starts_with("Creating new namespace failed, likely because the kernel does not support user namespaces."));
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWUSER", EPERM), true)
            .starts_with("No permissions to create a new namespace"));
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWNS", EPERM), false) ==
        "Creating new namespace failed: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWNS", ENOSPC), false) ==
        "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)");
  CHECK(bwrap_message(sys_error_named(Operation::write_uid_map, "open", "/proc/self/uid_map", EACCES)) ==
        "setting up uid map: Permission denied");
  CHECK(bwrap_message(sys_error(Operation::write_gid_map, "/proc/self/gid_map", EPERM)) ==
        "setting up gid map: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::write_setgroups, "/proc/self/setgroups", EPERM)) ==
        "error writing to setgroups: Operation not permitted");
  // setns_userns, setns_userns2, setns_pidns and setuid: bwrap_test.cpp.
  CHECK(bwrap_message(sys_error(Operation::setgid, "6", EPERM)) == "unable to switch to gid 6: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::sethostname, "h", EPERM)) == "sethostname: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::assert_userns_disabled, {}, 0, "creating a user namespace still works")) ==
        "creation of new user namespaces was not disabled as requested");
}

TEST_CASE("bwrap words: files in the new root", "[unit][bwrap][typed]") {
  CHECK(bwrap_message(sys_error(Operation::mkdir, "/a", EROFS)) == "Can't mkdir /a: Read-only file system");
  CHECK(bwrap_message(sys_error(Operation::create, "/f", EEXIST)) == "Can't create file at /f: File exists");
  CHECK(bwrap_message(sys_error(Operation::chmod, "/f", EPERM)) == "Can't chmod /f: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::symlink, "/l", EEXIST)) == "Can't make symlink at /l: File exists");
  CHECK(bwrap_message(sys_error(Operation::symlink, "/l", 0, "existing destination is a")) ==
        "Can't make symlink at /l: existing destination is a");
  CHECK(bwrap_message(sys_error(Operation::chdir, "/n", ENOENT)) == "Can't chdir to /n: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::exec, "nope", ENOENT)) == "execvp nope: No such file or directory");
}

TEST_CASE("bwrap words: seccomp, status fds, locks, block fds", "[unit][bwrap][typed]") {
  CHECK(bwrap_message(sys_error(Operation::seccomp_load, "", EINVAL))
            .starts_with("Unable to set up system call filtering as requested"));
  CHECK(bwrap_message(sys_error(Operation::seccomp_load, "", EACCES)) == "prctl(PR_SET_SECCOMP): Permission denied");
  CHECK(bwrap_message(sys_error(Operation::seccomp_read, "3", EINVAL)) == "Invalid seccomp data, must be multiple of 8");
  CHECK(bwrap_message(sys_error(Operation::seccomp_read, "3", EBADF)) == "Can't read seccomp data: Bad file descriptor");
  CHECK(bwrap_message(sys_error(Operation::info_fd, "3", EPIPE)) == "Write to info_fd: Broken pipe");
  CHECK(bwrap_message(sys_error(Operation::json_status_fd, "3", EPIPE)) == "Write to json_status_fd: Broken pipe");
  CHECK(bwrap_message(sys_error(Operation::lock_open, "/l", ENOENT)) ==
        "Unable to open lock file /l: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::lock_lock, "/l", EAGAIN)) ==
        "Unable to lock file /l: Resource temporarily unavailable");
  CHECK(bwrap_message(sys_error(Operation::block_fd, "3", EIO)) == "Reading from --block-fd: Input/output error");
  CHECK(bwrap_message(sys_error(Operation::userns_block_fd, "3", EIO)) ==
        "Reading from --userns-block-fd: Input/output error");
}

TEST_CASE("bwrap words: an operation bwrap has no words for keeps nsrun's message", "[unit][bwrap][typed]") {
  for (Operation op : {Operation::other, Operation::pivot_root, Operation::open, Operation::landlock_restrict,
                       Operation::no_new_privs, Operation::fork, Operation::write_report}) {
    const Error e = sys_error_named(op, "some step", "/p", EPERM);
    INFO(name(op));
    CHECK(bwrap_message(e) == e.message());
  }
}

// ---- the channel: whole, or refused ---------------------------------------

TEST_CASE("channel: a typed error crosses whole", "[unit][channel][typed]") {
  Error e = sys_error_named(Operation::mount_bind, "mount /src on", "/dest", EACCES);
  e.detail = "some detail";
  e.plan_step = 7;
  e.kind = ErrorKind::not_exec;
  // The two halves nsrun's supervisor uses: raw bytes first, then decode.
  ChannelPair channel = *make_channel();
  send_error(channel.child.get(), e);
  channel.child.reset();
  auto bytes = std::make_unique<ChannelBytes>();
  receive_raw(channel.parent.get(), *bytes);
  auto report = decode(*bytes);
  REQUIRE((report && report->error));
  const Error& back = *report->error;
  CHECK(back.step == e.step);
  CHECK(back.path == e.path);
  CHECK(back.detail == e.detail);
  CHECK(back.err == EACCES);
  CHECK(back.kind == ErrorKind::not_exec);
  CHECK(back.op == Operation::mount_bind);
  CHECK(back.phase == Phase::build);
  CHECK(back.plan_step == 7u);
  CHECK(back.message() == e.message());
}

TEST_CASE("channel: every operation and phase round-trips", "[unit][channel][typed]") {
  for (Operation op : every_operation()) {
    for (std::size_t p = 0; p < phase_count; ++p) {
      Error e = sys_error(op, "/p", EPERM);
      e.phase = static_cast<Phase>(p);
      auto back = decode_error(encode(e));
      REQUIRE(back);
      CHECK(back->op == op);
      CHECK(back->phase == e.phase);
      CHECK(back->plan_step == Error::no_plan_step);
    }
  }
}

TEST_CASE("channel: malformed or out-of-range bytes are a protocol error", "[unit][channel][typed]") {
  Error e = sys_error(Operation::clone, "CLONE_NEWUSER", EPERM);
  e.plan_step = 3;
  const std::string good = encode(e);
  REQUIRE(decode_error(good));
  auto refused = [](std::string bytes) {
    auto r = decode_error(bytes);
    if (r) return std::string("accepted");
    CHECK(r.error().step == "channel");
    return r.error().detail;
  };
  CHECK(refused("") == "empty error message");
  for (std::size_t n = 1; n < good.size(); ++n) CHECK(refused(good.substr(0, n)) == "truncated error message");
  CHECK(refused(good + "x") == "trailing bytes after the error message");

  // Byte 0 is the kind, 1 the operation, 2 the phase; then errno and the
  // plan step, 4 bytes each.
  auto with_byte = [&](std::size_t at, unsigned value) {
    std::string b = good;
    b[at] = static_cast<char>(value);
    return b;
  };
  CHECK(refused(with_byte(0, 4)) == "unknown error kind");
  CHECK(refused(with_byte(0, 0xFF)) == "unknown error kind");
  CHECK(refused(with_byte(1, operation_count)) == "unknown operation");
  CHECK(refused(with_byte(1, 0xFF)) == "unknown operation");
  CHECK(refused(with_byte(2, phase_count)) == "unknown phase");
  CHECK(refused(with_byte(2, 0xFF)) == "unknown phase");
  auto with_u32 = [&](std::size_t at, uint32_t value) {
    std::string b = good;
    std::memcpy(b.data() + at, &value, sizeof value);
    return b;
  };
  CHECK(refused(with_u32(3, 4096)) == "errno out of range");
  CHECK(refused(with_u32(3, 0xFFFFFFFF)) == "errno out of range");
  CHECK(refused(with_u32(7, max_plan_steps)) == "plan step out of range");
  CHECK(decode_error(with_u32(7, Error::no_plan_step)));
  // A string length beyond the message.
  CHECK(refused(with_u32(11, 0xFFFFFFF0)) == "truncated error message");

  // Any single byte changed: refused, or decoded to values in range.
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (unsigned v : {0u, 1u, 0x7Fu, 0x80u, 0xFEu, 0xFFu}) {
      auto r = decode_error(with_byte(at, v));
      if (!r) continue;
      CHECK(static_cast<std::size_t>(r->op) < operation_count);
      CHECK(static_cast<std::size_t>(r->phase) < phase_count);
      CHECK(static_cast<unsigned>(r->kind) <= static_cast<unsigned>(ErrorKind::not_exec));
    }
  }
}

TEST_CASE("channel: a refused error from the sandbox reaches nsrun as a channel error", "[unit][channel][typed]") {
  ChannelPair channel = *make_channel();
  // What a confused or hostile child could write: the tag, then garbage.
  std::string msg = "E";
  msg += std::string(3, '\xFF');
  REQUIRE(::send(channel.child.get(), msg.data(), msg.size(), 0) == static_cast<ssize_t>(msg.size()));
  channel.child.reset();
  auto received = receive_until_eof(channel.parent.get());
  REQUIRE_FALSE(received);
  CHECK(received.error().step == "channel");
}
