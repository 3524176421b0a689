// The session's messages: one JSON object per SOCK_SEQPACKET packet (the
// kernel keeps the boundaries, so a message is never split or merged),
// descriptors beside it as SCM_RIGHTS. The same framing on the control
// socket (a caller's client and nsrun) and on the socketpair between nsrun
// and the sandbox's PID 1. docs/sessions.md is the reference.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "policy/json.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::session {

// A message larger than this is refused whole (the packet is truncated and
// the receiver sees MSG_TRUNC): no reader buffers more.
inline constexpr std::size_t max_message = 64 * 1024;
// Descriptors one message may carry: stdin, stdout, stderr.
inline constexpr std::size_t max_fds = 3;

Result<void> send_message(int sock, const json::Value& message, std::span<const int> fds = {});

struct Message {
  json::Value value;
  std::vector<Fd> fds;
  bool eof = false;  // the peer closed: `value` is null
};

// One message; up to `fds_allowed` descriptors (received CLOEXEC). More,
// a truncated packet, text that is not one JSON object: an error, with
// every received descriptor closed.
Result<Message> receive_message(int sock, std::size_t fds_allowed);

// Accessors that never throw on a hostile message.
const std::string* string_field(const json::Value& v, std::string_view key);
std::optional<int64_t> int_field(const json::Value& v, std::string_view key);
bool bool_field(const json::Value& v, std::string_view key);
// An array of strings (each without NUL), or nullopt.
std::optional<std::vector<std::string>> strings_field(const json::Value& v, std::string_view key);
json::Value strings_value(const std::vector<std::string>& items);

}  // namespace nsrun::session
