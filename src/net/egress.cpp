#include "net/egress.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/core.h>

#include "net/confine.hpp"
#include "net/resolve.hpp"
#include "net/wire.hpp"
#include "policy/json.hpp"
#include "sys/utc.hpp"

namespace nsrun::egress {

using hosts::Address;
using hosts::Host;

namespace {

// How long a client may take over its request (head, SOCKS greeting, TLS
// ClientHello), and how long a connection to an upstream may take.
constexpr int handshake_ms = 30000;
constexpr int connect_ms = 15000;
// Connections and DNS queries served at once; beyond, new ones are closed.
constexpr int max_workers = 512;
// Decisions the report lists one by one; past them, one entry per outcome
// counts the rest (the command chooses how many: a loop of refused DNS
// queries must not grow nsrun's memory without bound). --network-log still
// streams every one.
constexpr std::size_t max_listed_decisions = 4096;

std::string now_rfc3339() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  // Not gmtime_r: sys/utc.hpp says why.
  const UtcTime t = utc_time(ts.tv_sec);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", t.year, t.month, t.day, t.hour, t.minute, t.second,
                     ts.tv_nsec / 1000000);
}

int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// MSG_NOSIGNAL: a client that went away must not kill nsrun with SIGPIPE.
// A pipe (nsrun connect's stdout) is written plainly.
bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Appends what arrives on `fd` to `buf` until `done(buf)` or the deadline;
// at most `max` bytes in all.
bool read_until(int fd, std::string& buf, std::size_t max, int64_t deadline, const std::function<bool(const std::string&)>& done) {
  char tmp[4096];
  while (!done(buf)) {
    if (buf.size() >= max) return false;
    const int64_t left = deadline - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t n = ::recv(fd, tmp, std::min(sizeof tmp, max - buf.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  return true;
}

bool read_exact(int fd, std::string& buf, std::size_t n, int64_t deadline) {
  return read_until(fd, buf, n, deadline, [n](const std::string& b) { return b.size() >= n; });
}

sockaddr_storage to_sockaddr(const Address& a, uint16_t port, socklen_t& len) {
  sockaddr_storage ss{};
  if (a.v4) {
    auto* s = reinterpret_cast<sockaddr_in*>(&ss);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    std::memcpy(&s->sin_addr, a.bytes.data(), 4);
    len = sizeof *s;
  } else {
    auto* s = reinterpret_cast<sockaddr_in6*>(&ss);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    std::memcpy(&s->sin6_addr, a.bytes.data(), 16);
    len = sizeof *s;
  }
  return ss;
}

// The message that carries the three listeners (SCM_RIGHTS) with one byte.
struct ListenerMessage {
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))]{};
  msghdr msg{};
  ListenerMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  ListenerMessage(const ListenerMessage&) = delete;
};

// Starts `fn` in a detached thread; false when the thread could not start.
bool spawn(std::function<void()> fn) {
  auto* heap = new std::function<void()>(std::move(fn));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t t;
  const int r = pthread_create(
      &t, &attr,
      [](void* arg) -> void* {
        auto* f = static_cast<std::function<void()>*>(arg);
        (*f)();
        delete f;
        return nullptr;
      },
      heap);
  pthread_attr_destroy(&attr);
  if (r != 0) delete heap;
  return r == 0;
}

}  // namespace

json::Value to_json(const Decision& d) {
  json::Value v = json::Value::object();
  v.set("time", d.time);
  v.set("protocol", d.protocol);
  v.set("host", d.host);
  v.set("port", d.port);
  v.set("address", d.address.empty() ? json::Value() : json::Value(d.address));
  v.set("decision", d.decision);
  v.set("reason", d.reason.empty() ? json::Value() : json::Value(d.reason));
  v.set("rule", d.rule.empty() ? json::Value() : json::Value(d.rule));
  if (!d.cnames.empty()) {
    json::Value chain = json::Value::array();
    for (const auto& c : d.cnames) chain.push_back(c);
    v.set("cnames", std::move(chain));
  }
  if (d.count != 1) v.set("count", static_cast<int64_t>(d.count));
  return v;
}

json::Value network_section(const std::vector<Decision>& decisions) {
  json::Value out = json::Value::object();
  out.set("mode", "proxy");
  int64_t allowed = 0, denied = 0, failed = 0;
  json::Value list = json::Value::array();
  for (const auto& d : decisions) {
    const auto n = static_cast<int64_t>(d.count);
    allowed += d.decision == "allowed" ? n : 0;
    denied += d.decision == "denied" ? n : 0;
    failed += d.decision == "failed" ? n : 0;
    list.push_back(to_json(d));
  }
  json::Value totals = json::Value::object();
  totals.set("allowed", allowed);
  totals.set("denied", denied);
  totals.set("failed", failed);
  out.set("totals", std::move(totals));
  out.set("decisions", std::move(list));
  return out;
}

