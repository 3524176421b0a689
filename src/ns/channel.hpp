// The child -> parent channel: a CLOEXEC SOCK_SEQPACKET pair. The sandbox's
// processes write at most one error to it; a successful exec closes the last
// copy of the child's end, so the parent reads end-of-file and knows the
// command is running.
#pragma once

#include <optional>
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

// Parent side: reads until end-of-file; returns the error the child sent,
// if any.
Result<std::optional<Error>> receive_until_eof(int fd);

}  // namespace nsrun
