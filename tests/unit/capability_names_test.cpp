// nsrun names capabilities from a table of its own (src/ns/credentials.cpp)
// instead of linking libcap into nsrun, whose library constructor costs
// every nsrun process 6 prctl calls. These hold the table to
// libcap's names and numbers, so a kernel header or libcap that moves on
// without the table fails here, not in a launch.
#include <sys/capability.h>

#include <catch2/catch_test_macros.hpp>

#include "ns/credentials.hpp"

namespace {

TEST_CASE("capability names: the table is libcap's, name for name", "[credentials]") {
  for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
    char* theirs = cap_to_name(c);
    REQUIRE(theirs != nullptr);
    const std::string expected = theirs;
    cap_free(theirs);
    INFO("capability " << c);
    CHECK(nsrun::capability_name(c) == expected);
    auto back = nsrun::capability_from_name(expected);
    REQUIRE(back.has_value());
    CHECK(*back == c);
    cap_value_t libcap_value = -1;
    REQUIRE(cap_from_name(expected.c_str(), &libcap_value) == 0);
    CHECK(libcap_value == c);
  }
}

TEST_CASE("capability names: any case, whole names only", "[credentials]") {
  CHECK(nsrun::capability_from_name("CAP_NET_ADMIN") == CAP_NET_ADMIN);
  CHECK(nsrun::capability_from_name("Cap_Sys_Admin") == CAP_SYS_ADMIN);
  // No prefix of a name, nothing after one, no numbers, nothing unknown.
  CHECK_FALSE(nsrun::capability_from_name("cap_net_admi").has_value());
  CHECK_FALSE(nsrun::capability_from_name("cap_net_admin2").has_value());
  CHECK_FALSE(nsrun::capability_from_name("cap_net_admin,cap_chown").has_value());
  CHECK_FALSE(nsrun::capability_from_name("12").has_value());
  CHECK_FALSE(nsrun::capability_from_name("").has_value());
  CHECK_FALSE(nsrun::capability_from_name("cap_frobnicate").has_value());
  // A number past the table prints as the number, as libcap's does.
  CHECK(nsrun::capability_name(CAP_LAST_CAP + 1) == std::to_string(CAP_LAST_CAP + 1));
}

TEST_CASE("capability names: parse_capabilities takes names without the prefix and ALL", "[credentials]") {
  auto some = nsrun::parse_capabilities({"net_admin", "CAP_CHOWN"});
  REQUIRE(some);
  CHECK(*some == std::vector<nsrun::cap_value_t>{CAP_NET_ADMIN, CAP_CHOWN});
  auto all = nsrun::parse_capabilities({"all"});
  REQUIRE(all);
  CHECK(all->size() == static_cast<std::size_t>(CAP_LAST_CAP + 1));
  auto bad = nsrun::parse_capabilities({"net_admin2"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message().find("unknown capability") != std::string::npos);
}

}  // namespace
