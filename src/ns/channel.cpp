#include "ns/channel.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <array>

namespace nsrun {

namespace {
constexpr char error_tag = 'E';
}

Result<ChannelPair> make_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    return fail(sys_error("socketpair", "channel"));
  return ChannelPair{Fd(fds[0]), Fd(fds[1])};
}

void send_error(int fd, const Error& error) {
  std::string msg(1, error_tag);
  msg += encode(error);
  while (::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

Result<std::optional<Error>> receive_until_eof(int fd) {
  std::optional<Error> received;
  std::array<char, 65536> buf;
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("receive", "channel"));
    if (n == 0) return received;
    std::string_view msg(buf.data(), static_cast<std::size_t>(n));
    if (msg.front() != error_tag) continue;
    auto e = decode_error(msg.substr(1));
    if (!e) return fail(e.error());
    if (!received) received = std::move(*e);
  }
}

}  // namespace nsrun
