#include "ns/outcome.hpp"

#include <sys/socket.h>

#include <cstring>

#include "sys/raw.hpp"

namespace nsrun {

namespace {
constexpr char status_tag = 'S';
constexpr char listener_tag = 'L';
constexpr char watch_tag = 'W';
constexpr char tmpdir_tag = 'T';
// The largest message: the TMPDIR tag and a path.
constexpr std::size_t max_message = 1 + 4096;

struct StatusMessage {
  char tag;
  int raw_status;
  int64_t processes;
};
}  // namespace

void send_final_status(int fd, int raw_status, int64_t processes) {
  if (fd < 0) return;
  StatusMessage m{};
  m.tag = status_tag;
  m.raw_status = raw_status;
  m.processes = processes;
  sys::raw(SYS_sendto, fd, &m, sizeof m, MSG_NOSIGNAL | MSG_DONTWAIT, nullptr, 0);
}

namespace {
void send_fd(int fd, int listener, char tag) {
  if (fd < 0 || listener < 0) return;
  iovec iov{&tag, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &listener, sizeof(int));
  sys::raw(SYS_sendmsg, fd, &msg, MSG_NOSIGNAL, 0);
}
}  // namespace

void send_listener(int fd, int listener) { send_fd(fd, listener, listener_tag); }

void send_watch_listener(int fd, int listener) { send_fd(fd, listener, watch_tag); }

void send_private_tmpdir(int fd, std::string_view tmpdir) {
  if (fd < 0 || tmpdir.size() + 1 > max_message) return;
  char buf[max_message];
  buf[0] = tmpdir_tag;
  std::memcpy(buf + 1, tmpdir.data(), tmpdir.size());
  sys::raw(SYS_sendto, fd, buf, tmpdir.size() + 1, MSG_NOSIGNAL, nullptr, 0);
}

void receive_words(int fd, SandboxWords& into) {
  if (fd < 0 || into.closed) return;
  while (true) {
    char buf[max_message];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // nothing more for now
    if (n == 0) {
      into.closed = true;
      return;
    }
    // Every fd that came is ours to close, whatever the message claims.
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int received = -1;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        Fd owned(received);
        if (buf[0] == listener_tag && n == 1 && !into.listener) {
          into.listener = std::move(owned);
        } else if (buf[0] == watch_tag && n == 1 && !into.watch_listener) {
          into.watch_listener = std::move(owned);
        }
      }
    }
    if (buf[0] == tmpdir_tag && n > 1 && msg.msg_controllen == 0)
      into.private_tmpdir.assign(buf + 1, static_cast<std::size_t>(n - 1));
    if (buf[0] == status_tag && static_cast<std::size_t>(n) == sizeof(StatusMessage)) {
      StatusMessage m;
      std::memcpy(&m, buf, sizeof m);
      into.raw_status = m.raw_status;
      if (m.processes >= 0) into.processes = static_cast<uint64_t>(m.processes);
    }
  }
}

int64_t last_pid(int fd) {
  if (fd < 0) return -1;
  char buf[32];
  const long n = sys::raw(SYS_pread64, fd, buf, sizeof buf - 1, 0, 0, 0);
  if (n <= 0) return -1;
  int64_t v = 0;
  for (long i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) v = v * 10 + (buf[i] - '0');
  return v;
}

}  // namespace nsrun
