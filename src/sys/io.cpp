#include "sys/io.hpp"

#include <unistd.h>

namespace nsrun {

Result<std::string> read_all(int fd, std::string_view step, std::string_view what) {
  std::string out;
  char buf[16384];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error(step, what));
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
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
