#include "net/wire.hpp"

#include <algorithm>
#include <charconv>

namespace nsrun::egress {

uint16_t be16(std::string_view s, std::size_t at) {
  return static_cast<uint16_t>((static_cast<unsigned char>(s[at]) << 8) | static_cast<unsigned char>(s[at + 1]));
}

void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

bool put_dns_name(std::string& out, std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::string labels;
  while (true) {
    const std::size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    if (label.empty() || label.size() > 63) return false;
    labels.push_back(static_cast<char>(label.size()));
    labels.append(label);
    if (dot == std::string_view::npos) break;
    name.remove_prefix(dot + 1);
  }
  labels.push_back('\0');
  out += labels;
  return true;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<HttpHead> parse_http_head(std::string_view head) {
  if (head.size() > max_http_head || !head.ends_with("\r\n\r\n")) return std::nullopt;
  head.remove_suffix(2);
  HttpHead h;
  bool first = true;
  while (!head.empty()) {
    const std::size_t end = head.find("\r\n");
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view line = head.substr(0, end);
    head.remove_prefix(end + 2);
    // A bare LF or CR inside a line is where request smuggling starts.
    if (line.find_first_of("\r\n") != std::string_view::npos || line.find('\0') != std::string_view::npos) return std::nullopt;
    if (first) {
      first = false;
      const std::size_t a = line.find(' ');
      const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
      if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos) return std::nullopt;
      h.method = line.substr(0, a);
      h.target = line.substr(a + 1, b - a - 1);
      h.version = line.substr(b + 1);
      if (h.method.empty() || !std::all_of(h.method.begin(), h.method.end(), token_char)) return std::nullopt;
      if (h.target.empty() || (h.version != "HTTP/1.1" && h.version != "HTTP/1.0")) return std::nullopt;
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
    const std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), token_char)) return std::nullopt;  // also refuses "Host :" and folding
    h.headers.emplace_back(std::string(name), std::string(trim(line.substr(colon + 1))));
  }
  if (first) return std::nullopt;
  return h;
}

BodyLength request_body_length(const std::vector<std::pair<std::string, std::string>>& headers) {
  auto is = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return (x | 0x20) == (y | 0x20); });
  };
  BodyLength out;
  bool seen = false;
  for (const auto& [name, value] : headers) {
    if (is(name, "transfer-encoding")) return {0, "transfer-encoding"};
    if (!is(name, "content-length")) continue;
    // Digits only: from_chars would take "5 , 7" as 5, and a proxy that
    // reads another length than the server is the smuggling.
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || value.front() == '+' ||
        value.front() == '-' || (seen && v != out.bytes))
      return {0, "bad-content-length"};
    seen = true;
    out.bytes = v;
  }
  return out;
}

std::expected<Authority, std::string> parse_authority(std::string_view text, uint16_t default_port) {
  Authority a;
  a.port = default_port;
  if (text.find('@') != std::string_view::npos) return std::unexpected("userinfo in the authority");
  std::string_view port;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return std::unexpected("unclosed '['");
    a.host = text.substr(1, close - 1);
    const std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::unexpected("text after ']'");
      port = after.substr(1);
      has_port = true;
    }
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      if (text.find(':') != colon) return std::unexpected("an IPv6 address needs brackets");
      port = text.substr(colon + 1);
      has_port = true;
      text = text.substr(0, colon);
    }
    a.host = text;
  }
  if (has_port) {
    uint32_t v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535)
      return std::unexpected("bad port");
    a.port = static_cast<uint16_t>(v);
  }
  if (a.host.empty()) return std::unexpected("empty host");
  if (a.port == 0) return std::unexpected("no port");
  return a;
}

std::expected<AbsoluteUri, std::string> parse_absolute_uri(std::string_view target) {
  constexpr std::string_view scheme = "http://";
  if (target.size() < scheme.size() ||
      !std::equal(scheme.begin(), scheme.end(), target.begin(), [](char a, char b) { return a == (b | 0x20) || a == b; }))
    return std::unexpected("not an http:// absolute URI");
  target.remove_prefix(scheme.size());
  const std::size_t end = target.find_first_of("/?#");
  auto authority = parse_authority(target.substr(0, end), 80);
  if (!authority) return std::unexpected(authority.error());
  AbsoluteUri u;
  u.authority = std::move(*authority);
  std::string_view rest = end == std::string_view::npos ? std::string_view() : target.substr(end);
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  u.origin_form = rest.empty() || rest.front() != '/' ? "/" + std::string(rest) : std::string(rest);
  return u;
}

Socks5Greeting parse_socks5_greeting(std::string_view b) {
  Socks5Greeting g;
  if (b.size() < 2) {
    g.status = b.empty() || b[0] == 5 ? SocksStatus::incomplete : SocksStatus::bad;
    return g;
  }
  const std::size_t methods = static_cast<unsigned char>(b[1]);
  if (b[0] != 5 || methods == 0) return g;
  if (b.size() < 2 + methods) {
    g.status = SocksStatus::incomplete;
    return g;
  }
  g.status = SocksStatus::ok;
  g.no_auth = b.substr(2, methods).find('\0') != std::string_view::npos;
  g.consumed = 2 + methods;
  return g;
}

