// `nsrun bench`'s floor-sandbox rows on a fake
// clock and a fake launcher: which rows are paired with which floor, what
// the table and the JSON say, and the --rows name. No process is spawned
// and no speed is asserted.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>

#include <map>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "cli/bench.hpp"
#include "bench_fake.hpp"

using namespace nsrun::bench;
using Catch::Matchers::WithinAbs;
using nsrun::bench::testing::FakeLauncher;

namespace {

Row row(std::string name, std::string promise = {}, std::string floor_of = {}) {
  Row r;
  r.name = std::move(name);
  r.argv = {"/bin/true"};
  r.promise = std::move(promise);
  r.floor_of = std::move(floor_of);
  return r;
}

}  // namespace

TEST_CASE("each row is paired with the floor-sandbox rows of its own promise only", "[bench][floor-sandbox]") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations = {{"floor-sandbox glibc", {2'000'000}},     {"floor-sandbox musl", {1'600'000}},
                    {"floor-sandbox-net glibc", {3'000'000}}, {"floor-sandbox-net musl", {2'500'000}},
                    {"nsrun workspace-write", {3'000'000}},   {"nsrun network-none", {4'500'000}},
                    {"nsrun landlock", {2'000'000}},          {"bwrap", {5'000'000}}};
  fake.refuse["floor-sandbox-net musl"] = "nsrun-floor-sandbox-musl not built";
  Options o;
  o.launches = 3;
  o.warmup = 0;
  o.baseline = "bwrap";
  Results res = measure({row("floor-sandbox glibc", {}, "workspace-write"), row("floor-sandbox musl", {}, "workspace-write"),
                         row("floor-sandbox-net glibc", {}, "network-none"),
                         row("floor-sandbox-net musl", {}, "network-none"),
                         row("nsrun workspace-write", "workspace-write"), row("nsrun network-none", "network-none"),
                         row("nsrun landlock"), row("bwrap", "workspace-write")},
                        o, fake, [&] { return now; });
  // The floors themselves are paired with none; a row of no promise neither.
  for (std::size_t i : {0u, 1u, 2u, 3u, 6u}) CHECK(res.rows[i].sandbox_floor_ratios.empty());
  const auto& ww = res.rows[4].sandbox_floor_ratios;
  REQUIRE(ww.size() == 2);
  CHECK(ww[0].first == "floor-sandbox glibc");
  CHECK_THAT(ww[0].second, WithinAbs(1.5, 1e-9));
  CHECK(ww[1].first == "floor-sandbox musl");
  CHECK_THAT(ww[1].second, WithinAbs(1.875, 1e-9));
  // The unavailable net floor is no yardstick.
  const auto& nn = res.rows[5].sandbox_floor_ratios;
  REQUIRE(nn.size() == 1);
  CHECK(nn[0].first == "floor-sandbox-net glibc");
  CHECK_THAT(nn[0].second, WithinAbs(1.5, 1e-9));
  REQUIRE(res.rows[7].sandbox_floor_ratios.size() == 2);
  CHECK_THAT(res.rows[7].sandbox_floor_ratios[0].second, WithinAbs(2.5, 1e-9));
  // The floor's own ratio to the baseline answers whether anything with
  // this promise can be at 0.50x bwrap here.
  REQUIRE(res.rows[0].ratio);
  CHECK_THAT(*res.rows[0].ratio, WithinAbs(0.4, 1e-9));

  const std::string table = format_table(res);
  CHECK(table.find("above the sandbox's floor") != std::string::npos);
  CHECK(table.find("nsrun workspace-write    floor-sandbox glibc: +1.00 ms 1.50x  floor-sandbox musl: +1.40 ms 1.88x\n") !=
        std::string::npos);
  CHECK(table.find("nsrun network-none       floor-sandbox-net glibc: +1.50 ms 1.50x\n") != std::string::npos);
  CHECK(table.find("nsrun landlock           floor-sandbox") == std::string::npos);

  const std::string json = to_json(res);
  CHECK(json.find(R"("floor_of": "workspace-write", "promise": null)") != std::string::npos);
  CHECK(json.find(R"("floor_of": null, "promise": "network-none")") != std::string::npos);
  CHECK(json.find(R"("sandbox_floor_ratios": {"floor-sandbox-net glibc": 1.500})") != std::string::npos);
  CHECK(json.find(R"("sandbox_floor_ratios": {})") != std::string::npos);
}

TEST_CASE("without floor-sandbox rows the table has no such section", "[bench][floor-sandbox]") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations = {{"nsrun workspace-write", {3'000'000}}, {"bwrap", {5'000'000}}};
  Options o;
  o.launches = 2;
  o.warmup = 0;
  o.baseline = "bwrap";
  Results res = measure({row("nsrun workspace-write", "workspace-write"), row("bwrap", "workspace-write")}, o, fake,
                        [&] { return now; });
  CHECK(res.rows[0].sandbox_floor_ratios.empty());
  CHECK(format_table(res).find("sandbox's floor") == std::string::npos);
}

TEST_CASE("--rows takes floor-sandbox and names it among the rows it knows", "[bench][floor-sandbox]") {
  const std::vector<std::string> ok{"--rows", "bare,floor,floor-sandbox,workspace-write"};
  auto a = nsrun::parse_bench(ok);
  REQUIRE(a);
  CHECK(a->rows == std::vector<std::string>{"bare", "floor", "floor-sandbox", "workspace-write"});
  const std::vector<std::string> bad{"--rows", "floor-sandboxes"};
  auto b = nsrun::parse_bench(bad);
  REQUIRE_FALSE(b);
  CHECK(b.error().message().find("unknown row 'floor-sandboxes'") != std::string::npos);
  CHECK(b.error().message().find("floor, floor-sandbox, read-only") != std::string::npos);
  CHECK(nsrun::bench_usage().find("bare,floor,floor-sandbox,read-only") != std::string::npos);
}
