// nsrun's own resolver: resolv.conf and /etc/hosts, the query
// it sends and every way a reply can lie to it.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include <fmt/core.h>

#include "net/resolve.hpp"
#include "net/wire.hpp"

using namespace nsrun;
using namespace nsrun::resolve;

namespace {

std::string u16(std::size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

std::string encoded(const std::string& name) {
  std::string out;
  std::size_t start = 0;
  while (start < name.size()) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    out.push_back(static_cast<char>(dot - start));
    out += name.substr(start, dot - start);
    start = dot + 1;
  }
  return out + std::string(1, '\0');
}

// A reply header and question; records are appended by the test.
std::string reply_head(uint16_t id, const std::string& name, uint16_t type, std::size_t answers, uint16_t flags = 0x8180) {
  return u16(id) + u16(flags) + u16(1) + u16(answers) + u16(0) + u16(0) + encoded(name) + u16(type) + u16(1);
}

std::string record(const std::string& owner_wire, uint16_t type, const std::string& data) {
  return owner_wire + u16(type) + u16(1) + std::string("\0\0\0\x3c", 4) + u16(data.size()) + data;
}

std::string v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) { return std::string{char(a), char(b), char(c), char(d)}; }

const std::string to_question = std::string("\xc0\x0c", 2);  // a pointer to the question's name

}  // namespace

TEST_CASE("resolv.conf: nameservers, options, comments, defaults", "[resolve]") {
  auto c = parse_resolv_conf(
      "# comment\nsearch example.com\nnameserver 127.0.2.1\nnameserver 2001:db8::1 ; trailing\n"
      "nameserver fe80::1%eth0\nnameserver not-an-address\nnameserver 127.0.2.2\nnameserver 127.0.2.3\n"
      "options ndots:3 timeout:2 attempts:9\n");
  REQUIRE(c.servers.size() == 3);
  CHECK(hosts::address_text(c.servers[0].address) == "127.0.2.1");
  CHECK(hosts::address_text(c.servers[1].address) == "2001:db8::1");
  CHECK(hosts::address_text(c.servers[2].address) == "127.0.2.2");
  CHECK(c.servers[0].port == 53);
  CHECK(c.timeout_ms == 2000);
  CHECK(c.attempts == 5);
  // No nameserver line: glibc's default, the local host.
  auto d = parse_resolv_conf("options timeout:0\n");
  REQUIRE(d.servers.size() == 1);
  CHECK(hosts::address_text(d.servers[0].address) == "127.0.0.1");
  CHECK(d.timeout_ms == 1000);
  CHECK(d.attempts == 2);
  CHECK(parse_resolv_conf("options timeout:abc attempts:\n").timeout_ms == 5000);
}

TEST_CASE("/etc/hosts: names and aliases, case, comments, each address once", "[resolve]") {
  const std::string text =
      "127.0.0.1 localhost\n# 127.0.0.9 git.test\n198.18.0.1\tgit.test  Git-Alias.TEST. # comment\n"
      "2001:db8::7 git.test\n198.18.0.1 git.test\nbogus git.test\n198.18.0.2 other.test git.test.example\n";
  auto a = hosts_lookup(text, "git.test");
  REQUIRE(a.size() == 2);
  CHECK(hosts::address_text(a[0]) == "198.18.0.1");
  CHECK(hosts::address_text(a[1]) == "2001:db8::7");
  REQUIRE(hosts_lookup(text, "git-alias.test").size() == 1);
  CHECK(hosts_lookup(text, "alias.test").empty());
  CHECK(hosts_lookup(text, "test").empty());
  CHECK(hosts_lookup("", "git.test").empty());
}

TEST_CASE("resolver query: one question, recursion desired, refused for bad names", "[resolve]") {
  const std::string q = build_query(0xbeef, "www.example.com", type_aaaa);
  CHECK(q == u16(0xbeef) + u16(0x0100) + u16(1) + u16(0) + u16(0) + u16(0) + encoded("www.example.com") + u16(28) + u16(1));
  CHECK(build_query(1, "", type_a).empty());
  CHECK(build_query(1, "a..b", type_a).empty());
  CHECK(build_query(1, std::string(64, 'a') + ".test", type_a).empty());
  CHECK(build_query(1, std::string(254, 'a'), type_a).empty());
}

