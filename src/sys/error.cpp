#include "sys/error.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>

#include <fmt/core.h>

namespace nsrun {

namespace {

constexpr std::string_view ellipsis = "\u2026";

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

void escape_into(std::string& out, std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7F) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += fmt::format("\\x{:02x}", u);
    }
  }
}

// The first `n` bytes of `s`, not ending inside a UTF-8 sequence.
std::string_view head_of(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s;
  while (n > 0 && continuation(s[n])) --n;
  return s.substr(0, n);
}

// The last `n` bytes of `s`, not starting inside a UTF-8 sequence.
std::string_view tail_of(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s;
  std::size_t from = s.size() - n;
  while (from < s.size() && continuation(s[from])) ++from;
  return s.substr(from);
}

std::string cut(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  const std::size_t keep = max > ellipsis.size() ? max - ellipsis.size() : 0;
  std::string out(head_of(s, keep));
  out += ellipsis;
  return out;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max) {
  std::string out;
  if (text.size() <= max) {
    escape_into(out, text);
    if (out.size() <= max) return out;
    out.clear();
  }
  // Escaping may grow a byte to four: cut first, on the raw text, so an
  // escape is never split.
  const std::size_t half = max / 8;
  escape_into(out, head_of(text, half));
  out += ellipsis;
  escape_into(out, tail_of(text, half));
  return out;
}

Error bounded(const Error& e, std::size_t max) {
  Error out = e;
  out.step = cut(e.step, max);
  out.path = cut(e.path, max);
  out.detail = cut(e.detail, max);
  return out;
}

std::string Error::message() const {
  std::string head = step;
  if (!path.empty()) {
    head += ' ';
    head += path;
  }
  if (!detail.empty() && err != 0) return printable(fmt::format("{}: {}: {}", head, detail, std::strerror(err)));
  if (!detail.empty()) return printable(fmt::format("{}: {}", head, detail));
  if (err != 0) return printable(fmt::format("{}: {}", head, std::strerror(err)));
  return printable(head);
}

int Error::exit_code() const {
  switch (kind) {
    case ErrorKind::not_found: return 127;
    case ErrorKind::not_exec: return 126;
    case ErrorKind::setup:
    case ErrorKind::usage: break;
  }
  return 125;
}

