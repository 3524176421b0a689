// Host rules of --network proxy: each trick a command could use
// to reach a host the rules do not allow, against the pure decision.
#include <catch2/catch_test_macros.hpp>

#include <random>

#include "policy/hosts.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"

using namespace nsrun;
using namespace nsrun::hosts;

namespace {

Host host(std::string_view s) {
  auto h = canonical_host(s);
  REQUIRE(h);
  return *h;
}

Rules rules(std::vector<std::string> allow, std::vector<std::string> deny = {}) {
  auto r = parse_rules(allow, deny);
  REQUIRE(r);
  return *r;
}

bool allowed(const Rules& r, std::string_view h, uint16_t port = 443) {
  const Host c = host(h);
  if (!decide(r, c, port).allowed) return false;
  return !c.is_address || decide_address(r, c.address, port).allowed;
}

}  // namespace

TEST_CASE("hosts: names are folded to one canonical form", "[hosts]") {
  CHECK(host("Example.COM").name == "example.com");
  CHECK(host("example.com.").name == "example.com");
  CHECK_FALSE(host("example.com.").is_address);
  CHECK_FALSE(canonical_host("example.com.."));
  CHECK_FALSE(canonical_host(""));
  CHECK_FALSE(canonical_host("."));
  CHECK_FALSE(canonical_host("a..b"));
  CHECK_FALSE(canonical_host("exa mple.com"));
  CHECK_FALSE(canonical_host("example.com%00"));
  CHECK_FALSE(canonical_host("user@example.com"));
  CHECK_FALSE(canonical_host(std::string(64, 'a') + ".com"));
  CHECK_FALSE(canonical_host(std::string(300, 'a')));
  // Outside ASCII: the xn-- form (src/policy/idn.hpp), never matched
  // byte-wise; what would need IDNA mapping is refused.
  CHECK(host("exämple.com").name == "xn--exmple-cua.com");
  CHECK(host("еxample.com").name == "xn--xample-2of.com");  // Cyrillic е: another name than example.com
  CHECK_FALSE(canonical_host("EXÄMPLE.com"));
  CHECK(host("xn--exmple-cua.com").name == "xn--exmple-cua.com");
}

TEST_CASE("hosts: every IPv4 spelling is the address, never a name", "[hosts]") {
  for (const char* s : {"127.0.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.0.1",
                        "0x7F.0.0.1", "017700000001", "127.0.0.1.", "::ffff:127.0.0.1", "::FFFF:7f00:1"}) {
    INFO(s);
    const Host h = host(s);
    CHECK(h.is_address);
    CHECK(h.address.v4);
    CHECK(h.name == "127.0.0.1");
  }
  // Ends in a number but is no address: refused, not looked up as a name.
  CHECK_FALSE(canonical_host("1.2.3.4.5"));
  CHECK_FALSE(canonical_host("256.1.1.1"));
  CHECK_FALSE(canonical_host("example.123"));
  CHECK_FALSE(host("0x1g").is_address);
  CHECK(host("1.2.3.example").name == "1.2.3.example");
  CHECK_FALSE(canonical_host("fe80::1%eth0"));
}

TEST_CASE("hosts: internal addresses", "[hosts]") {
  for (const char* s : {"127.0.0.1", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                        "169.254.169.254", "100.100.100.200", "224.0.0.1", "255.255.255.255", "::1", "::",
                        "fe80::1", "fd00::1", "fc00::1", "ff02::1", "64:ff9b::7f00:1", "2002:7f00:1::1",
                        "::127.0.0.1", "fec0::1"}) {
    INFO(s);
    CHECK(is_internal(host(s).address));
  }
  for (const char* s : {"1.1.1.1", "172.32.0.1", "198.18.0.1", "2001:db8::1", "64:ff9b::808:808", "2606:4700::1111"}) {
    INFO(s);
    CHECK_FALSE(is_internal(host(s).address));
  }
}

TEST_CASE("hosts: patterns", "[hosts]") {
  auto p = parse_pattern("*.Example.com:443");
  REQUIRE(p);
  CHECK(p->kind == Pattern::Kind::wildcard);
  CHECK(p->text == "*.example.com:443");
  p = parse_pattern("[::1]:8080");
  REQUIRE(p);
  CHECK(p->kind == Pattern::Kind::address);
  CHECK(p->text == "[::1]:8080");
  p = parse_pattern("2001:db8::1");
  REQUIRE(p);
  CHECK(p->port == std::nullopt);
  p = parse_pattern("0x7f.1:80");
  REQUIRE(p);
  CHECK(p->text == "127.0.0.1:80");
  for (const char* bad : {"", "*", "*.", "*.1.2.3.4", "a.*.com", "ex*.com", "example.com:0", "example.com:65536",
                          "example.com:http", "[::1", "[::1]x", "[example.com]:80", "EXÄMPLE.com", "a b"}) {
    INFO(bad);
    CHECK_FALSE(parse_pattern(bad));
  }
}

TEST_CASE("hosts: wildcards are strict subdomains and never match addresses", "[hosts]") {
  const Rules r = rules({"*.example.com"});
  CHECK(allowed(r, "a.example.com"));
  CHECK(allowed(r, "A.B.EXAMPLE.COM."));
  CHECK_FALSE(allowed(r, "example.com"));
  CHECK_FALSE(allowed(r, "badexample.com"));
  CHECK_FALSE(allowed(r, "example.com.evil.org"));
  CHECK_FALSE(parse_pattern("*.0.0.1"));  // a wildcard over an address is no rule at all
}

