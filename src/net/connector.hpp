// --network proxy on the Landlock rung. The command shares the
// host's network namespace, and Landlock's network rules name TCP ports
// only (struct landlock_net_port_attr has no address): allowing connect()
// to the proxy's port would allow it to that port on every host. So the
// command may connect and bind nothing at all over TCP (Landlock ABI 4, no
// port rule), and its connect() and listen() are answered by nsrun through
// the seccomp listener instead (SECCOMP_RET_USER_NOTIF):
//  - connect() on a TCP socket: nsrun copies the address once, out of the
//    command's memory, and decides on that copy. Only 127.0.0.1:P, [::1]:P
//    and [::ffff:127.0.0.1]:P (P the proxy's port) are accepted; nsrun then
//    makes a socket of its own, connects it to the proxy, and installs it
//    over the command's fd (SECCOMP_IOCTL_NOTIF_ADDFD with
//    SECCOMP_ADDFD_FLAG_SETFD), keeping the fd's O_NONBLOCK and cloexec.
//    The command's own connect() never runs: there is nothing for a racing
//    thread to rewrite (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read the
//    address, seccomp_unotify(2)).
//  - connect() on any other socket (AF_UNIX, netlink) continues. That
//    decision needs no trust in what was checked: if another thread swaps
//    the fd for a TCP socket in between, the continued connect() meets
//    Landlock, which refuses every TCP connect of the command.
//  - listen(): an unbound TCP socket that listens is bound to a port
//    without bind(2), which Landlock does not see. nsrun takes the socket
//    itself (pidfd_getfd) and calls listen() on that same socket when it is
//    not an inet one: what was checked is what listens.
// The proxy listens on the host's 127.0.0.1, where every host process can
// reach it: it serves only connections whose source port is one of the
// sockets made here (on_source()), bound and announced before they connect.
#pragma once

#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "net/egress.hpp"

namespace nsrun::egress {

// What one connect() asked for, judged from the copied address alone.
struct Target {
  enum class Kind { proxy, refused, disconnect, invalid };
  Kind kind = Kind::invalid;
  int err = 0;           // for invalid: the errno the kernel would give
  std::string address;   // the address asked for, as text ("198.18.0.1")
  uint16_t port = 0;
};

// `family`: the socket's (AF_INET or AF_INET6). Pure; unit-tested.
Target judge_target(const sockaddr_storage& a, socklen_t len, int family, uint16_t proxy_port);

class Connector {
 public:
  explicit Connector(uint16_t proxy_port) : port_(proxy_port) {}
  // Where refusals go (the proxy's decisions); set before the command runs.
  void on_decision(std::function<void(Decision)> record) { record_ = std::move(record); }
  // Answers `call` when it is a connect() or listen(); false otherwise.
  bool handle(int listener, const seccomp_notif& call);
  // Where the source port of each socket made here goes before it
  // connects (`made`), or when its connect failed: the proxy serves only
  // those peers (EgressConfig::announced_peers_only).
  void on_source(std::function<void(uint16_t port, bool made)> announce) { announce_ = std::move(announce); }

 private:
  // `sock`: the command's socket, taken from it; `family` its SO_DOMAIN.
  bool handle_connect(int listener, const seccomp_notif& call, int sock, int family);
  void refuse(std::string protocol, std::string address, uint16_t port, std::string reason);

  uint16_t port_;
  std::function<void(Decision)> record_;
  std::function<void(uint16_t, bool)> announce_;
};

// The proxy's listener on the host's loopback, on a port the kernel picks.
Result<Fd> host_listener(uint16_t& port);

// The proxy environment of proxy_environment() pointed at `port` instead of
// proxy_port, where `env` still holds the values set for proxy_port.
void retarget_proxy_environment(std::vector<std::string>& env, uint16_t port);

// The kernel can answer connect() as above: seccomp user notification.
bool user_notification_available();

}  // namespace nsrun::egress