namespace {

struct OperationInfo {
  Operation op;
  std::string_view name;  // for tests and reports
  std::string_view step;  // as messages print it
  Phase phase;
};

// One row per operation, in the enum's order (checked below).
constexpr OperationInfo operations[] = {
    {Operation::other, "other", "", Phase::unknown},
    {Operation::find_source, "find-source", "", Phase::input},
    {Operation::socketpair, "socketpair", "socketpair", Phase::prepare},
    {Operation::receive, "receive", "receive", Phase::supervise},
    {Operation::setns_userns, "setns-userns", "setns userns", Phase::prepare},
    {Operation::setns_pidns, "setns-pidns", "setns pidns", Phase::prepare},
    {Operation::clone, "clone", "clone", Phase::start_pid1},
    {Operation::write_uid_map, "write-uid-map", "write", Phase::start_pid1},
    {Operation::write_gid_map, "write-gid-map", "write", Phase::start_pid1},
    {Operation::write_setgroups, "write-setgroups", "write", Phase::start_pid1},
    {Operation::setuid, "setuid", "setuid", Phase::start_pid1},
    {Operation::setgid, "setgid", "setgid", Phase::start_pid1},
    {Operation::sethostname, "sethostname", "sethostname", Phase::start_pid1},
    {Operation::die_with_parent, "die-with-parent", "die-with-parent", Phase::start_pid1},
    {Operation::info_fd, "info-fd", "info-fd", Phase::start_pid1},
    {Operation::json_status_fd, "json-status-fd", "json-status-fd", Phase::start_pid1},
    {Operation::userns_block_fd, "userns-block-fd", "userns-block-fd", Phase::start_pid1},
    {Operation::block_fd, "block-fd", "block-fd", Phase::build},
    {Operation::loopback_up, "loopback-up", "loopback up", Phase::start_pid1},
    {Operation::lock_open, "lock-open", "lock-file open", Phase::build},
    {Operation::lock_lock, "lock-lock", "lock-file lock", Phase::build},
    {Operation::setns_userns2, "setns-userns2", "setns userns2", Phase::build},
    {Operation::make_private, "make-private", "make private", Phase::build},
    {Operation::open, "open", "open", Phase::build},
    {Operation::mkdir, "mkdir", "mkdir", Phase::build},
    {Operation::create, "create", "create", Phase::build},
    {Operation::dup, "dup", "dup", Phase::build},
    {Operation::chmod, "chmod", "chmod", Phase::build},
    {Operation::symlink, "symlink", "symlink", Phase::build},
    {Operation::write, "write", "write", Phase::build},
    {Operation::stat, "stat", "stat", Phase::build},
    {Operation::statfs, "statfs", "statfs", Phase::build},
    {Operation::bind, "bind", "bind", Phase::build},
    {Operation::bind_fd, "bind-fd", "bind fd", Phase::build},
    {Operation::overlay_source, "overlay-source", "overlay source", Phase::build},
    {Operation::mount_proc, "mount-proc", "mount proc on", Phase::build},
    {Operation::mount_fs, "mount-fs", "", Phase::build},
    {Operation::mount_bind, "mount-bind", "", Phase::build},
    {Operation::mount_data, "mount-data", "mount data on", Phase::build},
    {Operation::mount_dest, "mount-dest", "mount on", Phase::build},
    {Operation::mount_layer, "mount-layer", "", Phase::build},
    {Operation::remount, "remount", "mount_setattr", Phase::build},
    {Operation::staging, "staging", "staging", Phase::build},
    {Operation::pivot_root, "pivot-root", "pivot_root", Phase::build},
    {Operation::chroot, "chroot", "chroot", Phase::build},
    {Operation::detach, "detach", "detach", Phase::build},
    {Operation::chdir, "chdir", "chdir", Phase::start_command},
    {Operation::read_capabilities, "read-capabilities", "read capabilities", Phase::confine},
    {Operation::drop_bounding, "drop-bounding", "drop bounding capability", Phase::confine},
    {Operation::clear_ambient, "clear-ambient", "clear ambient capabilities", Phase::confine},
    {Operation::drop_capabilities, "drop-capabilities", "drop capabilities", Phase::confine},
    {Operation::raise_ambient, "raise-ambient", "raise ambient capability", Phase::confine},
    {Operation::no_new_privs, "no-new-privs", "no_new_privs", Phase::confine},
    {Operation::landlock_create, "landlock-create", "landlock_create_ruleset", Phase::confine},
    {Operation::landlock_rule, "landlock-rule", "landlock rule", Phase::confine},
    {Operation::landlock_add_rule, "landlock-add-rule", "landlock_add_rule", Phase::confine},
    {Operation::landlock_restrict, "landlock-restrict", "landlock_restrict_self", Phase::confine},
    {Operation::seccomp_load, "seccomp-load", "seccomp", Phase::confine},
    {Operation::seccomp_read, "seccomp-read", "read seccomp data", Phase::input},
    {Operation::assert_userns_disabled, "assert-userns-disabled", "assert-userns-disabled", Phase::confine},
    {Operation::close_range, "close-range", "close_range", Phase::start_command},
    {Operation::pass_fd, "pass-fd", "pass fd", Phase::start_command},
    {Operation::setsid, "setsid", "setsid", Phase::start_command},
    {Operation::fork, "fork", "fork", Phase::start_command},
    {Operation::exec, "exec", "exec", Phase::start_command},
    {Operation::write_report, "write-report", "write report", Phase::report},
};
static_assert(std::size(operations) == operation_count, "one row per Operation");
consteval bool rows_in_order() {
  for (std::size_t i = 0; i < std::size(operations); ++i)
    if (static_cast<std::size_t>(operations[i].op) != i) return false;
  return true;
}
static_assert(rows_in_order(), "the rows follow the enum's order");

constexpr std::string_view phase_names[] = {
    "unknown", "input", "prepare", "choose-rung", "build", "start-pid1", "confine", "start-command", "supervise",
    "report",
};
static_assert(std::size(phase_names) == phase_count, "one name per Phase");

const OperationInfo& info(Operation op) { return operations[static_cast<std::size_t>(op)]; }

}  // namespace

