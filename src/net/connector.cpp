#include "net/connector.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace nsrun::egress {

namespace {

constexpr in_addr_t loopback_v4 = 0x7f000001;  // 127.0.0.1, host order

bool is_v4_loopback_mapped(const in6_addr& a) {
  static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  return std::memcmp(a.s6_addr, mapped, sizeof mapped) == 0;
}

std::string text_of(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

// Answers the call: `err` 0 is success with value `val`.
void answer(int listener, const seccomp_notif& call, int err, int64_t val = 0) {
  seccomp_notif_resp resp{};
  resp.id = call.id;
  resp.error = err == 0 ? 0 : -err;
  resp.val = err == 0 ? val : 0;
  // ENOENT: the caller is gone; nothing to answer.
  (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// The notification still stands for the same task: what was read through
// its pid (memory, fds) was that task's, not a recycled pid's.
bool still_valid(int listener, const seccomp_notif& call) {
  uint64_t id = call.id;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int socket_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  if (::getsockopt(fd, level, name, &v, &len) != 0) return -1;
  return v;
}

// The command's fd's close-on-exec flag, from /proc/PID/fdinfo/FD ("flags:"
// in octal holds O_CLOEXEC for it). Unknown: close-on-exec (the safer guess:
// a child that loses the socket fails visibly).
bool fd_cloexec(pid_t pid, int fd) {
  Fd info(::open(fmt::format("/proc/{}/fdinfo/{}", pid, fd).c_str(), O_RDONLY | O_CLOEXEC));
  if (!info) return true;
  char buf[512];
  const ssize_t n = ::read(info.get(), buf, sizeof buf - 1);
  if (n <= 0) return true;
  buf[n] = '\0';
  const char* flags = std::strstr(buf, "flags:");
  if (flags == nullptr) return true;
  return (std::strtoul(flags + 6, nullptr, 8) & O_CLOEXEC) != 0;
}

}  // namespace

Target judge_target(const sockaddr_storage& a, socklen_t len, int family, uint16_t proxy_port) {
  Target t;
  if (len < static_cast<socklen_t>(sizeof(sa_family_t))) {
    t.err = EINVAL;
    return t;
  }
  // AF_UNSPEC dissolves a connection (connect(2)); it reaches nothing.
  if (a.ss_family == AF_UNSPEC) {
    t.kind = Target::Kind::disconnect;
    return t;
  }
  if (family == AF_INET) {
    if (len < static_cast<socklen_t>(sizeof(sockaddr_in))) {
      t.err = EINVAL;
      return t;
    }
    if (a.ss_family != AF_INET) {
      t.err = EAFNOSUPPORT;
      return t;
    }
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    t.address = text_of(a);
    t.port = ntohs(in.sin_port);
    t.kind = ntohl(in.sin_addr.s_addr) == loopback_v4 && t.port == proxy_port ? Target::Kind::proxy : Target::Kind::refused;
    return t;
  }
  if (family == AF_INET6) {
    // The kernel takes the RFC 2133 size (no scope id) as well.
    if (len < 24) {
      t.err = EINVAL;
      return t;
    }
    if (a.ss_family != AF_INET6) {
      t.err = EAFNOSUPPORT;
      return t;
    }
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    t.address = text_of(a);
    t.port = ntohs(in6.sin6_port);
    const bool loop = IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr) || is_v4_loopback_mapped(in6.sin6_addr);
    t.kind = loop && t.port == proxy_port ? Target::Kind::proxy : Target::Kind::refused;
    return t;
  }
  t.err = EAFNOSUPPORT;
  return t;
}

void Connector::refuse(std::string protocol, std::string address, uint16_t port, std::string reason) {
  if (!record_) return;
  Decision d;
  d.protocol = std::move(protocol);
  d.host = address;
  d.port = port;
  d.address = std::move(address);
  d.decision = "denied";
  d.reason = std::move(reason);
  record_(std::move(d));
}

bool Connector::handle(int listener, const seccomp_notif& call) {
  if (call.data.nr != SYS_connect && call.data.nr != SYS_listen) return false;
  // A pidfd first, then the check that the call still stands: the pidfd is
  // then the caller's, whatever happens to its pid later.
  // The caller may be any thread: PIDFD_THREAD (Linux 6.9) names that
  // thread; without it only a thread-group leader has a pidfd (EINVAL).
  constexpr unsigned pidfd_thread = O_EXCL;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, call.pid, pidfd_thread)));
  if (!pidfd && errno == EINVAL) pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, call.pid, 0)));
  if (!pidfd || !still_valid(listener, call)) {
    answer(listener, call, EACCES);
    return true;
  }
  // The command's socket itself (a new fd for the same socket): what is
  // checked is what is used, whatever the command does to its fd meanwhile.
  const int fd = static_cast<int>(static_cast<uint32_t>(call.data.args[0]));
  Fd sock(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
  if (!sock) {
    answer(listener, call, errno == EBADF ? EBADF : EACCES);
    return true;
  }
  const int family = socket_option(sock.get(), SOL_SOCKET, SO_DOMAIN);
  if (family < 0) {
    answer(listener, call, errno == ENOTSOCK ? ENOTSOCK : EACCES);
    return true;
  }
  if (call.data.nr == SYS_connect) return handle_connect(listener, call, sock.get(), family);
  if (family == AF_INET || family == AF_INET6) {
    refuse("listen", "", 0, "inet-listener");
    answer(listener, call, EACCES);
    return true;
  }
  const int backlog = static_cast<int>(static_cast<uint32_t>(call.data.args[1]));
  answer(listener, call, ::listen(sock.get(), backlog) == 0 ? 0 : errno);
  return true;
}

