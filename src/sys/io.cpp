#include "sys/io.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

namespace nsrun {

Result<std::string> read_all(int fd, std::string_view step, std::string_view what, std::size_t max) {
  std::string out;
  char buf[16384];
  while (true) {
    // At most one byte past the limit, enough to know it was passed.
    const std::size_t want = std::min(sizeof buf, max + 1 - out.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error(step, what));
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max) {
      Error e = sys_error(step, what, EFBIG);
      e.kind = ErrorKind::usage;
      e.detail = fmt::format("more than {} bytes", max);
      return fail(std::move(e));
    }
  }
}

Result<void> write_all(int fd, std::string_view data, std::string_view step, std::string_view what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error(step, what));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace nsrun