TEST_CASE("resolver reply: addresses, the CNAME chain, compression", "[resolve]") {
  // www.test CNAME cdn.test (written with a pointer into itself); cdn.test A 127.0.2.10, AAAA-mapped skipped for A.
  std::string p = reply_head(7, "www.test", type_a, 3);
  const std::size_t cname_at = p.size() + 12;  // where the CNAME's data starts
  p += record(to_question, type_cname, std::string("\x03" "cdn", 4) + std::string("\xc0\x10", 2));  // "cdn" + pointer to "test"
  p += record(std::string("\xc0", 1) + static_cast<char>(cname_at), type_a, v4(127, 0, 2, 10));
  p += record(encoded("unrelated.test"), type_a, v4(10, 0, 0, 1));  // not on the chain: ignored
  auto r = parse_reply(p, 7, "WWW.test", type_a);
  REQUIRE(r);
  CHECK(r->rcode == 0);
  CHECK(!r->truncated);
  CHECK(r->cnames == std::vector<std::string>{"cdn.test"});
  REQUIRE(r->addresses.size() == 1);
  CHECK(hosts::address_text(r->addresses[0]) == "127.0.2.10");

  // Owners compare without case; an AAAA that maps an IPv4 is that IPv4.
  std::string q = reply_head(8, "v6.test", type_aaaa, 1);
  std::string mapped(16, '\0');
  mapped[10] = mapped[11] = '\xff';
  mapped.replace(12, 4, v4(169, 254, 169, 254));
  q += record(encoded("V6.TEST"), type_aaaa, mapped);
  auto m = parse_reply(q, 8, "v6.test", type_aaaa);
  REQUIRE(m);
  REQUIRE(m->addresses.size() == 1);
  CHECK(m->addresses[0].v4);
  CHECK(hosts::address_text(m->addresses[0]) == "169.254.169.254");

  // NXDOMAIN and truncation are read from the header.
  auto nx = parse_reply(reply_head(9, "no.test", type_a, 0, 0x8183), 9, "no.test", type_a);
  REQUIRE(nx);
  CHECK(nx->rcode == 3);
  auto tc = parse_reply(reply_head(9, "big.test", type_a, 40, 0x8380), 9, "big.test", type_a);
  REQUIRE(tc);
  CHECK(tc->truncated);
}

TEST_CASE("resolver reply: hostile replies are refused", "[resolve]") {
  const std::string good = reply_head(5, "a.test", type_a, 1) + record(to_question, type_a, v4(127, 0, 2, 1));
  REQUIRE(parse_reply(good, 5, "a.test", type_a));
  // Another id, a query, another opcode, another question, another type.
  CHECK(!parse_reply(good, 6, "a.test", type_a));
  std::string query = good;
  query[2] = 0x01;
  CHECK(!parse_reply(query, 5, "a.test", type_a));
  std::string opcode = good;
  opcode[2] = static_cast<char>(0x80 | 0x10);
  CHECK(!parse_reply(opcode, 5, "a.test", type_a));
  CHECK(!parse_reply(good, 5, "b.test", type_a));
  CHECK(!parse_reply(good, 5, "a.test", type_aaaa));
  std::string two_questions = good;
  two_questions[5] = 2;
  CHECK(!parse_reply(two_questions, 5, "a.test", type_a));
  // Every truncation of a good reply is refused, never read past.
  for (std::size_t n = 0; n < good.size(); ++n) CHECK(!parse_reply(good.substr(0, n), 5, "a.test", type_a));
  // A count far beyond what the packet holds.
  std::string huge = good;
  huge[6] = '\xff';
  huge[7] = '\xff';
  CHECK(!parse_reply(huge, 5, "a.test", type_a));
  // Record data longer than the packet; an A of the wrong size.
  CHECK(!parse_reply(reply_head(5, "a.test", type_a, 1) + to_question + u16(1) + u16(1) + std::string(4, '\0') + u16(200) + v4(1, 2, 3, 4),
                     5, "a.test", type_a));
  CHECK(!parse_reply(reply_head(5, "a.test", type_a, 1) + record(to_question, type_a, "12345"), 5, "a.test", type_a));
  // Compression: a pointer to itself, a pointer forward, two pointers in a loop.
  const std::string head = reply_head(5, "a.test", type_a, 1);
  const std::size_t here = head.size();
  CHECK(!parse_reply(head + std::string("\xc0", 1) + static_cast<char>(here) + u16(1) + u16(1) + std::string(4, '\0') + u16(4) +
                         v4(1, 2, 3, 4),
                     5, "a.test", type_a));
  CHECK(!parse_reply(head + std::string("\xc0", 1) + static_cast<char>(here + 2) + std::string("\xc0\x0c", 2) + u16(1) + u16(1),
                     5, "a.test", type_a));
  std::size_t at = 0;
  const std::string loop = std::string(12, '\0') + "\x01" "a" "\xc0\x0e" + "\xc0\x0c";
  at = 16;
  CHECK(!read_name(loop, at));
  // A name longer than 255 bytes through pointers, a label with a dot or
  // a control byte, an unknown label type.
  std::string longname = std::string(12, '\0');
  std::size_t prev = 0;
  for (int i = 0; i < 6; ++i) {
    const std::size_t start = longname.size();
    longname += std::string(1, 50) + std::string(50, 'x');
    longname += i == 0 ? std::string(1, '\0') : std::string("\xc0", 1) + static_cast<char>(prev);
    prev = start;
  }
  at = prev;
  CHECK(!read_name(longname, at));
  at = 0;
  CHECK(!read_name(std::string("\x03" "a.b\x00", 5), at));
  at = 0;
  CHECK(!read_name(std::string("\x03" "a\nb\x00", 5), at));
  at = 0;
  CHECK(!read_name(std::string("\x40" "a\x00", 3), at));
  at = 0;
  CHECK(!read_name(std::string(1, '\0'), at));
  // CNAME loops and over-long chains.
  std::string cloop = reply_head(5, "a.test", type_a, 2) + record(to_question, type_cname, encoded("b.test")) +
                      record(encoded("b.test"), type_cname, encoded("a.test"));
  CHECK(!parse_reply(cloop, 5, "a.test", type_a));
  std::string chain = reply_head(5, "c0.test", type_a, max_cname_hops + 1);
  auto link = [](int i) { return fmt::format("c{}.test", i); };
  for (int i = 0; i <= max_cname_hops; ++i) chain += record(encoded(link(i)), type_cname, encoded(link(i + 1)));
  CHECK(!parse_reply(chain, 5, "c0.test", type_a));
  std::string fork = reply_head(5, "a.test", type_a, 2) + record(to_question, type_cname, encoded("b.test")) +
                     record(to_question, type_cname, encoded("c.test"));
  CHECK(!parse_reply(fork, 5, "a.test", type_a));
  // CNAME data with bytes after the name.
  CHECK(!parse_reply(reply_head(5, "a.test", type_a, 1) + record(to_question, type_cname, encoded("b.test") + "x"), 5, "a.test", type_a));
}

