#include "net/resolve.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "net/wire.hpp"
#include "sys/fd.hpp"

namespace nsrun::resolve {

using hosts::Address;

namespace {

using egress::be16;
using egress::put16;
using egress::put_dns_name;

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

// Whitespace-separated words of one line, comments (`#`, and `;` in
// resolv.conf) cut off.
std::vector<std::string_view> words(std::string_view line, std::string_view comment) {
  if (const std::size_t c = line.find_first_of(comment); c != std::string_view::npos) line = line.substr(0, c);
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) break;
    line.remove_prefix(b);
    const std::size_t e = line.find_first_of(" \t\r");
    out.push_back(line.substr(0, e));
    if (e == std::string_view::npos) break;
    line.remove_prefix(e);
  }
  return out;
}

template <class Fn>
void each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

std::optional<int> option_value(std::string_view word, std::string_view key) {
  if (!word.starts_with(key)) return std::nullopt;
  word.remove_prefix(key.size());
  int v = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (word.empty() || ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return v;
}

// An AAAA record holding an IPv4-mapped address is that IPv4 address, and
// is judged as one.
Address normalised(const Address& a) {
  if (a.v4) return a;
  auto parsed = hosts::parse_address(hosts::address_text(a));
  return parsed ? *parsed : a;
}

int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

uint16_t random_id() {
  uint16_t id = 0;
  // getrandom of 2 bytes from an initialised pool does not fail; if it
  // did, the clock's nanoseconds are better than a fixed id.
  if (::getrandom(&id, sizeof id, 0) != static_cast<ssize_t>(sizeof id)) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    id = static_cast<uint16_t>(ts.tv_nsec ^ (ts.tv_nsec >> 16));
  }
  return id;
}

}  // namespace

Config parse_resolv_conf(std::string_view text) {
  Config c;
  each_line(text, [&](std::string_view line) {
    const auto w = words(line, "#;");
    if (w.empty()) return;
    if (w[0] == "nameserver" && w.size() >= 2) {
      // A scoped IPv6 address (fe80::1%eth0) names an interface this
      // resolver does not bind to: skipped, as are words that are no
      // address at all.
      if (w[1].find('%') != std::string_view::npos) return;
      if (auto a = hosts::parse_address(w[1]); a && c.servers.size() < 3) c.servers.push_back(Server{*a, 53});
    } else if (w[0] == "options") {
      for (std::size_t i = 1; i < w.size(); ++i) {
        if (auto v = option_value(w[i], "timeout:")) c.timeout_ms = std::clamp(*v, 1, 30) * 1000;
        if (auto v = option_value(w[i], "attempts:")) c.attempts = std::clamp(*v, 1, 5);
      }
    }
  });
  if (c.servers.empty()) {
    Server local;
    local.address.bytes = {127, 0, 0, 1};
    c.servers.push_back(local);
  }
  return c;
}