SocksRequest parse_socks5_request(std::string_view b) {
  SocksRequest r;
  if (b.size() < 5) {
    r.status = b.empty() || b[0] == 5 ? SocksStatus::incomplete : SocksStatus::bad;
    return r;
  }
  if (b[0] != 5) return r;
  if (b[1] != 1) {
    r.reply = 0x07;  // command not supported: CONNECT only
    return r;
  }
  const char atyp = b[3];
  const std::size_t need = atyp == 1   ? 4 + 4 + 2
                           : atyp == 4 ? 4 + 16 + 2
                           : atyp == 3 ? 4 + 1 + static_cast<unsigned char>(b[4]) + 2
                                       : 0;
  if (need == 0) {
    r.reply = 0x08;  // address type not supported
    return r;
  }
  if (b.size() < need) {
    r.status = SocksStatus::incomplete;
    return r;
  }
  r.port = be16(b, need - 2);
  if (atyp == 3) {
    r.host = b.substr(5, need - 7);
    r.is_name = true;
  } else {
    hosts::Address a;
    a.v4 = atyp == 1;
    std::copy_n(reinterpret_cast<const unsigned char*>(b.data()) + 4, a.v4 ? 4 : 16, a.bytes.begin());
    r.host = hosts::address_text(a);
  }
  r.status = SocksStatus::ok;
  r.consumed = need;
  return r;
}

SocksRequest parse_socks4_request(std::string_view b) {
  SocksRequest r;
  r.reply = 0x5b;  // request rejected or failed: SOCKS4 has no finer code
  if (!b.empty() && b[0] != 4) {
    r.reply = 0;
    return r;
  }
  if (b.size() < 8) {
    r.status = SocksStatus::incomplete;
    return r;
  }
  // A field ending in NUL, of at most 255 bytes, from `from`.
  auto field_end = [&](std::size_t from, std::size_t& end) {
    end = b.find('\0', from);
    if (end != std::string_view::npos) return end - from <= 255 ? SocksStatus::ok : SocksStatus::bad;
    return b.size() - from <= 255 ? SocksStatus::incomplete : SocksStatus::bad;
  };
  std::size_t user_end = 0;
  if (const SocksStatus st = field_end(8, user_end); st != SocksStatus::ok) {
    r.status = st;
    return r;
  }
  if (b[1] != 1) return r;  // CONNECT only
  r.port = be16(b, 2);
  const bool socks4a = b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] != 0;
  r.consumed = user_end + 1;
  if (socks4a) {
    std::size_t name_end = 0;
    if (const SocksStatus st = field_end(r.consumed, name_end); st != SocksStatus::ok) {
      r.status = st;
      return r;
    }
    r.host = b.substr(r.consumed, name_end - r.consumed);
    r.is_name = true;
    r.consumed = name_end + 1;
  } else {
    hosts::Address a;
    std::copy_n(reinterpret_cast<const unsigned char*>(b.data()) + 4, 4, a.bytes.begin());
    r.host = hosts::address_text(a);
  }
  r.status = SocksStatus::ok;
  r.reply = 0;
  return r;
}

ClientHello client_hello_sni(std::string_view b) {
  ClientHello out;
  using S = ClientHello::Status;
  if (b.size() < 5) {
    out.status = b.empty() || b[0] == 0x16 ? S::incomplete : S::bad;
    return out;
  }
  // A handshake record of TLS 1.0 or later (the legacy version field of a
  // ClientHello record is 3.1 by convention, 3.0 from old clients).
  if (b[0] != 0x16 || b[1] != 0x03) return out;
  const std::size_t record = be16(b, 3);
  if (record < 4 || record > 16384) return out;
  if (b.size() < 5 + record) {
    out.status = S::incomplete;
    return out;
  }
  out.record_size = 5 + record;
  std::string_view h = b.substr(5, record);
  if (static_cast<unsigned char>(h[0]) != 1) return out;  // not a ClientHello
  const std::size_t length = (static_cast<std::size_t>(static_cast<unsigned char>(h[1])) << 16) | be16(h, 2);
  // A ClientHello split over several records is refused: the name must be
  // in the first one, where it is checked.
  if (length + 4 > h.size()) return out;
  h = h.substr(4, length);
  std::size_t at = 2 + 32;  // legacy_version, random
  auto skip = [&](std::size_t width) {
    if (at + width > h.size()) return false;
    const std::size_t n = width == 1 ? static_cast<unsigned char>(h[at]) : be16(h, at);
    at += width + n;
    return at <= h.size();
  };
  if (!skip(1) || !skip(2) || !skip(1)) return out;  // session id, cipher suites, compression methods
  if (at == h.size()) {
    out.status = S::ok;  // no extensions at all
    return out;
  }
  if (at + 2 > h.size()) return out;
  const std::size_t ext_end = at + 2 + be16(h, at);
  if (ext_end != h.size()) return out;
  at += 2;
  bool seen = false;
  while (at < ext_end) {
    if (at + 4 > ext_end) return out;
    const uint16_t type = be16(h, at);
    const std::size_t size = be16(h, at + 2);
    at += 4;
    if (at + size > ext_end) return out;
    if (type == 0) {
      if (seen) return out;  // two server_name extensions: which one would the server read?
      seen = true;
      std::string_view e = h.substr(at, size);
      if (e.size() < 2 || be16(e, 0) + 2u != e.size()) return out;
      e.remove_prefix(2);
      // One entry, of type host_name (0): RFC 6066 allows no other.
      if (e.size() < 3 || e[0] != 0 || be16(e, 1) + 3u != e.size()) return out;
      out.sni = e.substr(3);
      if (out.sni.empty()) return out;
    }
    at += size;
  }
  out.status = S::ok;
  return out;
}

