// The native command line with many --ro binds: every bind is in the
// Policy, in order, named as typed for later errors; where each value came
// from is kept for `nsrun policy --explain-source`, its only reader, and
// not for a launch, which would carry a copy of every option until exit.
#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <string>
#include <vector>

#include "cli/native.hpp"
#include "cli/settings.hpp"
#include "unit_support.hpp"

using namespace nsrun;
using nsrun_unit::caller_in_tmp;

namespace {

std::vector<std::string> with_binds(std::vector<std::string> head, int n) {
  for (int i = 0; i < n; ++i) head.insert(head.end(), {"--ro", fmt::format("/b/{}", i)});
  head.insert(head.end(), {"--workspace", "/w", "--", "true"});
  return head;
}

}  // namespace

TEST_CASE("a launch with a thousand --ro binds plans each, named as typed, and records no command-line source",
          "[parse-binds][settings]") {
  auto inv = parse_native(with_binds({}, 1000), caller_in_tmp());
  REQUIRE(inv);
  REQUIRE(inv->policy.mounts.size() == 1000);
  for (int i : {0, 1, 999}) {
    INFO(i);
    CHECK(inv->policy.mounts[static_cast<std::size_t>(i)].kind == MountOp::Kind::ro_bind);
    CHECK(inv->policy.mounts[static_cast<std::size_t>(i)].source == fmt::format("/b/{}", i));
    CHECK(inv->policy.mounts[static_cast<std::size_t>(i)].dest == fmt::format("/b/{}", i));
  }
  REQUIRE(inv->mount_options.size() == 1000);
  CHECK(inv->mount_options.back() == "--ro");
  for (const SettingSource& s : inv->sources) CHECK(s.origin != "command line");
}

TEST_CASE("nsrun policy --explain-source still names every option of the command line", "[parse-binds][settings]") {
  auto inv = parse_native(with_binds({"policy", "--explain-source"}, 3), caller_in_tmp());
  REQUIRE(inv);
  CHECK(explain_sources(inv->sources) ==
        "command line: --explain-source\n"
        "command line: --ro /b/0\n"
        "command line: --ro /b/1\n"
        "command line: --ro /b/2\n"
        "command line: --workspace /w\n"
        "everything else: nsrun's defaults (later lines win; lists add up; nsrun policy prints the result)\n");
}
