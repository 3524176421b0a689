// Whole reads and writes on a file descriptor: short transfers and EINTR
// are retried here, once, instead of in every caller.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sys/error.hpp"

namespace nsrun {

// The most nsrun reads from one input it holds in memory whole: a policy
// file, bwrap's --args, --file / --bind-data contents. Without a cap,
// `--policy /dev/zero` grew a string until std::bad_alloc aborted nsrun.
inline constexpr std::size_t max_input_bytes = std::size_t{16} << 20;  // 16 MiB

// Reads to end-of-file, at most `max` bytes: one byte more fails with EFBIG
// (the detail names the limit), before more memory is taken. Errors name
// `step` and `what` (a path or fd).
Result<std::string> read_all(int fd, std::string_view step, std::string_view what, std::size_t max);

Result<void> write_all(int fd, std::string_view data, std::string_view step, std::string_view what);

}  // namespace nsrun
