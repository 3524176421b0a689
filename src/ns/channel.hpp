// The child -> parent channel: a CLOEXEC SOCK_SEQPACKET pair. The sandbox's
// processes write at most one error to it; a successful exec closes the last
// copy of the child's end, so the parent reads end-of-file and knows the
// command is running.
#pragma once

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
};

// Parent side: reads until end-of-file.
Result<ChildReport> receive_until_eof(int fd);

}  // namespace nsrun
