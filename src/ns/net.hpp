// Network namespace: `--network none` on the namespace rung is a new network
// namespace holding only the loopback device, brought up from the child
// with rtnetlink (no `ip` binary exists inside, nor should one be needed).
#pragma once

#include "sys/error.hpp"

namespace nsrun {

// Child side, after the id maps (CAP_NET_ADMIN over the new network
// namespace comes from the new user namespace that owns it). The kernel
// gives `lo` 127.0.0.1/8 and ::1 by itself when it goes up. A `lo` that is
// already up (gVisor configures it) is not an error.
Result<void> bring_up_loopback();

}  // namespace nsrun
