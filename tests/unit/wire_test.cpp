// The egress proxy's parsers: HTTP heads, authorities, the TLS
// server name and DNS, including the malformed inputs a command controls.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include "net/wire.hpp"

using namespace nsrun;
using namespace nsrun::egress;

namespace {

// A minimal ClientHello record with `sni` (none when empty).
std::string client_hello(const std::string& sni, bool twice = false) {
  auto u16 = [](std::size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; };
  std::string ext;
  if (!sni.empty()) {
    const std::string entry = std::string(1, '\0') + u16(sni.size()) + sni;
    const std::string list = u16(entry.size()) + entry;
    ext = u16(0) + u16(list.size()) + list;
    if (twice) ext += ext;
  }
  ext += u16(0x2b) + u16(3) + std::string("\x02\x03\x04", 3);  // supported_versions
  std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                     std::string("\x13\x01", 2) + std::string("\x01\x00", 2) + u16(ext.size()) + ext;
  std::string hs = std::string(1, '\x01') + std::string(1, '\0') + u16(body.size()) + body;
  return std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
}

std::string dns_query(const std::string& name, uint16_t type) {
  std::string q("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<char>(dot - start));
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q.push_back('\0');
  q += std::string{static_cast<char>(type >> 8), static_cast<char>(type & 0xff), '\0', '\1'};
  return q;
}

}  // namespace

TEST_CASE("wire: HTTP request heads", "[wire]") {
  auto h = parse_http_head("GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nX:  y \r\n\r\n");
  REQUIRE(h);
  CHECK(h->method == "GET");
  CHECK(h->target == "http://a.test/x");
  REQUIRE(h->headers.size() == 2);
  CHECK(h->headers[1].second == "y");
  for (const char* bad : {"GET / HTTP/1.1\n\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/2\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost : a\r\n\r\n", "GET / HTTP/1.1\r\n folded\r\n\r\n",
                          "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", "\r\n\r\n",
                          "G(T / HTTP/1.1\r\n\r\n"}) {
    INFO(bad);
    CHECK_FALSE(parse_http_head(bad));
  }
}

TEST_CASE("wire: a request's body length is one Content-Length, never a transfer coding", "[wire][egress-pipeline]") {
  using H = std::vector<std::pair<std::string, std::string>>;
  CHECK(request_body_length(H{{"Host", "a"}}).bytes == 0);
  CHECK(request_body_length(H{{"Host", "a"}}).error.empty());
  CHECK(request_body_length(H{{"content-LENGTH", "12"}}).bytes == 12);
  CHECK(request_body_length(H{{"Content-Length", "7"}, {"Content-Length", "7"}}).bytes == 7);
  CHECK(request_body_length(H{{"Content-Length", "18446744073709551615"}}).bytes == UINT64_MAX);
  for (const H& bad : {H{{"Content-Length", "7"}, {"Content-Length", "8"}}, H{{"Content-Length", "+7"}},
                       H{{"Content-Length", "-1"}}, H{{"Content-Length", "7, 7"}}, H{{"Content-Length", ""}},
                       H{{"Content-Length", "0x10"}}, H{{"Content-Length", "18446744073709551616"}}}) {
    INFO(bad.back().second);
    CHECK(request_body_length(bad).error == "bad-content-length");
  }
  CHECK(request_body_length(H{{"Transfer-Encoding", "chunked"}}).error == "transfer-encoding");
  CHECK(request_body_length(H{{"Content-Length", "5"}, {"transfer-encoding", "identity"}}).error == "transfer-encoding");
}

TEST_CASE("wire: SOCKS5 and SOCKS4/4a requests", "[wire]") {
  using S = SocksStatus;
  CHECK(parse_socks5_greeting("").status == S::incomplete);
  CHECK(parse_socks5_greeting(std::string("\x05\x02\x02", 3)).status == S::incomplete);
  auto g = parse_socks5_greeting(std::string("\x05\x02\x02\x00rest", 8));
  CHECK(g.status == S::ok);
  CHECK(g.no_auth);
  CHECK(g.consumed == 4);
  CHECK_FALSE(parse_socks5_greeting(std::string("\x05\x01\x02", 3)).no_auth);
  CHECK(parse_socks5_greeting(std::string("\x05\x00", 2)).status == S::bad);

  auto r = parse_socks5_request(std::string("\x05\x01\x00\x03\x06" "a.test\x01\xbbX", 14));
  CHECK(r.status == S::ok);
  CHECK(r.host == "a.test");
  CHECK(r.is_name);
  CHECK(r.port == 443);
  CHECK(r.consumed == 13);
  CHECK(parse_socks5_request(std::string("\x05\x01\x00\x03\x06" "a.te", 9)).status == S::incomplete);
  r = parse_socks5_request(std::string("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50", 10));
  CHECK(r.host == "127.0.0.1");
  CHECK_FALSE(r.is_name);
  CHECK(parse_socks5_request(std::string("\x05\x02\x00\x01\x7f", 5)).reply == 0x07);
  CHECK(parse_socks5_request(std::string("\x05\x01\x00\x09\x7f", 5)).reply == 0x08);
  CHECK(parse_socks5_request(std::string("\x04\x01\x00\x01\x7f", 5)).reply == 0);

  r = parse_socks4_request(std::string("\x04\x01\x00\x50\x00\x00\x00\x01user\x00" "a.test\x00Y", 21));
  CHECK(r.status == S::ok);
  CHECK(r.host == "a.test");
  CHECK(r.port == 80);
  CHECK(r.consumed == 20);
  r = parse_socks4_request(std::string("\x04\x01\x00\x50\xc6\x12\x00\x01\x00", 9));
  CHECK(r.host == "198.18.0.1");
  CHECK(parse_socks4_request(std::string("\x04\x01\x00\x50\xc6\x12\x00\x01us", 10)).status == S::incomplete);
  CHECK(parse_socks4_request(std::string("\x04\x02\x00\x50\xc6\x12\x00\x01\x00", 9)).reply == 0x5b);
  // A user id or a name of more than 255 bytes is refused, not waited for.
  CHECK(parse_socks4_request(std::string("\x04\x01\x00\x50\x0a\x00\x00\x01", 8) + std::string(256, 'u')).status == S::bad);
  CHECK(parse_socks4_request(std::string("\x04\x01\x00\x50\x00\x00\x00\x01\x00", 9) + std::string(256, 'n')).status == S::bad);
}

TEST_CASE("wire: authorities and absolute URIs", "[wire]") {
  auto a = parse_authority("example.com:8443", 0);
  REQUIRE(a);
  CHECK(a->host == "example.com");
  CHECK(a->port == 8443);
  a = parse_authority("[::1]:22", 0);
  REQUIRE(a);
  CHECK(a->host == "::1");
  CHECK_FALSE(parse_authority("example.com", 0));  // CONNECT needs a port
  CHECK_FALSE(parse_authority("user@example.com:80", 0));
  CHECK_FALSE(parse_authority("::1:80", 0));
  CHECK_FALSE(parse_authority("a:99999", 0));
  auto u = parse_absolute_uri("HTTP://Example.com:8080/p?q=1#frag");
  REQUIRE(u);
  CHECK(u->authority.host == "Example.com");
  CHECK(u->authority.port == 8080);
  CHECK(u->origin_form == "/p?q=1");
  u = parse_absolute_uri("http://a.test?x");
  REQUIRE(u);
  CHECK(u->origin_form == "/?x");
  CHECK(u->authority.port == 80);
  CHECK_FALSE(parse_absolute_uri("/relative"));
  CHECK_FALSE(parse_absolute_uri("https://a.test/"));
  CHECK_FALSE(parse_absolute_uri("http://evil.test@a.test/"));
}

TEST_CASE("wire: the server name of a ClientHello", "[wire]") {
  const std::string hello = client_hello("api.example.com");
  auto h = client_hello_sni(hello);
  REQUIRE(h.status == ClientHello::Status::ok);
  CHECK(h.sni == "api.example.com");
  CHECK(h.record_size == hello.size());
  // Byte by byte, every prefix asks for more.
  for (std::size_t n = 0; n < hello.size(); ++n) CHECK(client_hello_sni(hello.substr(0, n)).status == ClientHello::Status::incomplete);
  h = client_hello_sni(client_hello(""));
  REQUIRE(h.status == ClientHello::Status::ok);
  CHECK(h.sni.empty());
  CHECK(client_hello_sni(client_hello("a.test", true)).status == ClientHello::Status::bad);
  CHECK(client_hello_sni("GET / HTTP/1.1\r\n\r\n").status == ClientHello::Status::bad);
  CHECK(client_hello_sni(std::string("\x17\x03\x03\x00\x10", 5) + std::string(16, 'x')).status == ClientHello::Status::bad);
}

TEST_CASE("wire: DNS queries and answers", "[wire]") {
  const std::string q = dns_query("Api.Example.com", dns_a);
  auto d = parse_dns_query(q);
  REQUIRE(d);
  CHECK(d->name == "Api.Example.com");
  CHECK(d->type == dns_a);
  CHECK(d->id == 0x1234);
  hosts::Address v4;
  v4.bytes = {198, 18, 0, 1};
  hosts::Address v6;
  v6.v4 = false;
  v6.bytes[15] = 1;
  const std::string a = dns_answer(q, *d, 0, {v4, v6});
  REQUIRE(a.size() == q.size() + 16);
  CHECK(a[7] == 1);  // one answer: only the A record
  CHECK(a.substr(a.size() - 4) == std::string("\xc6\x12\x00\x01", 4));
  const std::string refused = dns_answer(q, *d, dns_refused, {v4});
  CHECK((refused[3] & 0xf) == dns_refused);
  CHECK(refused[7] == 0);
  // Compression pointers, two questions, responses and truncation are refused.
  std::string pointer = q.substr(0, 12) + std::string("\xc0\x0c\x00\x01\x00\x01", 6);
  CHECK_FALSE(parse_dns_query(pointer));
  std::string two = q;
  two[5] = 2;
  CHECK_FALSE(parse_dns_query(two));
  std::string response = q;
  response[2] = static_cast<char>(0x80);
  CHECK_FALSE(parse_dns_query(response));
  CHECK_FALSE(parse_dns_query(q.substr(0, q.size() - 1)));
  CHECK(dns_format_error(q).size() == 12);
}

TEST_CASE("wire: parsers are bounded on any input", "[wire][fuzz]") {
  std::mt19937 rng(13);
  const std::string seeds[] = {client_hello("a.test"), dns_query("a.test", 1), "CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r\n"};
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[i % 3];
    for (int k = 0; k < 4; ++k) s[rng() % s.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) s.resize(rng() % s.size());
    auto h = client_hello_sni(s);
    CHECK(h.sni.size() <= s.size());
    if (auto d = parse_dns_query(s)) CHECK(d->question_end <= s.size());
    (void)parse_http_head(s);
    (void)parse_authority(s, 80);
  }
}
