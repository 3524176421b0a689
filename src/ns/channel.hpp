// The child -> parent channel: a CLOEXEC SOCK_SEQPACKET pair. The sandbox's
// processes write at most one error to it; a successful exec closes the last
// copy of the child's end, so the parent reads end-of-file and knows the
// command is running.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun {

struct ChannelPair {
  Fd parent;
  Fd child;
};

Result<ChannelPair> make_channel();

// Child side: best effort, the child exits right after.
void send_error(int fd, const Error& error);
// Child side, just before exec: the encoded launch timeline.
void send_timeline(int fd, std::string_view encoded);

struct ChildReport {
  std::optional<Error> error;  // the first error the sandbox sent
  std::string timeline;        // encoded marks, when sent
  bool exec_next = false;      // the command reached its exec (ChannelBytes::exec_next)
};

// Parent side, in two halves. receive_raw() reads until end-of-file into
// buffers it holds, with raw system calls, allocating nothing (a rule from
// when PID 1 shared nsrun's memory; it now has its own, and only the
// command's start shares PID 1's, or the supervisor's); the caller can act
// on a failed receive before decode() builds the report.
struct ChannelBytes {
  std::array<char, 65536> error;  // the first error message, tag stripped
  std::size_t error_size = 0;
  bool has_error = false;
  std::array<char, 1024> timeline;
  std::size_t timeline_size = 0;
  // The timeline arrived: the command's last message, sent just before its
  // exec. End-of-file without it means the sandbox died in set-up.
  bool exec_next = false;
  int failed_errno = 0;           // the receive itself failed
};
void receive_raw(int fd, ChannelBytes& out);
Result<ChildReport> decode(const ChannelBytes& bytes);

// Both at once.
Result<ChildReport> receive_until_eof(int fd);

}  // namespace nsrun