TEST_CASE("resolver reply: random bytes never crash and are refused or bounded", "[resolve]") {
  std::mt19937 rng(1234);
  const std::string base = reply_head(5, "a.test", type_a, 2) + record(to_question, type_cname, encoded("b.test")) +
                           record(encoded("b.test"), type_a, v4(127, 0, 2, 1));
  REQUIRE(parse_reply(base, 5, "a.test", type_a));
  for (int i = 0; i < 20000; ++i) {
    std::string p = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) p[rng() % p.size()] = static_cast<char>(rng());
    auto r = parse_reply(p, 5, "a.test", type_a);
    if (r) {
      CHECK(r->cnames.size() <= static_cast<std::size_t>(max_cname_hops));
      for (const auto& c : r->cnames) CHECK(c.size() <= 253);
    }
  }
}

TEST_CASE("DNS stub answer: the CNAME chain then the addresses, read back by the resolver", "[resolve]") {
  const std::string query = build_query(0x4242, "www.test", type_a);
  auto q = egress::parse_dns_query(query);
  REQUIRE(q);
  hosts::Address a4;
  a4.bytes = {127, 0, 2, 7};
  hosts::Address a6;
  a6.v4 = false;
  a6.bytes[0] = 0x20;
  const std::vector<std::string> chain = {"cdn.test", "edge.cdn.test"};
  const std::string answer = egress::dns_answer(query, *q, 0, {a4, a6}, chain);
  auto r = parse_reply(answer, 0x4242, "www.test", type_a);
  REQUIRE(r);
  CHECK(r->rcode == 0);
  CHECK(r->cnames == chain);
  REQUIRE(r->addresses.size() == 1);
  CHECK(r->addresses[0] == a4);
  CHECK(answer[7] == 3);  // two CNAMEs and one A

  const std::string query6 = build_query(0x4343, "www.test", type_aaaa);
  auto q6 = egress::parse_dns_query(query6);
  REQUIRE(q6);
  auto r6 = parse_reply(egress::dns_answer(query6, *q6, 0, {a4, a6}, chain), 0x4343, "www.test", type_aaaa);
  REQUIRE(r6);
  CHECK(r6->cnames == chain);
  REQUIRE(r6->addresses.size() == 1);
  CHECK(r6->addresses[0] == a6);

  // A CNAME question gets the first link alone; a refusal carries nothing.
  const std::string queryc = build_query(0x4444, "www.test", type_cname);
  auto qc = egress::parse_dns_query(queryc);
  REQUIRE(qc);
  auto rc = parse_reply(egress::dns_answer(queryc, *qc, 0, {a4}, chain), 0x4444, "www.test", type_cname);
  REQUIRE(rc);
  CHECK(rc->cnames == std::vector<std::string>{"cdn.test"});
  CHECK(rc->addresses.empty());
  auto refused = parse_reply(egress::dns_answer(query, *q, egress::dns_refused, {a4}, chain), 0x4242, "www.test", type_a);
  REQUIRE(refused);
  CHECK(refused->rcode == egress::dns_refused);
  CHECK(refused->cnames.empty());
  CHECK(refused->addresses.empty());
}