Result<std::vector<std::pair<std::string, Address>>> parse_pins(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, Address>> out;
  for (const auto& spec : specs) {
    auto bad = [&](std::string_view why) {
      Error e = usage_error("--resolve-host", why);
      e.path = spec;
      return fail(std::move(e));
    };
    const std::size_t eq = spec.find('=');
    if (eq == std::string::npos) return bad("not NAME=ADDRESS");
    auto name = hosts::canonical_host(std::string_view(spec).substr(0, eq));
    if (!name) return bad(name.error());
    if (name->is_address) return bad("the name is an address");
    auto address = hosts::parse_address(std::string_view(spec).substr(eq + 1));
    if (!address) return bad("not an IP address after '='");
    out.emplace_back(name->name, *address);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> proxy_environment(std::string_view self, uint16_t port) {
  const std::string http = fmt::format("http://127.0.0.1:{}", port);
  const std::string socks = fmt::format("socks5h://127.0.0.1:{}", port);
  const std::string no_proxy = "localhost,127.0.0.1,::1";
  std::vector<std::pair<std::string, std::string>> env = {
      // curl reads only the lower-case http_proxy (httpoxy); others the upper.
      {"HTTP_PROXY", http}, {"http_proxy", http}, {"HTTPS_PROXY", http}, {"https_proxy", http},
      {"ALL_PROXY", socks}, {"all_proxy", socks}, {"NO_PROXY", no_proxy}, {"no_proxy", no_proxy},
      {"npm_config_proxy", http}, {"npm_config_https_proxy", http},
      {"YARN_HTTP_PROXY", http}, {"YARN_HTTPS_PROXY", http},
      {"PIP_PROXY", http},
      {"BUNDLE_HTTP_PROXY", http}, {"BUNDLE_HTTPS_PROXY", http},
      {"JAVA_TOOL_OPTIONS", fmt::format("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={0} -Dhttps.proxyHost=127.0.0.1 "
                                        "-Dhttps.proxyPort={0} -Dhttp.nonProxyHosts=localhost|127.0.0.1",
                                        port)},
  };
  // Single quotes around the path: ssh hands ProxyCommand to a shell.
  if (!self.empty() && self.find('\'') == std::string_view::npos)
    env.emplace_back("GIT_SSH_COMMAND", fmt::format("ssh -o ProxyCommand='{} connect %h %p'", self));
  return env;
}

Result<void> send_listeners(int to_nsrun) {
  constexpr const char* step = "egress listeners";
  auto make = [&](int type, uint16_t port) -> Result<Fd> {
    Fd s(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    if (!s) return fail(sys_error(step, "socket"));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      return fail(sys_error(step, fmt::format("bind 127.0.0.1:{}", port)));
    if (type == SOCK_STREAM && ::listen(s.get(), 128) != 0) return fail(sys_error(step, fmt::format("listen 127.0.0.1:{}", port)));
    return s;
  };
  auto proxy = make(SOCK_STREAM, proxy_port);
  if (!proxy) return fail(proxy.error());
  auto dns_udp = make(SOCK_DGRAM, dns_port);
  if (!dns_udp) return fail(dns_udp.error());
  auto dns_tcp = make(SOCK_STREAM, dns_port);
  if (!dns_tcp) return fail(dns_tcp.error());
  ListenerMessage m;
  const int fds[3] = {proxy->get(), dns_udp->get(), dns_tcp->get()};
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do n = ::sendmsg(to_nsrun, &m.msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != 1) return fail(sys_error(step, "sendmsg"));
  return {};
}

// One State in nsrun (the decisions, the listeners until the proxy
// starts, the proxy process) and one in the proxy process (its workers,
// the peers nsrun announced), both of this type.
struct Egress::State {
  EgressConfig config;
  // In the proxy: the host's /etc/hosts and resolv.conf, read before it
  // confines itself (afterwards it can open no file).
  std::string hosts_text;
  resolve::Config resolver;
  Fd channel;       // from the sandbox, until the listeners arrive
  std::optional<std::array<Fd, 3>> listeners;  // taken by nsrun's wait loop before the proxy starts
  bool woken = false;  // the proxy was started (or could not be)
  // The control pair (SOCK_SEQPACKET, one message each): in nsrun `ctl`
  // is nsrun's end and `proxy_ctl` the proxy's until the fork; in the
  // proxy `ctl` is the proxy's end. nsrun -> proxy: 'P' or 'U' and a
  // port (a peer announced or withdrawn, the Landlock rung), 'S' (stop).
  // proxy -> nsrun: 'D' and a decision (encode_decision()), 'E' and why
  // the proxy could not confine itself.
  Fd ctl;
  Fd proxy_ctl;
  Fd pidfd;  // nsrun: the proxy process
  // nsrun: the thread that reads the proxy's messages (pthread, not
  // std::thread: the static binary carries no std::system_error).
  std::optional<pthread_t> reader;
  bool reader_done = false;
  bool stopped = false;
  std::mutex mutex;
  std::condition_variable idle;
  std::vector<Decision> decisions;
  std::function<void(const Decision&)> observer;
  bool reading = false;  // nsrun's reader holds a message it has not recorded yet
  // The proxy's side.
  bool in_proxy = false;
  std::set<int> open;  // every socket a worker uses, shut down at the end
  int workers = 0;     // running worker threads
  bool stopping = false;
  std::multiset<uint16_t> announced;  // source ports nsrun made for the command (Landlock rung)

  void record(Decision d) {
    if (in_proxy) {
      // The time is nsrun's, at arrival.
      const std::string m = encode_decision(d);
      const std::lock_guard lock(mutex);
      (void)::send(ctl.get(), m.data(), m.size(), MSG_NOSIGNAL);
      return;
    }
    d.time = now_rfc3339();
    const std::lock_guard lock(mutex);
    if (config.log_fd >= 0) (void)send_line(json::dump(to_json(d), false) + "\n");
    if (observer) observer(d);
    if (decisions.size() < max_listed_decisions) {
      decisions.push_back(std::move(d));
      return;
    }
    auto more = std::find_if(decisions.begin() + max_listed_decisions, decisions.end(),
                             [&](const Decision& x) { return x.decision == d.decision; });
    if (more == decisions.end()) {
      Decision sum;
      sum.time = d.time;
      sum.protocol = "*";
      sum.host = "*";
      sum.decision = d.decision;
      sum.reason = "not-listed";
      sum.count = 0;
      more = decisions.insert(decisions.end(), std::move(sum));
    }
    ++more->count;
  }
  bool send_line(std::string_view line) {
    while (!line.empty()) {
      const ssize_t n = ::write(config.log_fd, line.data(), line.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      line.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Registers a worker; false when stopping or at the limit.
  bool enter() {
    const std::lock_guard lock(mutex);
    if (stopping || workers >= max_workers) return false;
    ++workers;
    return true;
  }
  void leave() {
    const std::lock_guard lock(mutex);
    --workers;
    idle.notify_all();
  }
  bool track(int fd) {
    const std::lock_guard lock(mutex);
    if (stopping) return false;
    open.insert(fd);
    return true;
  }
  void untrack(int fd) {
    const std::lock_guard lock(mutex);
    open.erase(fd);
  }
};

namespace {

using State = Egress::State;

// A socket a worker owns, shut down by stop() so that no thread stays
// blocked on it.
class Tracked {
 public:
  Tracked(State& s, Fd fd) : s_(s), fd_(std::move(fd)) { ok_ = fd_ && s_.track(fd_.get()); }
  ~Tracked() {
    if (fd_) s_.untrack(fd_.get());
  }
  Tracked(const Tracked&) = delete;
  int get() const { return fd_.get(); }
  bool ok() const { return ok_; }

 private:
  State& s_;
  Fd fd_;
  bool ok_ = false;
};

// How long one name may take to resolve, all servers and tries included.
constexpr int resolve_ms = 10000;

// The addresses `host` stands for: itself for a literal, the pinned ones
// (--resolve-host) or nsrun's resolver for a name, each once, with the
// CNAMEs that led to them.
resolve::Resolution resolve_host(State& s, const Host& host) {
  resolve::Resolution out;
  if (host.is_address) {
    out.addresses = {host.address};
    return out;
  }
  for (const auto& [name, a] : s.config.pinned)
    if (name == host.name) out.addresses.push_back(a);
  if (!out.addresses.empty()) return out;
  return resolve::resolve(host.name, s.hosts_text, s.resolver, resolve_ms);
}

// A CNAME chain is judged by the deny rules only: the connection goes to
// the addresses of the allowed name, which are checked themselves, so an
// allow rule for every CDN name behind it would add nothing but work; a
// deny rule naming one of them still refuses (deny wins). A target that
// is not a valid host name at all is refused.
hosts::Verdict judge_chain(const State& s, const std::vector<std::string>& cnames, uint16_t port) {
  for (const auto& c : cnames) {
    auto h = hosts::canonical_host(c);
    if (!h || h->is_address) return {false, "bad-cname", c};
    hosts::Verdict v = hosts::decide(s.config.rules, *h, port);
    if (!v.allowed && v.reason == hosts::blocked_denylist) return v;
  }
  return {true, {}, {}};
}

// The rules' verdict on every address a host stands for: all must pass
// (a name that also resolves to an internal address is refused whole).
hosts::Verdict judge_addresses(const State& s, const std::vector<Address>& addresses, uint16_t port, std::string& which) {
  for (const auto& a : addresses) {
    hosts::Verdict v = hosts::decide_address(s.config.rules, a, port);
    if (!v.allowed) {
      which = hosts::address_text(a);
      return v;
    }
  }
  return {true, {}, {}};
}

Fd connect_to(const Address& a, uint16_t port) {
  Fd s(::socket(a.v4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return s;
  socklen_t len = 0;
  const sockaddr_storage ss = to_sockaddr(a, port, len);
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS) return Fd();
    pollfd p{s.get(), POLLOUT, 0};
    int r;
    do r = ::poll(&p, 1, connect_ms);
    while (r < 0 && errno == EINTR);
    int err = 0;
    socklen_t errlen = sizeof err;
    if (r <= 0 || ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &errlen) != 0 || err != 0) return Fd();
  }
  const int flags = ::fcntl(s.get(), F_GETFL);
  ::fcntl(s.get(), F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

// What a protocol handler asks for: this host and port, judged and, when
// allowed, connected.
struct Opened {
  Fd upstream;
  Decision decision;
  int status = 0;  // for HTTP: 403 refused, 502 failed, 0 connected
};

Opened open_target(State& s, std::string_view protocol, const Host& host, uint16_t port) {
  Opened o;
  Decision& d = o.decision;
  d.protocol = protocol;
  d.host = host.name;
  d.port = port;
  hosts::Verdict v = hosts::decide(s.config.rules, host, port);
  if (v.allowed) {
    std::string which;
    const resolve::Resolution resolved = resolve_host(s, host);
    const std::vector<Address>& addresses = resolved.addresses;
    d.cnames = resolved.cnames;
    if (addresses.empty()) {
      d.decision = "failed";
      d.reason = "resolve";
      d.rule = v.rule;
      o.status = 502;
      return o;
    }
    const std::string rule = v.rule;
    v = judge_chain(s, resolved.cnames, port);
    if (v.allowed) v = judge_addresses(s, addresses, port, which);
    if (v.allowed) {
      d.rule = rule;
      for (const auto& a : addresses) {
        d.address = hosts::address_text(a);
        o.upstream = connect_to(a, port);
        if (o.upstream) break;
      }
      d.decision = o.upstream ? "allowed" : "failed";
      if (!o.upstream) {
        d.reason = "connect";
        o.status = 502;
      }
      return o;
    }
    d.address = which;
  }
  d.decision = "denied";
  d.reason = v.reason;
  d.rule = v.rule;
  o.status = 403;
  return o;
}

std::string http_refusal(int status, std::string_view reason, std::string_view host) {
  const std::string_view text = status == 403   ? "Forbidden"
                                : status == 400 ? "Bad Request"
                                : status == 411 ? "Length Required"
                                                : "Bad Gateway";
  const std::string body = status == 403                    ? fmt::format("nsrun: {}: {}\n", host, reason)
                           : status == 400 || status == 411 ? fmt::format("nsrun: bad request: {}\n", reason)
                                                            : fmt::format("nsrun: {}: cannot connect ({})\n", host, reason);
  return fmt::format("HTTP/1.1 {} {}\r\nX-Proxy-Error: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n"
                     "Connection: close\r\n\r\n{}",
                     status, text, reason, body.size(), body);
}

// Copies a_in -> b_out and b_in -> a_out until both directions ended;
// an end of input is passed on as a half-close (or a close, for a pipe).
// At most `limit` bytes go from a to b: what a sends past them is read and
// dropped (an absolute-URI request: only its declared body follows it, a
// request pipelined behind it, for another host perhaps, is never
// forwarded; the client reads `Connection: close` in the answer and asks
// again on a new connection).
void relay(int a_in, int a_out, int b_in, int b_out, uint64_t limit = UINT64_MAX) {
  char buf[65536];
  bool open[2] = {true, true};
  while (open[0] || open[1]) {
    pollfd p[2] = {{a_in, static_cast<short>(open[0] ? POLLIN : 0), 0}, {b_in, static_cast<short>(open[1] ? POLLIN : 0), 0}};
    const int r = ::poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return;
    for (int i = 0; i < 2; ++i) {
      const int from = i == 0 ? a_in : b_in, to = i == 0 ? b_out : a_out;
      if (!open[i] || (p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[i] = false;
        if (::shutdown(to, SHUT_WR) != 0 && errno == ENOTSOCK) ::close(to);
        if (n < 0) return;
        continue;
      }
      auto forward = static_cast<std::size_t>(n);
      if (i == 0) {
        forward = static_cast<std::size_t>(std::min<uint64_t>(limit, forward));
        limit -= forward;
      }
      if (forward > 0 && !send_all(to, std::string_view(buf, forward))) return;
    }
  }
}

void relay(int a, int b) { relay(a, a, b, b); }

// A tunnel to port 443 must start with a ClientHello naming the host the
// tunnel was opened for: an allowed name must not front for another one
// on the same server (domain fronting). `hello` starts with what the
// client already sent; it is completed and left holding the bytes to
// forward. False (with the decision filled) when refused.
bool check_hello(int client, std::string& hello, Decision& d, bool is_address, int64_t deadline) {
  ClientHello h;
  const bool complete = read_until(client, hello, 5 + 16384, deadline, [&](const std::string& b) {
    h = client_hello_sni(b);
    return h.status != ClientHello::Status::incomplete;
  });
  std::string why;
  if (!complete || h.status != ClientHello::Status::ok) {
    why = "not-tls";
  } else if (h.sni.empty()) {
    // Clients send no name for an address; a name must be named.
    if (!is_address) why = "sni-missing";
  } else {
    auto name = hosts::canonical_host(h.sni);
    if (!name || name->name != d.host) why = "sni-mismatch";
  }
  if (why.empty()) return true;
  d.decision = "denied";
  d.reason = why;
  d.rule = printable(h.sni, 255);
  return false;
}

// The common end of CONNECT and SOCKS: the client was told it is
// connected; a tunnel to 443 is checked, then bytes flow.
void tunnel(State& s, int client, Opened& o, const Host& host, std::string pending, int64_t deadline) {
  const Tracked upstream(s, std::move(o.upstream));
  if (!upstream.ok()) return;
  if (o.decision.port == 443 && !check_hello(client, pending, o.decision, host.is_address, deadline)) {
    s.record(std::move(o.decision));
    return;
  }
  s.record(o.decision);
  if (!pending.empty() && !send_all(upstream.get(), pending)) return;
  relay(client, upstream.get());
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return (x | 0x20) == (y | 0x20); });
}

Decision refused_request(std::string_view protocol, std::string_view host, uint16_t port, std::string_view reason) {
  Decision d;
  d.protocol = protocol;
  d.host = printable(host, 255);
  d.port = port;
  d.decision = "denied";
  d.reason = reason;
  return d;
}

void serve_http(State& s, int client, std::string buf, int64_t deadline) {
  std::size_t end = std::string::npos;
  const bool got = read_until(client, buf, max_http_head, deadline, [&](const std::string& b) {
    end = b.find("\r\n\r\n");
    return end != std::string::npos;
  });
  if (!got) {
    (void)send_all(client, http_refusal(400, "bad-request", ""));
    return;
  }
  std::string pending = buf.substr(end + 4);
  auto head = parse_http_head(std::string_view(buf).substr(0, end + 4));
  if (!head) {
    (void)send_all(client, http_refusal(400, "bad-request", ""));
    return;
  }
  const bool connect = head->method == "CONNECT";
  const std::string_view protocol = connect ? "http-connect" : "http";
  Authority authority;
  std::string origin_form;
  if (connect) {
    auto a = parse_authority(head->target, 0);
    if (!a) {
      (void)send_all(client, http_refusal(400, "bad-request", ""));
      return;
    }
    authority = std::move(*a);
  } else {
    auto u = parse_absolute_uri(head->target);
    if (!u) {
      (void)send_all(client, http_refusal(400, "bad-request", ""));
      return;
    }
    authority = std::move(u->authority);
    origin_form = std::move(u->origin_form);
  }
  auto host = hosts::canonical_host(authority.host);
  if (!host) {
    s.record(refused_request(protocol, authority.host, authority.port, "bad-host"));
    (void)send_all(client, http_refusal(400, "bad-host", ""));
    return;
  }
  if (!connect) {
    // The URI decides where the request goes; a server behind it reads
    // Host:. Both must name the same host, once.
    int count = 0;
    bool same = false;
    for (const auto& [name, value] : head->headers) {
      if (!same_name(name, "host")) continue;
      ++count;
      auto a = parse_authority(value, 80);
      auto h = a ? hosts::canonical_host(a->host) : std::expected<Host, std::string>(std::unexpected(""));
      same = h && h->name == host->name && a->port == authority.port;
    }
    if (count != 1 || !same) {
      Decision d = refused_request(protocol, host->name, authority.port, "host-mismatch");
      s.record(std::move(d));
      (void)send_all(client, http_refusal(400, "host-mismatch", host->name));
      return;
    }
  }
  // The one request the connection carries ends where its body does, so
  // the body's length must be known before anything is sent.
  uint64_t body = 0;
  if (!connect) {
    const BodyLength length = request_body_length(head->headers);
    if (!length.error.empty()) {
      s.record(refused_request(protocol, host->name, authority.port, length.error));
      (void)send_all(client, http_refusal(length.error == "transfer-encoding" ? 411 : 400, length.error, host->name));
      return;
    }
    body = length.bytes;
  }
  Opened o = open_target(s, protocol, *host, authority.port);
  if (o.status != 0) {
    const std::string reason = o.decision.reason;
    s.record(std::move(o.decision));
    (void)send_all(client, http_refusal(o.status, reason, host->name));
    return;
  }
  if (connect) {
    if (!send_all(client, "HTTP/1.1 200 Connection established\r\n\r\n")) return;
    tunnel(s, client, o, *host, std::move(pending), deadline);
    return;
  }
  // One request per connection: the upstream was chosen for this one, so
  // the proxy asks it to close after answering, and forwards nothing of
  // the client's past this request's body (relay()'s limit).
  std::string request = fmt::format("{} {} {}\r\n", head->method, origin_form, head->version);
  for (const auto& [name, value] : head->headers) {
    if (same_name(name, "proxy-connection") || same_name(name, "proxy-authorization") || same_name(name, "connection") ||
        same_name(name, "keep-alive"))
      continue;
    request += fmt::format("{}: {}\r\n", name, value);
  }
  request += "Connection: close\r\n\r\n";
  const std::size_t first = static_cast<std::size_t>(std::min<uint64_t>(body, pending.size()));
  request.append(pending, 0, first);
  const Tracked upstream(s, std::move(o.upstream));
  if (!upstream.ok()) return;
  s.record(o.decision);
  if (!send_all(upstream.get(), request)) return;
  relay(client, client, upstream.get(), upstream.get(), body - first);
}

// Reads from `client` into `buf` until `parse(buf)` is no longer
// incomplete (SOCKS asks for at most max_socks_request bytes).
template <typename Parsed>
Parsed read_parsed(int client, std::string& buf, int64_t deadline, Parsed (*parse)(std::string_view)) {
  Parsed r;
  if (!read_until(client, buf, max_socks_request, deadline, [&](const std::string& b) {
        r = parse(b);
        return r.status != SocksStatus::incomplete;
      }))
    r.status = SocksStatus::incomplete;
  return r;
}

// The common end of both SOCKS versions once the request is read.
void serve_socks(State& s, int client, std::string_view protocol, const SocksRequest& r, std::string pending, int64_t deadline,
                 const std::function<void(char)>& reply, char refused, char failed, std::string_view connected) {
  // A mapped IPv6 becomes its IPv4 here.
  auto host = hosts::canonical_host(r.host);
  if (!host || r.port == 0) {
    s.record(refused_request(protocol, r.host, r.port, "bad-host"));
    return reply(refused);
  }
  Opened o = open_target(s, protocol, *host, r.port);
  if (o.status != 0) {
    s.record(std::move(o.decision));
    return reply(o.status == 403 ? refused : failed);
  }
  // The bound address is not the client's business (and no client uses it).
  if (!send_all(client, connected)) return;
  tunnel(s, client, o, *host, std::move(pending), deadline);
}

void serve_socks5(State& s, int client, std::string buf, int64_t deadline) {
  const Socks5Greeting g = read_parsed(client, buf, deadline, parse_socks5_greeting);
  if (g.status != SocksStatus::ok) return;
  if (!g.no_auth) {
    (void)send_all(client, std::string("\x05\xff", 2));  // only "no authentication"
    return;
  }
  if (!send_all(client, std::string("\x05\x00", 2))) return;
  buf.erase(0, g.consumed);
  auto reply = [&](char code) { (void)send_all(client, std::string("\x05", 1) + code + std::string("\x00\x01\0\0\0\0\0\0", 8)); };
  const SocksRequest r = read_parsed(client, buf, deadline, parse_socks5_request);
  if (r.status == SocksStatus::bad && r.reply != 0) return reply(static_cast<char>(r.reply));
  if (r.status != SocksStatus::ok) return;
  serve_socks(s, client, "socks5", r, buf.substr(r.consumed), deadline, reply, 0x02, 0x04,
              std::string_view("\x05\x00\x00\x01\0\0\0\0\0\0", 10));
}

void serve_socks4(State& s, int client, std::string buf, int64_t deadline) {
  auto reply = [&](char code) { (void)send_all(client, std::string("\x00", 1) + code + std::string(6, '\0')); };
  const SocksRequest r = read_parsed(client, buf, deadline, parse_socks4_request);
  if (r.status != SocksStatus::ok) {
    if (buf.size() >= 8) reply(0x5b);
    return;
  }
  serve_socks(s, client, "socks4", r, buf.substr(r.consumed), deadline, reply, 0x5b, 0x5b,
              std::string_view("\x00\x5a\0\0\0\0\0\0", 8));
}

// One listener for the three protocols: the first byte tells them apart
// (SOCKS versions 5 and 4; HTTP starts with a method's letter).
void serve_client(State& s, Fd fd) {
  const Tracked client(s, std::move(fd));
  if (!client.ok()) return;
  const int64_t deadline = now_ms() + handshake_ms;
  std::string buf;
  if (!read_exact(client.get(), buf, 1, deadline)) return;
  if (buf[0] == 5) return serve_socks5(s, client.get(), std::move(buf), deadline);
  if (buf[0] == 4) return serve_socks4(s, client.get(), std::move(buf), deadline);
  serve_http(s, client.get(), std::move(buf), deadline);
}

// DNS: names are judged as the proxy judges them (any port), and answered
// with the CNAME chain and the addresses nsrun resolved when all of those
// pass too (a chain that ends at 127.0.0.1 is refused as the address is).
std::string answer_dns(State& s, std::string_view packet) {
  auto q = parse_dns_query(packet);
  if (!q) return dns_format_error(packet);
  auto host = hosts::canonical_host(q->name);
  if (!host || q->klass != 1) {
    s.record(refused_request("dns", q->name, 0, "bad-host"));
    return dns_answer(packet, *q, dns_refused, {});
  }
  Decision d;
  d.protocol = "dns";
  d.host = host->name;
  hosts::Verdict v = hosts::decide(s.config.rules, *host, 0);
  if (!v.allowed) {
    d.decision = "denied";
    d.reason = v.reason;
    d.rule = v.rule;
    s.record(std::move(d));
    return dns_answer(packet, *q, dns_refused, {});
  }
  d.rule = v.rule;
  const resolve::Resolution resolved = resolve_host(s, *host);
  const std::vector<Address>& addresses = resolved.addresses;
  d.cnames = resolved.cnames;
  if (addresses.empty()) {
    d.decision = "failed";
    d.reason = "resolve";
    s.record(std::move(d));
    return dns_answer(packet, *q, resolved.error == "nxdomain" ? dns_nxdomain : dns_servfail, {});
  }
  std::string which;
  v = judge_chain(s, resolved.cnames, 0);
  if (v.allowed) v = judge_addresses(s, addresses, 0, which);
  if (!v.allowed) {
    d.decision = "denied";
    d.reason = v.reason;
    d.rule = v.rule;
    d.address = which;
    s.record(std::move(d));
    return dns_answer(packet, *q, dns_refused, {});
  }
  d.decision = "allowed";
  for (const auto& a : addresses)
    if ((q->type == dns_a && a.v4) || (q->type == dns_aaaa && !a.v4)) {
      d.address = hosts::address_text(a);
      break;
    }
  s.record(std::move(d));
  return dns_answer(packet, *q, 0, addresses, resolved.cnames);
}

void serve_dns_tcp(State& s, Fd fd) {
  const Tracked client(s, std::move(fd));
  if (!client.ok()) return;
  while (true) {
    const int64_t deadline = now_ms() + handshake_ms;
    std::string buf;
    if (!read_exact(client.get(), buf, 2, deadline)) return;
    const std::size_t size = (static_cast<std::size_t>(static_cast<unsigned char>(buf[0])) << 8) | static_cast<unsigned char>(buf[1]);
    if (!read_exact(client.get(), buf, 2 + size, deadline)) return;
    const std::string answer = answer_dns(s, std::string_view(buf).substr(2, size));
    if (answer.empty()) return;
    const std::string framed = std::string{static_cast<char>(answer.size() >> 8), static_cast<char>(answer.size() & 0xff)} + answer;
    if (!send_all(client.get(), framed)) return;
  }
}

// Starts `fn` as a worker, or drops the connection when at the limit.
void start_worker(const std::shared_ptr<State>& s, std::function<void(State&)> fn) {
  if (!s->enter()) return;
  if (!spawn([s, fn = std::move(fn)] {
        fn(*s);
        s->leave();
      }))
    s->leave();
}

// The listeners, when the sandbox has sent them (nsrun's wait loop saw
// the channel readable, or polls it).
Result<std::array<Fd, 3>> receive_listeners(State& s) {
  int fds[3] = {-1, -1, -1};
  ListenerMessage m;
  ssize_t n;
  do n = ::recvmsg(s.channel.get(), &m.msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return fail(Error{"egress listeners", EAGAIN, {}, "not sent yet"});
  s.channel.reset();
  const cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (n != 1 || c == nullptr || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof fds))
    return fail(Error{"egress listeners", 0, {}, "the sandbox sent none"});
  std::memcpy(fds, CMSG_DATA(c), sizeof fds);
  return std::array<Fd, 3>{Fd(fds[0]), Fd(fds[1]), Fd(fds[2])};
}

// The proxy: reads what nsrun sent, without waiting. False once nsrun
// said stop or is gone.
bool drain_control(State& s) {
  char m[8];
  while (true) {
    const ssize_t n = ::recv(s.ctl.get(), m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0 || m[0] == 'S') return false;
    if (n == 3 && (m[0] == 'P' || m[0] == 'U')) {
      const uint16_t port = be16(std::string_view(m, 3), 1);
      if (m[0] == 'P') s.announced.insert(port);
      else if (auto it = s.announced.find(port); it != s.announced.end()) s.announced.erase(it);
    }
  }
}

// The Landlock rung's listener is on the host's loopback: serve a peer
// only from a socket nsrun made for the command, each once.
bool admit(State& s, const sockaddr_storage& peer) {
  if (!s.config.announced_peers_only) return true;
  (void)drain_control(s);  // the announcement was sent before the connect
  if (peer.ss_family != AF_INET) return false;
  const auto& in = reinterpret_cast<const sockaddr_in&>(peer);
  if (ntohl(in.sin_addr.s_addr) != INADDR_LOOPBACK) return false;
  auto it = s.announced.find(ntohs(in.sin_port));
  if (it == s.announced.end()) return false;
  s.announced.erase(it);
  return true;
}

void serve_listeners(const std::shared_ptr<State>& s, std::array<Fd, 3>& listeners) {
  auto& [proxy, dns_udp, dns_tcp] = listeners;
  pollfd p[4] = {{proxy.get(), POLLIN, 0}, {dns_udp.get(), POLLIN, 0}, {dns_tcp.get(), POLLIN, 0}, {s->ctl.get(), POLLIN, 0}};
  const int udp = dns_udp.get();
  while (true) {
    if (::poll(p, 4, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[3].revents != 0 && !drain_control(*s)) return;
    if ((p[0].revents & POLLIN) != 0) {
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof peer;
      Fd c(::accept4(proxy.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC));
      if (c && !admit(*s, peer)) {
        Decision d;
        d.protocol = "proxy";
        d.decision = "denied";
        d.reason = "not-from-the-sandbox";
        s->record(std::move(d));
        c.reset();
      }
      if (c) start_worker(s, [c = std::make_shared<Fd>(std::move(c))](State& st) { serve_client(st, std::move(*c)); });
    }
    if ((p[2].revents & POLLIN) != 0) {
      Fd c(::accept4(dns_tcp.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (c) start_worker(s, [c = std::make_shared<Fd>(std::move(c))](State& st) { serve_dns_tcp(st, std::move(*c)); });
    }
    if ((p[1].revents & POLLIN) != 0) {
      char packet[4096];
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      const ssize_t n = ::recvfrom(udp, packet, sizeof packet, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n > 0) {
        // The socket stays open while any worker may answer on it: the
        // process waits for the workers before it ends.
        start_worker(s, [udp, query = std::string(packet, static_cast<std::size_t>(n)), from, from_len](State& st) {
          const std::string answer = answer_dns(st, query);
          if (!answer.empty())
            (void)::sendto(udp, answer.data(), answer.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&from), from_len);
        });
      }
    }
  }
}

// The proxy process's fd table: 0, 1 and 2 a socket whose peer is gone
// (what writes there fails, nothing reads), 3 the control socket, 4 to 6
// the listeners (the Landlock rung has one). Every other fd of nsrun's is
// closed: the report, the network log, the sandbox's channels, the
// seccomp listener, directories.
constexpr int proxy_ctl_fd = 3, proxy_listener_fd = 4, proxy_fds = 7;

bool arrange_fds(int ctl, const std::array<int, 3>& listeners) {
  int dead[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, dead) != 0) return false;
  ::close(dead[1]);
  const int from[2 + 3] = {dead[0], ctl, listeners[0], listeners[1], listeners[2]};
  int moved[5];
  // Above every target first, so that no dup2() below lands on a source.
  for (int i = 0; i < 5; ++i)
    if ((moved[i] = from[i] < 0 ? -1 : ::fcntl(from[i], F_DUPFD_CLOEXEC, 16)) < 0 && from[i] >= 0) return false;
  for (int fd = 0; fd < 3; ++fd)
    if (::dup2(moved[0], fd) != fd) return false;
  for (int i = 1; i < 5; ++i) {
    const int target = proxy_ctl_fd + i - 1;
    if (moved[i] < 0) ::close(target);
    else if (::dup3(moved[i], target, O_CLOEXEC) != target) return false;
  }
  return ::close_range(proxy_fds, ~0U, 0) == 0;
}

// The proxy process, forked from nsrun's main thread by wake(). Never
// returns.
[[noreturn]] void proxy_process(const State& nsrun_state, const ProxyConfinement& confinement, pid_t nsrun) {
  if (!die_with(nsrun)) ::_exit(0);
  // No terminal signal: nsrun decides when the proxy ends.
  (void)::setsid();
  (void)::prctl(PR_SET_NAME, "nsrun-proxy", 0, 0, 0);
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  (void)::sigaction(SIGPIPE, &ignore, nullptr);
  auto s = std::make_shared<State>();
  s->in_proxy = true;
  s->config.rules = nsrun_state.config.rules;
  s->config.pinned = nsrun_state.config.pinned;
  s->config.announced_peers_only = nsrun_state.config.announced_peers_only;
  s->hosts_text = resolve::read_hosts_file();
  s->resolver = resolve::read_resolv_conf();
  auto confined = confine_proxy_files(confinement);
  const auto& l = *nsrun_state.listeners;
  if (!arrange_fds(nsrun_state.proxy_ctl.get(), {l[0].get(), l[1].get(), l[2].get()})) ::_exit(1);
  s->ctl = Fd(proxy_ctl_fd);
  std::array<Fd, 3> listeners{Fd(proxy_listener_fd), Fd(l[1] ? proxy_listener_fd + 1 : -1), Fd(l[2] ? proxy_listener_fd + 2 : -1)};
  if (confined) confined = confine_proxy_calls(confinement);
  if (!confined) {
    const std::string m = "E" + confined.error().message();
    (void)::send(s->ctl.get(), m.data(), m.size(), MSG_NOSIGNAL);
    ::_exit(1);
  }
  serve_listeners(s, listeners);
  // The end: every connection shut down, its worker given a grace period
  // (one inside a lookup is bounded by resolve_ms; its decision is then
  // lost), and the UDP socket they answer on closed only after them.
  std::unique_lock lock(s->mutex);
  s->stopping = true;
  for (int fd : s->open) ::shutdown(fd, SHUT_RDWR);
  s->idle.wait_for(lock, std::chrono::seconds(2), [&] { return s->workers == 0; });
  ::_exit(0);
}

// nsrun: the proxy's messages, until it ends.
void read_messages(State& s) {
  std::string buf(max_decision_message, '\0');
  auto done_reading = [&] {
    const std::lock_guard lock(s.mutex);
    s.reading = false;
    s.idle.notify_all();
  };
  while (true) {
    // Marked as being read while still in the socket (settle() sees
    // either the bytes queued or the mark).
    struct pollfd pfd{s.ctl.get(), POLLIN, 0};
    if (::poll(&pfd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    {
      const std::lock_guard lock(s.mutex);
      s.reading = true;
    }
    const ssize_t n = ::recv(s.ctl.get(), buf.data(), buf.size(), MSG_TRUNC | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      done_reading();
      continue;
    }
    if (n <= 0) break;
    if (static_cast<std::size_t>(n) > buf.size()) {  // not one nsrun's proxy writes
      done_reading();
      continue;
    }
    const std::string_view m(buf.data(), static_cast<std::size_t>(n));
    if (m[0] == 'D') {
      if (auto d = decode_decision(m)) s.record(std::move(*d));
      done_reading();
    } else if (m[0] == 'E') {
      done_reading();
      fmt::print(stderr, "nsrun: --network proxy: the proxy could not confine itself ({}); the sandbox's connections are refused\n",
                 printable(m.substr(1), 512));
    } else {
      done_reading();
    }
  }
  const std::lock_guard lock(s.mutex);
  s.reader_done = true;
  s.reading = false;
  s.idle.notify_all();
}

}  // namespace

std::string encode_decision(const Decision& d) {
  std::string out = "D";
  put16(out, d.port);
  for (const std::string* f : {&d.protocol, &d.host, &d.address, &d.decision, &d.reason, &d.rule}) {
    const std::string_view v = std::string_view(*f).substr(0, max_decision_field);
    put16(out, static_cast<uint16_t>(v.size()));
    out += v;
  }
  const std::size_t cnames = std::min<std::size_t>(d.cnames.size(), max_decision_cnames);
  out.push_back(static_cast<char>(cnames));
  for (std::size_t i = 0; i < cnames; ++i) {
    const std::string_view v = std::string_view(d.cnames[i]).substr(0, max_decision_field);
    put16(out, static_cast<uint16_t>(v.size()));
    out += v;
  }
  return out;
}

std::optional<Decision> decode_decision(std::string_view m) {
  if (m.size() < 3 || m[0] != 'D') return std::nullopt;
  Decision d;
  d.port = be16(m, 1);
  std::size_t at = 3;
  auto field = [&](std::string& out) {
    if (at + 2 > m.size()) return false;
    const std::size_t n = be16(m, at);
    at += 2;
    if (n > max_decision_field || at + n > m.size()) return false;
    out = m.substr(at, n);
    at += n;
    return true;
  };
  for (std::string* f : {&d.protocol, &d.host, &d.address, &d.decision, &d.reason, &d.rule})
    if (!field(*f)) return std::nullopt;
  if (d.decision != "allowed" && d.decision != "denied" && d.decision != "failed") return std::nullopt;
  if (at >= m.size()) return std::nullopt;
  const std::size_t cnames = static_cast<unsigned char>(m[at++]);
  if (cnames > max_decision_cnames) return std::nullopt;
  d.cnames.resize(cnames);
  for (auto& c : d.cnames)
    if (!field(c)) return std::nullopt;
  if (at != m.size()) return std::nullopt;
  return d;
}

Result<std::unique_ptr<Egress>> Egress::start_on(const EgressConfig& config, Fd proxy_listener) {
  return start(config, Fd(), std::move(proxy_listener));
}

Result<std::unique_ptr<Egress>> Egress::start(const EgressConfig& config, Fd from_sandbox) {
  return start(config, std::move(from_sandbox), Fd());
}

void Egress::observe(std::function<void(const Decision&)> observer) {
  if (!state_) return;
  const std::lock_guard lock(state_->mutex);
  state_->observer = std::move(observer);
}

std::function<bool(int)> Egress::settler() {
  return [state = state_](int max_ms) {
    if (!state) return true;
    State& s = *state;
    std::unique_lock lock(s.mutex);
    if (!s.reader) return true;  // no proxy ran: nothing is on its way
    return s.idle.wait_for(lock, std::chrono::milliseconds(max_ms), [&] {
      if (s.reader_done || !s.ctl) return true;
      int queued = 0;
      return !s.reading && ::ioctl(s.ctl.get(), FIONREAD, &queued) == 0 && queued == 0;
    });
  };
}

void Egress::record(Decision d) {
  if (state_) state_->record(std::move(d));
}

void Egress::announce(uint16_t port, bool made) {
  char m[3] = {made ? 'P' : 'U', static_cast<char>(port >> 8), static_cast<char>(port & 0xff)};
  // Queued before the command's connection is made: the proxy reads it
  // before it judges the peer (admit()).
  (void)::send(state_->ctl.get(), m, sizeof m, MSG_NOSIGNAL);
}

Result<std::unique_ptr<Egress>> Egress::start(const EgressConfig& config, Fd from_sandbox, Fd given) {
  auto s = std::make_shared<State>();
  s->config = config;
  s->channel = std::move(from_sandbox);
  // The Landlock rung's one listener (no DNS: the other two stay -1,
  // which poll() passes over).
  if (given) s->listeners = std::array<Fd, 3>{std::move(given), Fd(), Fd()};
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return fail(sys_error("egress proxy", "socketpair"));
  s->ctl = Fd(pair[0]);
  s->proxy_ctl = Fd(pair[1]);
  // No process yet: wake() starts it when nsrun's wait loop sees the first
  // connection or query on a listener (a launch that never uses the
  // network pays for no proxy).
  return std::unique_ptr<Egress>(new Egress(std::move(s)));
}

std::vector<int> Egress::wake_fds() {
  State& s = *state_;
  if (s.woken) return {};
  // The sandbox sends them before it builds its root, so before it says
  // exec; should they not be there yet, the channel itself is watched.
  if (!s.listeners && s.channel)
    if (auto got = receive_listeners(s); got) s.listeners = std::move(*got);
  if (!s.listeners) return s.channel ? std::vector<int>{s.channel.get()} : std::vector<int>{};
  return {(*s.listeners)[0].get(), (*s.listeners)[1].get(), (*s.listeners)[2].get()};
}

bool Egress::wake() {
  State& s = *state_;
  if (s.woken) return true;
  s.woken = true;
  if (!s.listeners && s.channel)
    if (auto got = receive_listeners(s); got) s.listeners = std::move(*got);
  if (!s.listeners) return true;  // the sandbox sent none: nothing to serve
  auto give_up = [&] {
    // No proxy: close the listeners, so that the sandbox's connections
    // are refused rather than left hanging. Its network stays closed.
    s.listeners.reset();
    s.channel.reset();
    s.proxy_ctl.reset();
    return false;
  };
  auto confinement = prepare_proxy_confinement();
  if (!confinement) return give_up();
  // Forked, never cloned with CLONE_VM: the proxy shares no memory with
  // nsrun after this. nsrun has no other thread here, so the child
  // inherits no lock another thread held: the reader starts below, and a
  // session's nsrun, which serves its control socket on a thread
  // (session/host.cpp), wakes its proxy at once, before that thread
  // starts (launch/namespaces_rung.cpp wake_proxy_now()). Nothing may
  // call this from a process that runs another thread.
  const pid_t nsrun = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return give_up();
  if (pid == 0) proxy_process(s, *confinement, nsrun);
  // Before the wait loop can reap it: the pidfd names this process for
  // good, whoever reaps it.
  s.pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  s.listeners.reset();
  s.proxy_ctl.reset();
  if (!s.pidfd) {
    ::kill(pid, SIGKILL);
    return false;
  }
  pthread_t reader;
  if (::pthread_create(
          &reader, nullptr,
          [](void* arg) -> void* {
            read_messages(*static_cast<State*>(arg));
            return nullptr;
          },
          &s) != 0) {
    // No one to hear the proxy: end it, and with it the listeners.
    (void)::syscall(SYS_pidfd_send_signal, s.pidfd.get(), SIGKILL, nullptr, 0);
    siginfo_t info{};
    (void)::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(s.pidfd.get()), &info, WEXITED);
    return false;
  }
  s.reader = reader;
  return true;
}

std::vector<Decision> Egress::stop() {
  if (!state_) return {};
  State& s = *state_;
  if (!s.stopped) {
    s.stopped = true;
    if (s.reader) {
      (void)::send(s.ctl.get(), "S", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      {
        // The proxy gives its workers 2 s; past 3, it is ended.
        std::unique_lock lock(s.mutex);
        if (!s.idle.wait_for(lock, std::chrono::seconds(3), [&] { return s.reader_done; }))
          (void)::syscall(SYS_pidfd_send_signal, s.pidfd.get(), SIGKILL, nullptr, 0);
      }
      ::pthread_join(*s.reader, nullptr);
      siginfo_t info{};
      (void)::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(s.pidfd.get()), &info, WEXITED);
    }
    const std::lock_guard lock(s.mutex);
    s.config.log_fd = -1;
    s.ctl.reset();
    s.proxy_ctl.reset();
    s.listeners.reset();
    s.channel.reset();
  }
  const std::lock_guard lock(s.mutex);
  return s.decisions;
}

Egress::~Egress() { (void)stop(); }

int connect_main(std::span<const std::string> args) {
  auto usage = [](std::string_view why) {
    fmt::print(stderr, "nsrun: connect: {} (usage: nsrun connect HOST PORT, inside --network proxy)\n", why);
    return 125;
  };
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fmt::print("usage: nsrun connect HOST PORT\n\n"
               "Inside a sandbox started with --network proxy: opens a tunnel to HOST:PORT\n"
               "through the sandbox's egress proxy and relays standard input and output over\n"
               "it (an ssh ProxyCommand: -o ProxyCommand='nsrun connect %h %p').\n");
    return 0;
  }
  if (args.size() != 2) return usage("needs HOST and PORT");
  auto target = parse_authority(args[0].find(':') != std::string::npos && !args[0].starts_with('[')
                                    ? "[" + args[0] + "]:" + args[1]
                                    : args[0] + ":" + args[1],
                                0);
  if (!target) return usage(target.error());
  Address loopback;
  loopback.bytes = {127, 0, 0, 1};
  // The Landlock rung's proxy is on a port the kernel picked; the
  // environment nsrun set names it.
  uint16_t port = proxy_port;
  if (const char* env = std::getenv("http_proxy"); env != nullptr) {
    const std::string_view v = env, prefix = "http://127.0.0.1:";
    uint16_t p = 0;
    if (v.starts_with(prefix)) {
      const auto [end, ec] = std::from_chars(v.data() + prefix.size(), v.data() + v.size(), p);
      if (ec == std::errc{} && end == v.data() + v.size() && p != 0) port = p;
    }
  }
  Fd s = connect_to(loopback, port);
  if (!s) {
    fmt::print(stderr, "nsrun: connect: 127.0.0.1:{}: {}\n", port, std::strerror(errno));
    return 1;
  }
  const std::string authority = target->host.find(':') != std::string::npos
                                    ? fmt::format("[{}]:{}", target->host, target->port)
                                    : fmt::format("{}:{}", target->host, target->port);
  if (!send_all(s.get(), fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", authority))) return 1;
  std::string head;
  std::size_t end = std::string::npos;
  if (!read_until(s.get(), head, max_http_head, now_ms() + connect_ms + handshake_ms, [&](const std::string& b) {
        end = b.find("\r\n\r\n");
        return end != std::string::npos;
      })) {
    fmt::print(stderr, "nsrun: connect: {}: no answer from the proxy\n", printable(authority));
    return 1;
  }
  if (!head.starts_with("HTTP/1.1 200")) {
    fmt::print(stderr, "nsrun: connect: {}: {}\n", printable(authority), printable(head.substr(0, head.find("\r\n"))));
    return 1;
  }
  if (end + 4 < head.size() && !send_all(STDOUT_FILENO, std::string_view(head).substr(end + 4))) return 1;
  relay(STDIN_FILENO, STDOUT_FILENO, s.get(), s.get());
  return 0;
}

}  // namespace nsrun::egress
