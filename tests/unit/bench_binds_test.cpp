// `nsrun bench --binds N`'s cost per bind, on made-up samples: launch i of
// a bind row against launch i of the same row without the binds, over N;
// nsrun's against the sandbox's floor with the same binds, paired. No
// process is spawned and no speed is asserted.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>

#include <string>
#include <vector>

#include "bench/bench.hpp"

using namespace nsrun::bench;
using Catch::Matchers::WithinAbs;

namespace {

RowResult sampled(std::string name, std::vector<uint64_t> wall, std::string promise = {}, std::string floor_of = {},
                  std::size_t binds = 0, std::string without = {}) {
  RowResult r;
  r.row.name = std::move(name);
  r.row.argv = {"/bin/true"};
  r.row.promise = std::move(promise);
  r.row.floor_of = std::move(floor_of);
  r.row.binds = binds;
  r.row.without_binds = std::move(without);
  r.wall_ns = std::move(wall);
  return r;
}

Results four_rows(std::vector<uint64_t> nsrun_binds) {
  Results res;
  res.options.launches = 3;
  res.rows.push_back(sampled("nsrun workspace-write", {3'000'000, 3'000'000, 3'000'000}, "workspace-write"));
  res.rows.push_back(sampled("nsrun +100 ro binds", std::move(nsrun_binds), "workspace-write", {}, 100,
                             "nsrun workspace-write"));
  res.rows.push_back(sampled("floor-sandbox glibc", {2'000'000, 2'000'000, 2'000'000}, {}, "workspace-write"));
  res.rows.push_back(sampled("floor-sandbox glibc +100 ro binds", {3'600'000, 3'600'000, 4'000'000}, {},
                             "workspace-write", 100, "floor-sandbox glibc"));
  return res;
}

}  // namespace

TEST_CASE("a bind row's cost per bind is its paired difference to the row without binds, over the binds",
          "[bench][floor-binds]") {
  Results res = four_rows({5'000'000, 5'400'000, 5'000'000});
  compute(res);
  const RowResult& ns = res.rows[1];
  const RowResult& fl = res.rows[3];
  CHECK(ns.per_bind_ns == std::vector<uint64_t>{20'000, 24'000, 20'000});
  CHECK(fl.per_bind_ns == std::vector<uint64_t>{16'000, 16'000, 20'000});
  CHECK(ns.per_bind.p50 == 20'000);
  CHECK(fl.per_bind.p50 == 16'000);
  // Rows without binds have none.
  CHECK(res.rows[0].per_bind.n == 0);
  CHECK(res.rows[2].per_bind.n == 0);
  // nsrun's per bind over the floor's, launch by launch: 1.25, 1.5, 1.0.
  REQUIRE(ns.per_bind_floor_ratios.size() == 1);
  CHECK(ns.per_bind_floor_ratios[0].first == "floor-sandbox glibc +100 ro binds");
  CHECK_THAT(ns.per_bind_floor_ratios[0].second, WithinAbs(1.25, 1e-9));
  // The whole launches are paired with the floor of the same binds only,
  // the plain launch with the plain floor only.
  REQUIRE(ns.sandbox_floor_ratios.size() == 1);
  CHECK(ns.sandbox_floor_ratios[0].first == "floor-sandbox glibc +100 ro binds");
  REQUIRE(res.rows[0].sandbox_floor_ratios.size() == 1);
  CHECK(res.rows[0].sandbox_floor_ratios[0].first == "floor-sandbox glibc");
  CHECK(fl.per_bind_floor_ratios.empty());

  const std::string table = format_table(res);
  INFO(table);
  CHECK(table.find("per read-only bind") != std::string::npos);
  CHECK(table.find("nsrun +100 ro binds                 20.0 µs  floor-sandbox glibc +100 ro binds: +4.0 µs 1.25x\n") !=
        std::string::npos);
  CHECK(table.find("floor-sandbox glibc +100 ro binds   16.0 µs\n") != std::string::npos);
  const std::string json = to_json(res);
  CHECK(json.find(R"("binds": 100, "without_binds": "nsrun workspace-write", "per_bind_us": {"n": 3, "min": 20.0, "p50": 20.0, "max": 24.0, "mean": 21.3})") !=
        std::string::npos);
  CHECK(json.find(R"("binds": 0, "without_binds": null, "per_bind_us": null, "per_bind_floor_ratios": {})") !=
        std::string::npos);
  CHECK(json.find(R"("per_bind_floor_ratios": {"floor-sandbox glibc +100 ro binds": 1.250})") != std::string::npos);
}

TEST_CASE("a round where either launch failed, or the binds cost nothing, gives no cost per bind", "[bench][floor-binds]") {
  // Round 2: the bind launch failed (0); round 3: faster than without.
  Results res = four_rows({5'000'000, 0, 2'900'000});
  compute(res);
  const RowResult& ns = res.rows[1];
  CHECK(ns.per_bind_ns == std::vector<uint64_t>{20'000, 0, 0});
  CHECK(ns.per_bind.n == 1);
  // Only round 1 pairs: 20 / 16.
  REQUIRE(ns.per_bind_floor_ratios.size() == 1);
  CHECK_THAT(ns.per_bind_floor_ratios[0].second, WithinAbs(1.25, 1e-9));

  // Without its row without binds, a bind row has no cost per bind and no
  // such section is printed.
  Results alone = four_rows({5'000'000, 5'000'000, 5'000'000});
  alone.rows.erase(alone.rows.begin());
  compute(alone);
  CHECK(alone.rows[0].per_bind.n == 0);
  CHECK(alone.rows[0].per_bind_floor_ratios.empty());
  CHECK(format_table(alone).find("per read-only bind") != std::string::npos);  // the floor's own still is
  alone.rows.erase(alone.rows.begin() + 1);
  compute(alone);
  CHECK(format_table(alone).find("per read-only bind") == std::string::npos);
}