bool Connector::handle_connect(int listener, const seccomp_notif& call, int sock, int family) {
  const int fd = static_cast<int>(static_cast<uint32_t>(call.data.args[0]));
  if (family != AF_INET && family != AF_INET6) {
    // AF_UNIX, netlink: the kernel does it, in the command's context (its
    // Landlock domain scopes abstract sockets, its path walk is its own).
    // Should a racing thread swap the fd for a TCP socket first, Landlock
    // refuses that connect: the command may connect no TCP socket itself.
    seccomp_notif_resp resp{};
    resp.id = call.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    return true;
  }
  // The filter lets the command make TCP sockets only; one that came from
  // elsewhere (an inherited UDP socket) is refused here.
  if (socket_option(sock, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
      socket_option(sock, SOL_SOCKET, SO_PROTOCOL) != IPPROTO_TCP) {
    refuse("connect", "", 0, "not-tcp");
    answer(listener, call, EACCES);
    return true;
  }
  // The address, copied once; everything below looks only at this copy.
  const socklen_t len = static_cast<socklen_t>(static_cast<uint32_t>(call.data.args[2]));
  if (len > sizeof(sockaddr_storage)) {
    answer(listener, call, EINVAL);
    return true;
  }
  sockaddr_storage addr{};
  iovec local{&addr, len};
  iovec remote{reinterpret_cast<void*>(call.data.args[1]), len};
  const ssize_t got = len > 0 ? ::process_vm_readv(call.pid, &local, 1, &remote, 1, 0) : 0;
  if (got != static_cast<ssize_t>(len)) {
    // A bad pointer (or a short read) is the command's EFAULT; a memory
    // nsrun may not read (a command that made itself non-dumpable) is a
    // refusal.
    answer(listener, call, got < 0 && errno != EFAULT ? EACCES : EFAULT);
    return true;
  }
  if (!still_valid(listener, call)) return true;
  const Target t = judge_target(addr, len, family, port_);
  switch (t.kind) {
    case Target::Kind::invalid: answer(listener, call, t.err); return true;
    case Target::Kind::disconnect: {
      // On the command's own socket (the same one, through our fd): no
      // address is involved.
      sockaddr unspec{};
      unspec.sa_family = AF_UNSPEC;
      answer(listener, call, ::connect(sock, &unspec, sizeof unspec) == 0 ? 0 : errno);
      return true;
    }
    case Target::Kind::refused:
      refuse("connect", t.address, t.port, "direct-connect");
      answer(listener, call, EACCES);
      return true;
    case Target::Kind::proxy: break;
  }

  // Our own socket to the proxy, of the command's family (getsockname()
  // inside sees what it expects), bound first so that the proxy knows it.
  Fd own(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!own) {
    answer(listener, call, ECONNREFUSED);
    return true;
  }
  sockaddr_storage src{}, dst{};
  socklen_t size = 0;
  if (family == AF_INET) {
    auto& s4 = reinterpret_cast<sockaddr_in&>(src);
    s4.sin_family = AF_INET;
    s4.sin_addr.s_addr = htonl(loopback_v4);
    auto& d4 = reinterpret_cast<sockaddr_in&>(dst);
    d4 = s4;
    d4.sin_port = htons(port_);
    size = sizeof(sockaddr_in);
  } else {
    // The proxy listens on 127.0.0.1 only: an IPv6 socket reaches it
    // through the IPv4-mapped address.
    int off = 0;
    (void)::setsockopt(own.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    auto& s6 = reinterpret_cast<sockaddr_in6&>(src);
    s6.sin6_family = AF_INET6;
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    std::memcpy(s6.sin6_addr.s6_addr, mapped, sizeof mapped);
    auto& d6 = reinterpret_cast<sockaddr_in6&>(dst);
    d6 = s6;
    d6.sin6_port = htons(port_);
    size = sizeof(sockaddr_in6);
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::bind(own.get(), reinterpret_cast<sockaddr*>(&src), size) != 0 ||
      ::getsockname(own.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    answer(listener, call, ECONNREFUSED);
    return true;
  }
  const uint16_t source = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port)
                                            : ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
  if (announce_) announce_(source, true);
  if (::connect(own.get(), reinterpret_cast<sockaddr*>(&dst), size) != 0) {
    const int err = errno;
    if (announce_) announce_(source, false);
    answer(listener, call, err == EINTR ? EINTR : ECONNREFUSED);
    return true;
  }
  // What the command set on its socket that changes how it behaves.
  const int status = ::fcntl(sock, F_GETFL);
  if (status >= 0 && (status & O_NONBLOCK) != 0) (void)::fcntl(own.get(), F_SETFL, O_NONBLOCK);
  for (auto [level, name] : {std::pair<int, int>{IPPROTO_TCP, TCP_NODELAY}, std::pair<int, int>{SOL_SOCKET, SO_KEEPALIVE}}) {
    const int v = socket_option(sock, level, name);
    if (v > 0) (void)::setsockopt(own.get(), level, name, &v, sizeof v);
  }
  seccomp_notif_addfd add{};
  add.id = call.id;
  add.flags = SECCOMP_ADDFD_FLAG_SETFD;
  add.srcfd = static_cast<uint32_t>(own.get());
  add.newfd = static_cast<uint32_t>(fd);
  add.newfd_flags = fd_cloexec(call.pid, fd) ? O_CLOEXEC : 0;
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0) {
    answer(listener, call, errno == ENOENT ? ENOENT : ECONNREFUSED);
    return true;
  }
  answer(listener, call, 0);
  return true;
}

Result<Fd> host_listener(uint16_t& port) {
  constexpr const char* step = "egress listener";
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return fail(sys_error(step, "socket"));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(loopback_v4);
  socklen_t len = sizeof a;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return fail(sys_error(step, "bind 127.0.0.1:0"));
  if (::listen(s.get(), 128) != 0) return fail(sys_error(step, "listen 127.0.0.1"));
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return fail(sys_error(step, "getsockname"));
  port = ntohs(a.sin_port);
  return s;
}

void retarget_proxy_environment(std::vector<std::string>& env, uint16_t port) {
  const auto before = proxy_environment("", proxy_port);
  const auto after = proxy_environment("", port);
  for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) {
    const std::string was = before[i].first + "=" + before[i].second;
    for (auto& e : env)
      if (e == was) e = after[i].first + "=" + after[i].second;
  }
}

bool user_notification_available() {
  uint32_t action = SECCOMP_RET_USER_NOTIF;
  return ::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

}  // namespace nsrun::egress
