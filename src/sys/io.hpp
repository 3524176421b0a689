// Whole reads and writes on a file descriptor: short transfers and EINTR
// are retried here, once, instead of in every caller.
#pragma once

#include <string>
#include <string_view>

#include "sys/error.hpp"

namespace nsrun {

// Reads to end-of-file. Errors name `step` and `what` (a path or fd).
Result<std::string> read_all(int fd, std::string_view step, std::string_view what);

Result<void> write_all(int fd, std::string_view data, std::string_view step, std::string_view what);

}  // namespace nsrun