TEST_CASE("hosts: ports, deny wins, names never allow addresses", "[hosts]") {
  const Rules r = rules({"example.com", "api.test:443", "*.corp.test"}, {"secret.corp.test", "example.com:25"});
  CHECK(allowed(r, "example.com", 80));
  CHECK_FALSE(allowed(r, "example.com", 25));
  CHECK(decide(r, host("example.com"), 25).reason == blocked_denylist);
  CHECK(decide(r, host("example.com"), 25).rule == "example.com:25");
  CHECK(allowed(r, "api.test", 443));
  CHECK_FALSE(allowed(r, "api.test", 80));
  CHECK(decide(r, host("api.test"), 80).reason == blocked_allowlist);
  CHECK(allowed(r, "x.corp.test"));
  CHECK_FALSE(allowed(r, "SECRET.corp.test."));
  // An address is reached only through a rule that names it.
  CHECK_FALSE(allowed(r, "93.184.216.34"));
  CHECK(decide(r, host("93.184.216.34"), 443).rule == "ip-literal");
}

TEST_CASE("hosts: internal destinations need an explicit address rule", "[hosts]") {
  const Rules none = rules({"example.com"});
  CHECK_FALSE(decide_address(none, host("127.0.0.1").address, 80).allowed);
  CHECK(decide_address(none, host("169.254.169.254").address, 80).rule == "internal-address");
  CHECK(decide_address(none, host("93.184.216.34").address, 80).allowed);
  const Rules local = rules({"127.0.0.1:8080", "[::1]"}, {"198.18.0.9"});
  CHECK(allowed(local, "127.0.0.1", 8080));
  CHECK(allowed(local, "0x7f000001", 8080));
  CHECK(allowed(local, "::ffff:127.0.0.1", 8080));
  CHECK_FALSE(allowed(local, "127.0.0.1", 8081));
  CHECK_FALSE(allowed(local, "127.0.0.2", 8080));
  CHECK(allowed(local, "::1", 22));
  CHECK(decide_address(local, host("198.18.0.9").address, 80).reason == blocked_denylist);
}

TEST_CASE("hosts: bad rules are usage errors naming the option", "[hosts]") {
  auto r = parse_rules({"ok.test"}, {"*"});
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == ErrorKind::usage);
  CHECK(r.error().step == "--deny-host");
  CHECK(r.error().exit_code() == 125);
}

TEST_CASE("hosts: the canonicaliser is bounded on any input", "[hosts][fuzz]") {
  std::mt19937 rng(13);
  const std::string alphabet = "0123456789abcdefxX.:[]*-_%@ \xc3\xa4";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 80, 'a');
    for (auto& c : s) c = alphabet[rng() % alphabet.size()];
    auto h = canonical_host(s);
    if (h) {
      // Canonical is a fixed point.
      auto again = canonical_host(h->name);
      REQUIRE(again);
      CHECK(again->name == h->name);
      CHECK(again->is_address == h->is_address);
    }
    (void)parse_pattern(s);
  }
}

TEST_CASE("hosts: a lookup (port 0) is allowed by any port's rule, denied only by a port-less one", "[hosts]") {
  const Rules r = rules({"api.test:443", "mail.test"}, {"mail.test:25", "bad.test"});
  CHECK(decide(r, host("api.test"), 0).allowed);
  CHECK(decide(r, host("mail.test"), 0).allowed);
  CHECK_FALSE(decide(r, host("bad.test"), 0).allowed);
  CHECK_FALSE(decide(r, host("other.test"), 0).allowed);
  CHECK(decide_address(rules({"127.0.0.1:80"}), host("127.0.0.1").address, 0).allowed);
}

TEST_CASE("hosts: the policy JSON's network object round-trips, and a mode name still reads", "[hosts]") {
  auto doc = json::parse(R"({"network": {"mode": "proxy", "allow": ["a.test", "*.b.test:443"], "deny": ["c.b.test"],
                              "resolve": ["a.test=198.18.0.1"], "log": "/var/tmp/net.log"}})");
  REQUIRE(doc);
  auto p = from_json(*doc);
  REQUIRE(p);
  CHECK(p->network == Network::proxy);
  CHECK(p->egress.allow == std::vector<std::string>{"a.test", "*.b.test:443"});
  CHECK(p->egress.deny == std::vector<std::string>{"c.b.test"});
  CHECK(p->egress.log == "/var/tmp/net.log");
  auto again = from_json(to_json(*p));
  REQUIRE(again);
  CHECK(*again == *p);
  auto plain = json::parse(R"({"network": "none"})");
  REQUIRE(plain);
  auto q = from_json(*plain);
  REQUIRE(q);
  CHECK(q->network == Network::none);
  CHECK(to_json(*q).find("network")->as_string() == "none");
  auto bad = json::parse(R"({"network": {"mode": "proxy", "allowed": []}})");
  REQUIRE(bad);
  auto r = from_json(*bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("network.allowed") != std::string::npos);
}