std::optional<DnsQuery> parse_dns_query(std::string_view p) {
  if (p.size() < 12 || p.size() > 4096) return std::nullopt;
  DnsQuery q;
  q.id = be16(p, 0);
  const uint16_t flags = be16(p, 2);
  if ((flags & 0x8000) != 0) return std::nullopt;        // a response, not a query
  if (((flags >> 11) & 0xf) != 0) return std::nullopt;   // only standard queries
  q.recursion_desired = (flags & 0x0100) != 0;
  if (be16(p, 4) != 1) return std::nullopt;              // exactly one question
  std::size_t at = 12;
  while (true) {
    if (at >= p.size()) return std::nullopt;
    const std::size_t len = static_cast<unsigned char>(p[at]);
    if (len == 0) {
      ++at;
      break;
    }
    if (len > 63 || at + 1 + len > p.size()) return std::nullopt;  // no compression in a question
    // A dot inside a label would make the labels "a" "b.c" and "a.b" "c"
    // one name: the stub would judge and answer a name the query did not
    // ask for (nsrun's resolver refuses the same, resolve.cpp read_name()).
    if (p.substr(at + 1, len).find('.') != std::string_view::npos) return std::nullopt;
    if (!q.name.empty()) q.name.push_back('.');
    q.name.append(p.substr(at + 1, len));
    if (q.name.size() > 253) return std::nullopt;
    at += 1 + len;
  }
  if (at + 4 > p.size()) return std::nullopt;
  q.type = be16(p, at);
  q.klass = be16(p, at + 2);
  q.question_end = at + 4;
  return q;
}

std::string dns_answer(std::string_view packet, const DnsQuery& q, int rcode, const std::vector<hosts::Address>& addresses,
                       const std::vector<std::string>& cnames) {
  std::string out;
  put16(out, q.id);
  // QR, the opcode (0), RD as asked, RA, the rcode.
  put16(out, static_cast<uint16_t>(0x8000 | (q.recursion_desired ? 0x0100 : 0) | 0x0080 | (rcode & 0xf)));
  put16(out, 1);
  std::vector<const hosts::Address*> records;
  std::vector<std::string_view> chain;
  if (rcode == 0) {
    // A name that cannot be written as labels fails the whole answer
    // (below): the addresses belong to the chain's end, so no link may
    // be left out.
    for (const auto& c : cnames) chain.push_back(c);
    if (q.type == dns_cname && chain.size() > 1) chain.resize(1);
    if (q.type != dns_cname)
      for (const auto& a : addresses)
        if ((q.type == dns_a && a.v4) || (q.type == dns_aaaa && !a.v4)) records.push_back(&a);
  }
  put16(out, static_cast<uint16_t>(chain.size() + records.size()));
  put16(out, 0);
  put16(out, 0);
  out.append(packet.substr(12, q.question_end - 12));
  auto ttl = [&] { out.append("\0\0\0\x3c", 4); };  // TTL 60 s: the rules may change with the next launch
  // Each record's owner is a pointer: to the question's name first, then
  // to the previous CNAME's target.
  std::size_t owner = 12;
  for (std::string_view c : chain) {
    put16(out, static_cast<uint16_t>(0xc000 | owner));
    put16(out, dns_cname);
    put16(out, 1);
    ttl();
    const std::size_t size_at = out.size();
    put16(out, 0);
    owner = out.size();
    if (!put_dns_name(out, c)) return dns_answer(packet, q, dns_servfail, {});
    const std::size_t size = out.size() - owner;
    out[size_at] = static_cast<char>(size >> 8);
    out[size_at + 1] = static_cast<char>(size & 0xff);
    // A pointer holds 14 bits: past that, the rest of the answer is not written.
    if (owner > 0x3fff) return dns_answer(packet, q, dns_servfail, {});
  }
  for (const auto* a : records) {
    put16(out, static_cast<uint16_t>(0xc000 | owner));
    put16(out, q.type);
    put16(out, 1);
    ttl();
    put16(out, a->v4 ? 4 : 16);
    out.append(reinterpret_cast<const char*>(a->bytes.data()), a->v4 ? 4 : 16);
  }
  return out;
}

std::string dns_format_error(std::string_view packet) {
  std::string out;
  if (packet.size() < 2) return out;
  out.append(packet.substr(0, 2));
  put16(out, 0x8000 | dns_formerr);
  out.append(8, '\0');
  return out;
}

}  // namespace nsrun::egress
