#include "ns/channel.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <array>

namespace nsrun {

namespace {
constexpr char error_tag = 'E';
constexpr char timeline_tag = 'T';

void send_tagged(int fd, char tag, std::string_view payload) {
  std::string msg(1, tag);
  msg += payload;
  while (::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}
}  // namespace

Result<ChannelPair> make_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0)
    return fail(sys_error("socketpair", "channel"));
  return ChannelPair{Fd(fds[0]), Fd(fds[1])};
}

void send_error(int fd, const Error& error) { send_tagged(fd, error_tag, encode(error)); }

void send_timeline(int fd, std::string_view encoded) { send_tagged(fd, timeline_tag, encoded); }

Result<ChildReport> receive_until_eof(int fd) {
  ChildReport received;
  std::array<char, 65536> buf;
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(sys_error("receive", "channel"));
    if (n == 0) return received;
    std::string_view msg(buf.data(), static_cast<std::size_t>(n));
    if (msg.front() == timeline_tag) received.timeline.assign(msg.substr(1));
    if (msg.front() != error_tag) continue;
    auto e = decode_error(msg.substr(1));
    if (!e) return fail(e.error());
    if (!received.error) received.error = std::move(*e);
  }
}

}  // namespace nsrun
