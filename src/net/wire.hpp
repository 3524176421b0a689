// The bytes of the protocols the egress proxy speaks, parsed and built by
// pure functions (unit-tested and fuzzed without sockets): an HTTP request
// head, an authority (`host:port`, `[v6]:port`), the server name in a TLS
// ClientHello, and DNS queries and answers. Every parser takes at most the
// bytes it is given and refuses rather than guesses.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/hosts.hpp"

namespace nsrun::egress {

// The longest request head the proxy reads (request line and headers).
inline constexpr std::size_t max_http_head = 16384;

struct HttpHead {
  std::string method;
  std::string target;
  std::string version;  // "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent, values trimmed
};

// `head` ends with the blank line ("\r\n\r\n"). Fails on anything that is
// not HTTP/1.x or has a malformed line (a bare "\n" ending, a header
// without ':', whitespace before ':', obsolete line folding).
std::optional<HttpHead> parse_http_head(std::string_view head);

// The length of a request's body, from its head (RFC 9112 6.3): its one
// Content-Length (repeated only with the same value), else none. A
// Transfer-Encoding (chunked) is refused ("transfer-encoding"): the proxy
// forwards one request per connection and must know where it ends
// without decoding chunks of bytes the command controls; with a
// Content-Length beside it, it is the classic smuggling pair. Other
// errors: "bad-content-length".
struct BodyLength {
  uint64_t bytes = 0;
  std::string error;  // empty: `bytes` holds the length
};
BodyLength request_body_length(const std::vector<std::pair<std::string, std::string>>& headers);

struct Authority {
  std::string host;  // without brackets
  uint16_t port = 0;
};
// `host`, `host:port`, `[v6]`, `[v6]:port`; no userinfo.
std::expected<Authority, std::string> parse_authority(std::string_view text, uint16_t default_port);

// An absolute-form target "http://authority/path?query": the authority and
// the origin-form rest ("/path?query", "/" when empty). Only http: a
// proxy sees https only as CONNECT.
struct AbsoluteUri {
  Authority authority;
  std::string origin_form;
};
std::expected<AbsoluteUri, std::string> parse_absolute_uri(std::string_view target);

// The server name of a TLS ClientHello held in `bytes` (the start of the
// stream). `incomplete`: more bytes needed (the caller bounds how many);
// `bad`: not a ClientHello in one record; `ok`: `sni` holds the name, empty
// when the hello carries none.
struct ClientHello {
  enum class Status { incomplete, bad, ok };
  Status status = Status::bad;
  std::string sni;
  std::size_t record_size = 0;  // bytes of the first record, header included
};
ClientHello client_hello_sni(std::string_view bytes);

// SOCKS (RFC 1928, and SOCKS4/4a as the de facto spec has them), read from
// the start of the client's bytes. `incomplete`: more bytes are needed
// (never more than max_socks_request in all); `bad`: answer `reply` and
// close; `ok`: the request is the first `consumed` bytes.
inline constexpr std::size_t max_socks_request = 8 + 256 + 256;
enum class SocksStatus { incomplete, bad, ok };

// The SOCKS5 greeting: version 5, then 1 to 255 methods. `no_auth`: one
// of them is "no authentication" (0), the only one the proxy speaks.
struct Socks5Greeting {
  SocksStatus status = SocksStatus::bad;
  bool no_auth = false;
  std::size_t consumed = 0;
};
Socks5Greeting parse_socks5_greeting(std::string_view bytes);

struct SocksRequest {
  SocksStatus status = SocksStatus::bad;
  unsigned char reply = 0;  // for bad: the reply code to send, 0 when none (close unanswered)
  std::string host;         // a name as sent, or an address's text
  bool is_name = false;
  uint16_t port = 0;
  std::size_t consumed = 0;
};
// The request after the greeting: version 5, CONNECT, an IPv4 or IPv6
// address or a name of 0 to 255 bytes (an empty one is accepted here and
// refused by the caller as a bad host, as any name it cannot canonicalise),
// a port.
SocksRequest parse_socks5_request(std::string_view bytes);
// Version 4, CONNECT, a port, an address, a user id ending in NUL; for 4a
// (address 0.0.0.x, x != 0) then a name ending in NUL. The user id and the
// name are at most 255 bytes each.
SocksRequest parse_socks4_request(std::string_view bytes);

// Big-endian 16-bit fields, as DNS and TLS write them (`at + 2` must be
// within `s`).
uint16_t be16(std::string_view s, std::size_t at);
void put16(std::string& out, uint16_t v);
// `name` (dotted, labels of 1 to 63 bytes) as DNS labels ending with the
// root; false, with `out` unchanged, when it cannot be written so.
bool put_dns_name(std::string& out, std::string_view name);

// DNS (RFC 1035): one question per query, its labels without '.' inside.
struct DnsQuery {
  uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;   // dotted, as sent (not yet canonical)
  uint16_t type = 0;  // 1 A, 28 AAAA, 5 CNAME, ...
  uint16_t klass = 0;
  std::size_t question_end = 0;  // offset just past the question
};
inline constexpr uint16_t dns_a = 1;
inline constexpr uint16_t dns_aaaa = 28;
inline constexpr int dns_formerr = 1, dns_servfail = 2, dns_nxdomain = 3, dns_refused = 5;
inline constexpr uint16_t dns_cname = 5;
std::optional<DnsQuery> parse_dns_query(std::string_view packet);
// The answer to `q` (whose bytes are `packet`): `rcode`, and for rcode 0
// the CNAME chain from the question's name (`cnames`, each the target of
// the one before; canonical names), then one record per address of the
// question's type, owned by the chain's end (others are skipped). A
// CNAME question gets the first link alone.
std::string dns_answer(std::string_view packet, const DnsQuery& q, int rcode, const std::vector<hosts::Address>& addresses,
                       const std::vector<std::string>& cnames = {});
// A FORMERR for a packet too broken to parse beyond its id.
std::string dns_format_error(std::string_view packet);

}  // namespace nsrun::egress
