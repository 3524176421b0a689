// Inputs the fuzzers (tests/fuzz, tools/fuzz.sh) found, kept as unit tests
// so what they broke stays fixed without running a fuzzer.
#include <catch2/catch_test_macros.hpp>

#include <climits>
#include <string>
#include <vector>

#include "cli/bwrap.hpp"
#include "net/resolve.hpp"
#include "net/wire.hpp"
#include "policy/hosts.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"

using namespace nsrun;

// fuzz_bwrap_args: a bwrap command line with overlays read back from the
// Policy's JSON without their layers and work directory (and a --bind-fd
// without its fd), so `from_json(to_json(p))` mounted something else.
TEST_CASE("fuzz regression: overlays and bound fds survive the policy JSON", "[fuzz][policy]") {
  BwrapContext ctx;
  ctx.cwd = "/work/ws";
  ctx.uid = 1000;
  ctx.fd_open = [](int fd) { return fd == 7; };
  const std::vector<std::string> args{"--overlay-src", "/a", "--overlay-src", "/b", "--overlay", "/up", "/wk", "/m",
                                      "--overlay-src", "/a", "--tmp-overlay", "/t",
                                      "--overlay-src", "/a", "--overlay-src", "/b", "--ro-overlay", "/r",
                                      "--bind-fd", "7", "/fd", "--", "ls"};
  auto inv = parse_bwrap(args, ctx);
  REQUIRE(inv);
  const Policy& p = inv->policy;
  REQUIRE(p.mounts.size() == 4);
  CHECK(p.mounts[0].layers == std::vector<std::string>{"/b", "/a"});
  CHECK(p.mounts[0].workdir == "/wk");
  CHECK(p.mounts[3].source_fd == 7);

  auto doc = json::parse(json::dump(to_json(p)));
  REQUIRE(doc);
  auto back = from_json(*doc);
  REQUIRE(back);
  CHECK(back->mounts == p.mounts);
  CHECK(*back == p);
}

// A descriptor above INT_MAX was accepted and became negative in the int.
TEST_CASE("fuzz regression: a descriptor number in a policy fits an int", "[fuzz][policy]") {
  auto big = from_json(*json::parse(R"({"report_fd": 4294967294})"));
  REQUIRE_FALSE(big);
  CHECK(big.error().kind == ErrorKind::usage);
  auto max = from_json(*json::parse(R"({"report_fd": 2147483647})"));
  REQUIRE(max);
  CHECK(max->report_fd == INT_MAX);
  auto mount = from_json(*json::parse(R"({"mounts": [{"kind": "bind", "dest": "/x", "source_fd": 2147483648}]})"));
  CHECK_FALSE(mount);
  // uids keep their full range: 2^32-2 is a valid id.
  auto uid = from_json(*json::parse(R"({"uid": 4294967294})"));
  REQUIRE(uid);
  CHECK(*uid->uid == 4294967294u);
}

// fuzz_policy_json: an env entry {"op": "unset", "value": "B"} was read
// with its value, which to_json (a value for set only) then dropped, so the
// Policy read back differed. A value is refused but on set.
TEST_CASE("fuzz regression: an env entry's value is for op set only", "[fuzz][policy]") {
  auto unset = from_json(*json::parse(R"({"env": [{"op": "unset", "name": "C", "value": "B"}]})"));
  REQUIRE_FALSE(unset);
  CHECK(unset.error().kind == ErrorKind::usage);
  CHECK(unset.error().message().find("env[0].value") != std::string::npos);
  CHECK_FALSE(from_json(*json::parse(R"({"env": [{"op": "allow", "name": "LC_*", "value": ""}]})")));
  auto set = from_json(*json::parse(R"({"env": [{"op": "set", "name": "A", "value": "B"}]})"));
  REQUIRE(set);
  auto back = from_json(*json::parse(json::dump(to_json(*set))));
  REQUIRE(back);
  CHECK(*back == *set);
}

// fuzz_dns_query: a query whose labels were "registry" "n.kjs" "org" was
// read as the name registry.n.kjs.org, judged and answered as such: the
// stub answered a name the query had not asked for (nsrun's own resolver
// then refused the answer). A dot inside a label is now a malformed query.
TEST_CASE("fuzz regression: the DNS stub refuses a label with a dot inside", "[fuzz][egress]") {
  const std::string dotted("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x08registry\x05n.kjs\x03org\x00\x00\x1c\x00\x01", 36);
  CHECK_FALSE(egress::parse_dns_query(dotted));
  const std::string plain("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x08registry\x01n\x03kjs\x03org\x00\x00\x1c\x00\x01", 36);
  auto q = egress::parse_dns_query(plain);
  REQUIRE(q);
  CHECK(q->name == "registry.n.kjs.org");
  // What the stub answers for it, nsrun's resolver reads back.
  hosts::Address v6;
  v6.v4 = false;
  v6.bytes[15] = 1;
  v6.bytes[0] = 0x20;
  auto reply = resolve::parse_reply(egress::dns_answer(plain, *q, 0, {v6}), q->id, q->name, q->type);
  REQUIRE(reply);
  CHECK(reply->addresses.size() == 1);
}

// fuzz_socks: a SOCKS5 request naming the empty name was accepted by the
// parser against what its comment said; it is the caller that refuses it
// (as `bad-host`, reply 0x02), as any name it cannot canonicalise. The
// comment now says so and the harness checks that.
TEST_CASE("fuzz regression: a SOCKS5 request for the empty name is refused as a bad host", "[fuzz][egress]") {
  const std::string empty("\x05\x01\x00\x03\x00\x00\x50", 7);
  const auto r = egress::parse_socks5_request(empty);
  REQUIRE(r.status == egress::SocksStatus::ok);
  CHECK(r.host.empty());
  CHECK(r.consumed == 7);
  CHECK_FALSE(hosts::canonical_host(r.host));
}
