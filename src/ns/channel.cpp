#include "ns/channel.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "sys/raw.hpp"

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
    return fail(sys_error(Operation::socketpair, "channel"));
  return ChannelPair{Fd(fds[0]), Fd(fds[1])};
}

// A message longer than the parent's buffer would arrive cut (and one
// longer than the socket's send buffer not at all: a 1 MiB command name
// once left the parent with an exit status and no message). Each field is
// cut to a third of the buffer instead, visibly, so the error arrives whole.
void send_error(int fd, const Error& error) {
  constexpr std::size_t field_max = (sizeof(ChannelBytes::error) - 64) / 3;
  send_tagged(fd, error_tag, encode(bounded(error, field_max)));
}

void send_timeline(int fd, std::string_view encoded) { send_tagged(fd, timeline_tag, encoded); }

void receive_raw(int fd, ChannelBytes& out) {
  char buf[65536];
  while (true) {
    const long n = sys::raw(SYS_recvfrom, fd, buf, sizeof buf, 0, nullptr, nullptr);
    if (n == -EINTR) continue;
    if (n < 0) {
      out.failed_errno = static_cast<int>(-n);
      return;
    }
    if (n == 0) return;
    const std::string_view msg(buf, static_cast<std::size_t>(n));
    if (msg.front() == timeline_tag) {
      out.exec_next = true;
      out.timeline_size = msg.copy(out.timeline.data(), out.timeline.size(), 1);
    } else if (msg.front() == error_tag && !out.has_error) {
      out.has_error = true;
      out.error_size = msg.copy(out.error.data(), out.error.size(), 1);
    }
  }
}

Result<ChildReport> decode(const ChannelBytes& bytes) {
  if (bytes.failed_errno != 0) return fail(sys_error(Operation::receive, "channel", bytes.failed_errno));
  ChildReport received;
  received.timeline.assign(bytes.timeline.data(), bytes.timeline_size);
  received.exec_next = bytes.exec_next;
  if (bytes.has_error) {
    auto e = decode_error(std::string_view(bytes.error.data(), bytes.error_size));
    if (!e) return fail(e.error());
    received.error = std::move(*e);
  }
  return received;
}

Result<ChildReport> receive_until_eof(int fd) {
  auto bytes = std::make_unique<ChannelBytes>();
  receive_raw(fd, *bytes);
  return decode(*bytes);
}

}  // namespace nsrun
