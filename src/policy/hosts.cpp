#include "policy/hosts.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <tuple>

#include <fmt/core.h>

#include "policy/idn.hpp"

namespace nsrun::hosts {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A label that makes the whole host an IPv4 address (the URL standard's
// "ends in a number"): all decimal digits, or 0x followed by hex digits.
bool numeric_label(std::string_view s) {
  if (s.empty()) return false;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return std::all_of(s.begin() + 2, s.end(), is_hex);
  return std::all_of(s.begin(), s.end(), is_digit);
}

// One part of an inet_aton() address: 0x.. hex, 0.. octal, else decimal.
// Bounded: more than 10 significant digits never fits 32 bits.
std::optional<uint64_t> ipv4_part(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
    if (s.empty()) return 0;  // "0x" alone is zero, as browsers read it
  } else if (s.size() >= 2 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
  if (s.size() > 11) return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// IPv4 in the forms inet_aton() accepts: a, a.b, a.b.c, a.b.c.d, each part
// decimal, octal or hex, the last part filling the remaining bytes.
std::optional<Address> parse_ipv4(std::string_view s) {
  uint64_t parts[4];
  std::size_t n = 0;
  while (true) {
    if (n == 4) return std::nullopt;
    const std::size_t dot = s.find('.');
    auto v = ipv4_part(s.substr(0, dot));
    if (!v) return std::nullopt;
    parts[n++] = *v;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (parts[i] > 255) return std::nullopt;
  const uint64_t last_limit = uint64_t{1} << (8 * (5 - n));
  if (parts[n - 1] >= last_limit) return std::nullopt;
  uint32_t value = static_cast<uint32_t>(parts[n - 1]);
  for (std::size_t i = 0; i + 1 < n; ++i) value |= static_cast<uint32_t>(parts[i]) << (8 * (3 - i));
  Address a;
  a.v4 = true;
  a.bytes[0] = static_cast<uint8_t>(value >> 24);
  a.bytes[1] = static_cast<uint8_t>(value >> 16);
  a.bytes[2] = static_cast<uint8_t>(value >> 8);
  a.bytes[3] = static_cast<uint8_t>(value);
  return a;
}

bool is_mapped_v4(const std::array<uint8_t, 16>& b) {
  for (int i = 0; i < 10; ++i)
    if (b[i] != 0) return false;
  return b[10] == 0xff && b[11] == 0xff;
}

std::optional<Address> parse_ipv6(std::string_view s) {
  // inet_pton refuses zone indices ("fe80::1%eth0") and needs a string.
  if (s.size() > 45) return std::nullopt;
  char buf[46];
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  Address a;
  a.v4 = false;
  if (::inet_pton(AF_INET6, buf, a.bytes.data()) != 1) return std::nullopt;
  if (is_mapped_v4(a.bytes)) {
    Address v4;
    std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
    return v4;
  }
  return a;
}

bool v4_internal(const uint8_t* b) {
  const uint32_t v = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  auto in = [v](uint32_t net, int bits) { return bits == 0 || (v >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8)       // "this network", 0.0.0.0 reaches the local host
         || in(0x0a000000, 8)    // RFC 1918
         || in(0x64400000, 10)   // shared address space (CGNAT; some clouds' metadata)
         || in(0x7f000000, 8)    // loopback
         || in(0xa9fe0000, 16)   // link-local, cloud metadata (169.254.169.254)
         || in(0xac100000, 12)   // RFC 1918
         || in(0xc0000000, 24)   // IETF protocol assignments
         || in(0xc0a80000, 16)   // RFC 1918
         || in(0xe0000000, 4)    // multicast
         || in(0xf0000000, 4);   // reserved, broadcast
}

}  // namespace

std::optional<Address> parse_address(std::string_view text) {
  if (text.find(':') != std::string_view::npos) return parse_ipv6(text);
  return parse_ipv4(text);
}

std::string address_text(const Address& a) {
  char buf[INET6_ADDRSTRLEN];
  if (::inet_ntop(a.v4 ? AF_INET : AF_INET6, a.bytes.data(), buf, sizeof buf) == nullptr) return "?";
  return buf;
}

bool is_internal(const Address& a) {
  const auto& b = a.bytes;
  if (a.v4) return v4_internal(b.data());
  if (b[0] == 0) {
    // ::, ::1 and IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks).
    bool zero = true;
    for (int i = 0; i < 12; ++i) zero = zero && b[i] == 0;
    if (zero) return true;
  }
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return v4_internal(b.data() + 12);  // NAT64
  if (b[0] == 0x20 && b[1] == 0x02) return v4_internal(b.data() + 2);                                   // 6to4
  if ((b[0] & 0xfe) == 0xfc) return true;                  // ULA fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // link-local fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  // site-local fec0::/10 (deprecated)
  if (b[0] == 0xff) return true;                           // multicast
  return false;
}

std::expected<Host, std::string> canonical_host(std::string_view text) {
  if (text.empty()) return std::unexpected("empty host");
  if (text.size() > max_host_length) return std::unexpected("host too long");
  auto address_host = [](const Address& a) { return Host{true, address_text(a), a}; };
  if (text.find(':') != std::string_view::npos) {
    auto a = parse_ipv6(text);
    if (!a) return std::unexpected("not a valid IPv6 address");
    return address_host(*a);
  }
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (name.back() == '.') name.pop_back();
  if (name.empty()) return std::unexpected("empty host");
  // Non-ASCII labels become their xn-- form and xn-- labels are checked
  // (src/policy/idn.hpp): one spelling per name, or a refusal.
  if (std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }) ||
      name.find("xn--") != std::string::npos) {
    auto ascii = idn::to_ascii(name);
    if (!ascii) return std::unexpected("internationalised name: " + ascii.error());
    name = std::move(*ascii);
  }
  const std::size_t last_dot = name.rfind('.');
  const std::string_view last = last_dot == std::string::npos ? std::string_view(name) : std::string_view(name).substr(last_dot + 1);
  if (numeric_label(last)) {
    auto a = parse_ipv4(name);
    if (!a) return std::unexpected("ends in a number but is not a valid IPv4 address");
    return address_host(*a);
  }
  if (name.size() > 253) return std::unexpected("name longer than 253 bytes");
  std::string_view rest = name;
  while (true) {
    const std::size_t dot = rest.find('.');
    const std::string_view label = rest.substr(0, dot);
    if (label.empty()) return std::unexpected("empty label");
    if (label.size() > 63) return std::unexpected("label longer than 63 bytes");
    for (char c : label)
      if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_'))
        return std::unexpected(fmt::format("character '{}' is not allowed in a host name", c));
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  Host h;
  h.name = std::move(name);
  return h;
}

std::expected<Pattern, std::string> parse_pattern(std::string_view text) {
  Pattern p;
  std::string_view host = text;
  auto parse_port = [&](std::string_view s) -> std::optional<std::string> {
    uint32_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0 || v > 65535)
      return fmt::format("bad port '{}'", s);
    p.port = static_cast<uint16_t>(v);
    return std::nullopt;
  };
  if (!host.empty() && host.front() == '[') {
    const std::size_t close = host.find(']');
    if (close == std::string_view::npos) return std::unexpected("unclosed '['");
    std::string_view after = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::unexpected("text after ']' that is not ':PORT'");
      if (auto e = parse_port(after.substr(1))) return std::unexpected(*e);
    }
    if (host.find(':') == std::string_view::npos) return std::unexpected("brackets are for IPv6 addresses");
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    const std::size_t colon = host.find(':');
    if (auto e = parse_port(host.substr(colon + 1))) return std::unexpected(*e);
    host = host.substr(0, colon);
  }
  if (host.starts_with("*.")) {
    auto h = canonical_host(host.substr(2));
    if (!h) return std::unexpected(h.error());
    if (h->is_address) return std::unexpected("a wildcard never matches an IP address");
    p.kind = Pattern::Kind::wildcard;
    p.name = h->name;
  } else {
    if (host.find('*') != std::string_view::npos) return std::unexpected("'*' only as a whole first label ('*.example.com')");
    auto h = canonical_host(host);
    if (!h) return std::unexpected(h.error());
    p.kind = h->is_address ? Pattern::Kind::address : Pattern::Kind::name;
    p.name = h->name;
    p.address = h->address;
  }
  std::string shown = p.kind == Pattern::Kind::wildcard ? "*." + p.name : p.name;
  if (p.port) shown = (p.kind == Pattern::Kind::address && !p.address.v4) ? fmt::format("[{}]:{}", shown, *p.port)
                                                                          : fmt::format("{}:{}", shown, *p.port);
  p.text = std::move(shown);
  return p;
}

bool matches(const Pattern& p, const Host& host, uint16_t port) {
  if (p.port && port != 0 && *p.port != port) return false;
  switch (p.kind) {
    case Pattern::Kind::address:
      return host.is_address && host.address == p.address;
    case Pattern::Kind::name:
      return !host.is_address && host.name == p.name;
    case Pattern::Kind::wildcard:
      // Strict subdomains: "a.example.com", never "example.com" nor "badexample.com".
      return !host.is_address && host.name.size() > p.name.size() + 1 && host.name.ends_with(p.name) &&
             host.name[host.name.size() - p.name.size() - 1] == '.';
  }
  return false;
}

bool matches_address(const Pattern& p, const Address& a, uint16_t port) {
  return p.kind == Pattern::Kind::address && (!p.port || port == 0 || *p.port == port) && p.address == a;
}

Verdict decide(const Rules& rules, const Host& host, uint16_t port) {
  for (const auto& d : rules.deny)
    if ((port != 0 || !d.port) && matches(d, host, port)) return {false, std::string(blocked_denylist), d.text};
  for (const auto& a : rules.allow)
    if (matches(a, host, port)) return {true, {}, a.text};
  return {false, std::string(blocked_allowlist), host.is_address ? "ip-literal" : "no-rule"};
}

Verdict decide_address(const Rules& rules, const Address& a, uint16_t port) {
  for (const auto& d : rules.deny)
    if ((port != 0 || !d.port) && matches_address(d, a, port)) return {false, std::string(blocked_denylist), d.text};
  if (!is_internal(a)) return {true, {}, {}};
  for (const auto& r : rules.allow)
    if (matches_address(r, a, port)) return {true, {}, r.text};
  return {false, std::string(blocked_allowlist), "internal-address"};
}

Result<Rules> parse_rules(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  Rules rules;
  for (auto [list, out, option] : {std::tuple{&allow, &rules.allow, "--allow-host"}, std::tuple{&deny, &rules.deny, "--deny-host"}})
    for (const auto& text : *list) {
      auto p = parse_pattern(text);
      if (!p) {
        Error e = usage_error(option, p.error());
        e.path = text;
        return fail(std::move(e));
      }
      out->push_back(std::move(*p));
    }
  return rules;
}

}  // namespace nsrun::hosts