std::string_view step_name(Operation op) { return info(op).step; }
Phase phase_of(Operation op) { return info(op).phase; }
std::string_view name(Operation op) { return info(op).name; }
std::string_view name(Phase phase) { return phase_names[static_cast<std::size_t>(phase)]; }

Error sys_error(Operation op, std::string_view path, int err) {
  return sys_error_named(op, std::string(step_name(op)), path, err);
}

Error sys_error(Operation op, std::string_view path, int err, std::string_view detail) {
  Error e = sys_error(op, path, err);
  e.detail = std::string(detail);
  return e;
}

Error sys_error_named(Operation op, std::string step, std::string_view path, int err) {
  Error e{std::move(step), err, std::string(path), {}, ErrorKind::setup};
  e.op = op;
  e.phase = phase_of(op);
  return e;
}

Error sys_error(std::string_view step, std::string_view path, int err) {
  return Error{std::string(step), err, std::string(path), {}, ErrorKind::setup};
}

Error usage_error(std::string_view what, std::string_view why) {
  Error e{std::string(what), 0, {}, std::string(why), ErrorKind::usage};
  e.phase = Phase::input;
  return e;
}

// Wire format: kind, operation and phase (1 byte each), errno and plan
// step (4 bytes each), then three length-prefixed strings. Fixed-width,
// host byte order: both ends are the same binary. The decoder trusts none
// of it: the bytes come from inside the sandbox.
namespace {
void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
bool get_u8(std::string_view& in, unsigned& v) {
  if (in.empty()) return false;
  v = static_cast<unsigned char>(in.front());
  in.remove_prefix(1);
  return true;
}
bool get_u32(std::string_view& in, uint32_t& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}
bool get_str(std::string_view& in, std::string& s) {
  uint32_t n = 0;
  if (!get_u32(in, n) || in.size() < n) return false;
  s.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}
Error channel_error(std::string_view why) {
  Error e{"channel", 0, {}, std::string(why)};
  e.phase = Phase::supervise;
  return e;
}
}  // namespace

std::string encode(const Error& e) {
  std::string out;
  out.push_back(static_cast<char>(e.kind));
  out.push_back(static_cast<char>(e.op));
  out.push_back(static_cast<char>(e.phase));
  put_u32(out, static_cast<uint32_t>(e.err));
  put_u32(out, e.plan_step);
  put_str(out, e.step);
  put_str(out, e.path);
  put_str(out, e.detail);
  return out;
}

Result<Error> decode_error(std::string_view in) {
  if (in.empty()) return fail(channel_error("empty error message"));
  Error e;
  unsigned kind = 0, op = 0, phase = 0;
  uint32_t err = 0;
  if (!get_u8(in, kind) || !get_u8(in, op) || !get_u8(in, phase) || !get_u32(in, err) ||
      !get_u32(in, e.plan_step) || !get_str(in, e.step) || !get_str(in, e.path) || !get_str(in, e.detail))
    return fail(channel_error("truncated error message"));
  if (!in.empty()) return fail(channel_error("trailing bytes after the error message"));
  // Out of range, a value would be an enumerator nothing handles: the
  // switches that decide on them would fall through every case.
  if (kind > static_cast<unsigned>(ErrorKind::not_exec)) return fail(channel_error("unknown error kind"));
  if (op >= operation_count) return fail(channel_error("unknown operation"));
  if (phase >= phase_count) return fail(channel_error("unknown phase"));
  if (e.plan_step != Error::no_plan_step && e.plan_step >= max_plan_steps)
    return fail(channel_error("plan step out of range"));
  if (err > 4095) return fail(channel_error("errno out of range"));
  e.kind = static_cast<ErrorKind>(kind);
  e.op = static_cast<Operation>(op);
  e.phase = static_cast<Phase>(phase);
  e.err = static_cast<int>(err);
  return e;
}

}  // namespace nsrun
