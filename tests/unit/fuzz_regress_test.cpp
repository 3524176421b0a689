// Inputs the fuzzers (tests/fuzz, tools/fuzz.sh) found, kept as unit tests
// so what they broke stays fixed without running a fuzzer.
#include <catch2/catch_test_macros.hpp>

#include <climits>
#include <string>
#include <vector>

#include "cli/bwrap.hpp"
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