std::vector<Address> hosts_lookup(std::string_view hosts_text, std::string_view name) {
  std::vector<Address> out;
  each_line(hosts_text, [&](std::string_view line) {
    const auto w = words(line, "#");
    if (w.size() < 2) return;
    auto a = hosts::parse_address(w[0]);
    if (!a) return;
    for (std::size_t i = 1; i < w.size(); ++i) {
      auto h = hosts::canonical_host(w[i]);
      if (h && !h->is_address && h->name == name) {
        if (std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
        break;
      }
    }
  });
  return out;
}

std::string build_query(uint16_t id, std::string_view name, uint16_t type) {
  std::string out;
  put16(out, id);
  put16(out, 0x0100);  // a standard query, recursion desired
  put16(out, 1);
  out.append(6, '\0');
  if (!put_dns_name(out, name)) return {};
  put16(out, type);
  put16(out, 1);
  return out;
}

std::expected<std::string, std::string> read_name(std::string_view p, std::size_t& at) {
  std::string name;
  std::size_t pos = at;
  // Where the labels being read start: a pointer must point before it, so
  // every jump goes strictly backwards and a loop is impossible.
  std::size_t segment = at;
  bool jumped = false;
  std::size_t wire = 0;
  while (true) {
    if (pos >= p.size()) return std::unexpected("name runs past the end");
    const unsigned len = static_cast<unsigned char>(p[pos]);
    if ((len & 0xc0) == 0xc0) {
      if (pos + 1 >= p.size()) return std::unexpected("name runs past the end");
      const std::size_t target = ((len & 0x3f) << 8) | static_cast<unsigned char>(p[pos + 1]);
      if (target >= segment) return std::unexpected("compression pointer that does not point back");
      if (!jumped) at = pos + 2;
      jumped = true;
      segment = pos = target;
      continue;
    }
    if ((len & 0xc0) != 0) return std::unexpected("unknown label type");
    if (len == 0) {
      if (!jumped) at = pos + 1;
      break;
    }
    if (pos + 1 + len > p.size()) return std::unexpected("label runs past the end");
    wire += 1 + len;
    if (wire + 1 > 255) return std::unexpected("name longer than 255 bytes");
    const std::string_view label = p.substr(pos + 1, len);
    // A dot inside a label would make two names read alike; control and
    // non-ASCII bytes have no place in a host name.
    for (char c : label)
      if (c == '.' || static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        return std::unexpected("a byte that is not allowed in a host name");
    if (!name.empty()) name.push_back('.');
    name += lowered(label);
    pos += 1 + len;
  }
  if (name.empty()) return std::unexpected("the root name");
  return name;
}

std::expected<Reply, std::string> parse_reply(std::string_view p, uint16_t id, std::string_view name, uint16_t type) {
  if (p.size() < 12) return std::unexpected("shorter than a header");
  if (be16(p, 0) != id) return std::unexpected("another query's id");
  const uint16_t flags = be16(p, 2);
  if ((flags & 0x8000) == 0) return std::unexpected("not a response");
  if (((flags >> 11) & 0xf) != 0) return std::unexpected("not a standard query's response");
  if (be16(p, 4) != 1) return std::unexpected("not one question");
  Reply r;
  r.rcode = flags & 0xf;
  r.truncated = (flags & 0x0200) != 0;
  const std::size_t answers = be16(p, 6);
  std::size_t at = 12;
  auto qname = read_name(p, at);
  if (!qname) return std::unexpected("question: " + qname.error());
  if (*qname != lowered(name)) return std::unexpected("another question's name");
  if (at + 4 > p.size()) return std::unexpected("question runs past the end");
  if (be16(p, at) != type || be16(p, at + 2) != 1) return std::unexpected("another question's type");
  at += 4;
  if (r.truncated) return r;
  // Each record takes at least 11 bytes (a pointer or the root, ten
  // fixed): a count beyond that is a lie, refused before any work.
  if (answers > (p.size() - at) / 11) return std::unexpected("more answers than the packet holds");
  struct Record {
    std::string owner;
    uint16_t type;
    std::string cname;
    Address address;
  };
  std::vector<Record> records;
  for (std::size_t i = 0; i < answers; ++i) {
    auto owner = read_name(p, at);
    if (!owner) return std::unexpected("answer: " + owner.error());
    if (at + 10 > p.size()) return std::unexpected("answer runs past the end");
    Record rec{std::move(*owner), be16(p, at), {}, {}};
    const uint16_t klass = be16(p, at + 2);
    const std::size_t size = be16(p, at + 8);
    at += 10;
    if (at + size > p.size()) return std::unexpected("answer data runs past the end");
    const std::size_t end = at + size;
    if (klass != 1) {
      at = end;
      continue;
    }
    if (rec.type == type_cname) {
      std::size_t in = at;
      auto target = read_name(p, in);
      if (!target) return std::unexpected("CNAME: " + target.error());
      if (in != end) return std::unexpected("CNAME data longer than its name");
      rec.cname = std::move(*target);
    } else if (rec.type == type_a || rec.type == type_aaaa) {
      if (size != (rec.type == type_a ? 4u : 16u)) return std::unexpected("address of the wrong size");
      rec.address.v4 = rec.type == type_a;
      std::memcpy(rec.address.bytes.data(), p.data() + at, size);
    }
    at = end;
    records.push_back(std::move(rec));
  }
  std::string current = lowered(name);
  for (int hops = 0;; ++hops) {
    const Record* next = nullptr;
    for (const auto& rec : records)
      if (rec.type == type_cname && rec.owner == current) {
        if (next != nullptr && next->cname != rec.cname) return std::unexpected("two CNAMEs for one name");
        next = &rec;
      }
    if (next == nullptr) break;
    if (hops == max_cname_hops) return std::unexpected("CNAME chain too long");
    if (next->cname == lowered(name) || std::find(r.cnames.begin(), r.cnames.end(), next->cname) != r.cnames.end())
      return std::unexpected("CNAME loop");
    current = next->cname;
    r.cnames.push_back(current);
  }
  for (const auto& rec : records)
    if (rec.type == type && rec.owner == current) {
      const Address a = normalised(rec.address);
      if (std::find(r.addresses.begin(), r.addresses.end(), a) == r.addresses.end()) r.addresses.push_back(a);
    }
  return r;
}

namespace {

sockaddr_storage to_sockaddr(const Server& s, socklen_t& len) {
  sockaddr_storage ss{};
  if (s.address.v4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(s.port);
    std::memcpy(&in->sin_addr, s.address.bytes.data(), 4);
    len = sizeof *in;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(s.port);
    std::memcpy(&in6->sin6_addr, s.address.bytes.data(), 16);
    len = sizeof *in6;
  }
  return ss;
}

// Waits for `events` on `fd` until `until` (monotonic ms); false on timeout.
bool wait_for(int fd, short events, int64_t until) {
  while (true) {
    const int64_t left = until - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

// A socket connected to the server. For UDP, connect() makes the kernel
// drop datagrams from any other source, and gives the socket a random
// ephemeral port: a spoofer must guess the port and the id.
Fd open_socket(const Server& server, int type, int64_t until) {
  Fd s(::socket(server.address.v4 ? AF_INET : AF_INET6, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return s;
  socklen_t len = 0;
  const sockaddr_storage ss = to_sockaddr(server, len);
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    if (errno != EINPROGRESS || !wait_for(s.get(), POLLOUT, until)) return Fd();
    int err = 0;
    socklen_t errlen = sizeof err;
    if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &errlen) != 0 || err != 0) return Fd();
  }
  return s;
}

bool read_exact(int fd, std::string& buf, std::size_t n, int64_t until) {
  char tmp[4096];
  while (buf.size() < n) {
    if (!wait_for(fd, POLLIN, until)) return false;
    const ssize_t got = ::recv(fd, tmp, std::min(sizeof tmp, n - buf.size()), 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(got));
  }
  return true;
}

std::expected<Reply, std::string> over_tcp(const Server& server, std::string_view name, uint16_t type, int64_t until) {
  const uint16_t id = random_id();
  const std::string query = build_query(id, name, type);
  Fd s = open_socket(server, SOCK_STREAM, until);
  if (!s) return std::unexpected("tcp connect");
  std::string framed;
  put16(framed, static_cast<uint16_t>(query.size()));
  framed += query;
  std::string_view left = framed;
  while (!left.empty()) {
    if (!wait_for(s.get(), POLLOUT, until)) return std::unexpected("timeout");
    const ssize_t n = ::send(s.get(), left.data(), left.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return std::unexpected("tcp send");
    left.remove_prefix(static_cast<std::size_t>(n));
  }
  std::string buf;
  if (!read_exact(s.get(), buf, 2, until)) return std::unexpected("tcp read");
  const std::size_t size = be16(buf, 0);
  buf.clear();
  if (!read_exact(s.get(), buf, size, until)) return std::unexpected("tcp read");
  auto r = parse_reply(buf, id, name, type);
  if (r && r->truncated) return std::unexpected("truncated over tcp");
  return r;
}

// One question to one server: over UDP, then over TCP when the answer
// was truncated. A datagram that is not the answer (another id, another
// question, garbage) is dropped and the wait goes on: a spoofer's packet
// must not end the lookup.
std::expected<Reply, std::string> exchange(const Server& server, std::string_view name, uint16_t type, int64_t until) {
  const uint16_t id = random_id();
  const std::string query = build_query(id, name, type);
  if (query.empty()) return std::unexpected("bad name");
  Fd s = open_socket(server, SOCK_DGRAM, until);
  if (!s) return std::unexpected("udp socket");
  if (::send(s.get(), query.data(), query.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(query.size()))
    return std::unexpected("udp send");
  char buf[65536];
  std::string last = "timeout";
  while (wait_for(s.get(), POLLIN, until)) {
    const ssize_t n = ::recv(s.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // ECONNREFUSED: nothing listens there (an ICMP error on the connected socket).
    if (n < 0) return std::unexpected(std::string("udp: ") + std::strerror(errno));
    auto r = parse_reply(std::string_view(buf, static_cast<std::size_t>(n)), id, name, type);
    if (!r) {
      last = r.error();
      continue;
    }
    if (r->truncated) return over_tcp(server, name, type, until);
    return r;
  }
  return std::unexpected(last);
}

// The servers in turn, `attempts` rounds, each try bounded by the
// configured timeout and all by `until`. An answer (NOERROR or NXDOMAIN)
// ends the search; SERVFAIL, REFUSED and silence move to the next server.
std::expected<Reply, std::string> ask(const Config& c, std::string_view name, uint16_t type, int64_t until) {
  std::string last = "no nameserver";
  for (int round = 0; round < c.attempts; ++round)
    for (const auto& server : c.servers) {
      if (now_ms() >= until) return std::unexpected("timeout");
      auto r = exchange(server, name, type, std::min(until, now_ms() + c.timeout_ms));
      if (r && (r->rcode == 0 || r->rcode == rcode_nxdomain)) return r;
      last = r ? "rcode " + std::to_string(r->rcode) : r.error();
    }
  return std::unexpected(last);
}

}  // namespace

Resolution resolve(std::string_view name, std::string_view hosts_text, const Config& config, int deadline_ms) {
  Resolution out;
  out.addresses = hosts_lookup(hosts_text, name);
  if (!out.addresses.empty()) {
    std::stable_partition(out.addresses.begin(), out.addresses.end(), [](const Address& a) { return a.v4; });
    return out;
  }
  const int64_t until = now_ms() + deadline_ms;
  // The chain is followed with A queries (a server that answers with a
  // CNAME alone is asked again for its target); the AAAA query then goes
  // to the chain's end, so both families are of the one name checked.
  std::string current(name);
  bool have_a = false;
  for (int query = 0; query <= max_cname_hops; ++query) {
    auto r = ask(config, current, type_a, until);
    if (!r) {
      out.error = r.error();
      break;
    }
    if (r->rcode == rcode_nxdomain) {
      out.error = "nxdomain";
      return out;
    }
    for (const auto& c : r->cnames) {
      if (c == name || std::find(out.cnames.begin(), out.cnames.end(), c) != out.cnames.end()) {
        out.error = "CNAME loop";
        return out;
      }
      out.cnames.push_back(c);
    }
    if (out.cnames.size() > max_cname_hops) {
      out.cnames.clear();
      out.error = "CNAME chain too long";
      return out;
    }
    out.addresses = r->addresses;
    have_a = true;
    if (!r->addresses.empty() || r->cnames.empty()) break;
    current = r->cnames.back();
  }
  if (have_a) {
    if (!out.cnames.empty()) current = out.cnames.back();
    // A CNAME in this answer would lead elsewhere than the A chain did:
    // only the addresses of the name already reached are taken.
    auto r = ask(config, current, type_aaaa, until);
    if (r && r->rcode == 0 && r->cnames.empty())
      for (const auto& a : r->addresses)
        if (std::find(out.addresses.begin(), out.addresses.end(), a) == out.addresses.end()) out.addresses.push_back(a);
  }
  if (!out.addresses.empty()) out.error.clear();
  else if (out.error.empty()) out.error = "no address";
  return out;
}

namespace {

std::string read_small(const char* path) {
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  std::string out;
  if (!fd) return out;
  char buf[4096];
  // Bounded: these files are small; a huge one is read in part.
  while (out.size() < (1u << 20)) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

std::string read_hosts_file() { return read_small("/etc/hosts"); }
Config read_resolv_conf() { return parse_resolv_conf(read_small("/etc/resolv.conf")); }

}  // namespace nsrun::resolve
