// Host rules for `--network proxy`: the allow- and deny-lists
// that decide where the command's connections may go. Pure functions, no
// system calls, no name resolution: the proxy (src/net) resolves and asks.
//
// Every host, whether written in a rule or asked for by the command, goes
// through one canonicaliser, so a rule cannot be dodged by spelling:
// letters are folded to lower case, one trailing dot is dropped, and any
// name whose last label is numeric is an IPv4 address in one of the forms
// inet_aton() and browsers accept (`2130706433`, `0x7f.1`, `0177.0.0.1`),
// never a name. IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is the IPv4 address.
// Labels outside ASCII are written in their Punycode form (`bücher` is
// `xn--bcher-kva`), and `xn--` labels must decode to a name nsrun
// accepts; what would need IDNA mapping tables nsrun does not carry (upper
// case outside ASCII, combining marks, most scripts) is refused
// (src/policy/idn.hpp says which code points pass).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"

namespace nsrun::hosts {

// An IP address: `v4` tells which of the two forms `bytes` holds (the
// first four bytes for IPv4, network order).
struct Address {
  bool v4 = true;
  std::array<uint8_t, 16> bytes{};

  bool operator==(const Address&) const = default;
};

// A host as the command named it, after canonicalisation.
struct Host {
  bool is_address = false;
  std::string name;    // canonical name, or the address's text form
  Address address;     // when is_address

  bool operator==(const Host&) const = default;
};

// Longest accepted host text, before canonicalisation (a DNS name is at
// most 253 bytes; the rest is room for brackets and IPv6 forms).
inline constexpr std::size_t max_host_length = 255;

// Canonicalises a host (no port, no brackets for IPv6: "::1"). Fails, with
// why, for anything that is neither a valid name nor an address.
std::expected<Host, std::string> canonical_host(std::string_view text);

// Parses an address written as text (IPv4 in any inet_aton form, IPv6;
// no brackets). IPv4-mapped IPv6 gives the IPv4 address.
std::optional<Address> parse_address(std::string_view text);
std::string address_text(const Address& a);

// Loopback, link-local (169.254/16: cloud metadata), RFC 1918, CGNAT
// (100.64/10), ULA (fc00::/7), unspecified, multicast, reserved, and IPv6
// forms that embed such an IPv4 (NAT64 64:ff9b::/96, 6to4 2002::/16,
// IPv4-compatible ::a.b.c.d). Reaching one needs an IP rule naming it.
bool is_internal(const Address& a);

// One --allow-host / --deny-host pattern.
struct Pattern {
  enum class Kind { name, wildcard, address };
  Kind kind = Kind::name;
  std::string name;             // canonical name; for a wildcard, the parent ("example.com")
  Address address;              // Kind::address
  std::optional<uint16_t> port; // none: any port
  std::string text;             // canonical text, as reported ("*.example.com:443")

  bool operator==(const Pattern&) const = default;
};

// `example.com`, `*.example.com` (strict subdomains: not example.com
// itself), `host:port`, `1.2.3.4`, `1.2.3.4:443`, `::1`, `[::1]:443`.
std::expected<Pattern, std::string> parse_pattern(std::string_view text);

bool matches(const Pattern& p, const Host& host, uint16_t port);
// An address rule against an address the proxy resolved or was given.
bool matches_address(const Pattern& p, const Address& a, uint16_t port);

struct Rules {
  std::vector<Pattern> allow;
  std::vector<Pattern> deny;
};

// Stable reason codes, as in the proxy's X-Proxy-Error header.
inline constexpr std::string_view blocked_allowlist = "blocked-by-allowlist";
inline constexpr std::string_view blocked_denylist = "blocked-by-denylist";

struct Verdict {
  bool allowed = false;
  std::string reason;  // empty when allowed, else one of the codes above
  std::string rule;    // the pattern that decided, or a word: "no-rule", "internal-address", "ip-literal"
};

// Port 0 stands for "some port" (a DNS lookup names none): a rule with a
// port then allows but does not deny, since another port may be allowed.
//
// The host as asked: deny wins over allow; an address is allowed only by
// an address rule (a name or wildcard never matches one).
Verdict decide(const Rules& rules, const Host& host, uint16_t port);

// An address the connection would go to (a resolved name, or the literal
// itself): refused when a deny rule names it, or when it is internal and
// no allow rule names it.
Verdict decide_address(const Rules& rules, const Address& a, uint16_t port);

// Parses every pattern; the first bad one fails with `option: pattern: why`.
Result<Rules> parse_rules(const std::vector<std::string>& allow, const std::vector<std::string>& deny);

}  // namespace nsrun::hosts
