// `nsrun bench` arithmetic on a fake clock and a fake launcher: no process is
// spawned and no speed is asserted.
#include <sys/wait.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>

#include "bench/bench.hpp"
#include "bench/numbers.hpp"
#include "bench/stats.hpp"
#include "cli/bench.hpp"
#include "policy/json.hpp"
#include "bench_fake.hpp"

using namespace nsrun::bench;
using nsrun::bench::testing::FakeLauncher;
using Catch::Matchers::WithinAbs;

namespace {

Row row(std::string name, bool nsrun = false) {
  Row r;
  r.name = std::move(name);
  r.argv = {"/bin/true"};
  r.nsrun = nsrun;
  return r;
}

}  // namespace

TEST_CASE("percentiles follow the nearest-rank rule") {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= 100; ++i) v.push_back(i);
  CHECK(percentile(v, 50) == 50);
  CHECK(percentile(v, 90) == 90);
  CHECK(percentile(v, 99) == 99);
  CHECK(percentile(v, 100) == 100);
  const std::vector<uint64_t> three{10, 20, 30};
  CHECK(percentile(three, 50) == 20);
  CHECK(percentile(three, 99) == 30);
  CHECK(percentile(std::vector<uint64_t>{7}, 1) == 7);

  Summary s = summarize({5, 1, 4, 2, 3});
  CHECK(s.n == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.p50 == 3);
  CHECK(s.mean == 3);
  CHECK(summarize({}).n == 0);
}

TEST_CASE("fixed() prints the digits printf prints") {
  auto printf_fixed = [](double v, int decimals) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return std::string(buf);
  };
  // Ties on the exact binary value round to even, as printf and fmt do.
  CHECK(fixed(0.25, 1) == "0.2");
  CHECK(fixed(0.75, 1) == "0.8");
  CHECK(fixed(0.125, 2) == "0.12");
  CHECK(fixed(2.5, 0) == "2");
  CHECK(fixed(2.675, 2) == "2.67");  // 2.67499999...
  CHECK(fixed(-0.0004, 3) == "-0.000");
  CHECK(fixed(7520.0, 1) == "7520.0");
  std::vector<double> values{0.0, -0.0, 0.05, 0.0005, 1e-20, 5e-324, 399.25, 123456789.125, 9007199254740993.0,
                             1e22, 1e23, 1.7976931348623157e308, -1e300, INFINITY, -INFINITY, NAN};
  std::mt19937_64 rng(6);
  for (int i = 0; i < 2000; ++i) {
    values.push_back(static_cast<double>(rng() % 100'000'000) / 1e6);  // ms from ns
    values.push_back(static_cast<double>(rng() % 100'000'000) / 1000.0);  // µs from ns
    values.push_back(static_cast<double>(rng() % 20'000) / static_cast<double>(rng() % 20'000 + 1));  // ratios
    values.push_back(static_cast<double>(rng() % 100'000) / 8.0);  // exact ties
    values.push_back(std::bit_cast<double>(rng()));  // anything, NaNs included
  }
  for (double v : values)
    for (int d = 0; d <= 3; ++d) {
      INFO(v << " with " << d << " decimals");
      CHECK(fixed(v, d) == printf_fixed(v, d));
    }
}

TEST_CASE("the plot's logarithm and axis without libm") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20'000; ++i) {
    const double x = std::ldexp(1.0 + static_cast<double>(rng() >> 11) * 0x1p-53, static_cast<int>(rng() % 120) - 60);
    CHECK_THAT(approx_log10(x), WithinAbs(std::log10(x), 4e-15 * std::max(1.0, std::fabs(std::log10(x)))));
  }
  CHECK(approx_log10(1.0) == 0.0);
  CHECK_THAT(approx_log10(5e-324), WithinAbs(std::log10(5e-324), 1e-12));

  // Half decades of milliseconds, on and around the boundaries.
  CHECK(half_decades_floor(1'000'000) == 0);  // 1 ms
  CHECK(half_decades_ceil(1'000'000) == 0);
  CHECK(half_decades_floor(1'000'001) == 0);
  CHECK(half_decades_ceil(1'000'001) == 1);
  CHECK(half_decades_floor(3'162'277) == 0);  // just below sqrt(10) ms
  CHECK(half_decades_floor(3'162'278) == 1);
  CHECK(half_decades_floor(100'000) == -2);  // 0.1 ms
  CHECK(half_decades_floor(99'999) == -3);
  CHECK(half_decades_floor(1) == -12);
  CHECK(half_decades_ceil(UINT64_MAX) == 27);
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t ns = rng() % 100'000'000'000 + 1;
    const double l = std::log10(static_cast<double>(ns) / 1e6) * 2;
    CHECK(half_decades_floor(ns) == static_cast<int>(std::floor(l)));
    CHECK(half_decades_ceil(ns) == static_cast<int>(std::ceil(l)));
  }

  for (int e = -7; e <= 8; ++e)
    for (int m : {1, 2, 5}) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", m * std::pow(10.0, e));
      CHECK(tick_label(m, e) == buf);
    }
}

TEST_CASE("paired ratios are the median of per-launch ratios, failed pairs left out") {
  const std::vector<uint64_t> base{100, 100, 200, 400, 100};
  const std::vector<uint64_t> row{50, 60, 100, 0, 300};  // 0.5 0.6 0.5 - 3.0
  auto r = paired_ratio(row, base);
  REQUIRE(r);
  CHECK_THAT(*r, WithinAbs(0.55, 1e-9));  // median of 0.5 0.5 0.6 3.0
  CHECK_FALSE(paired_ratio(std::vector<uint64_t>{0}, std::vector<uint64_t>{5}));
  CHECK(*median({3.0, 1.0, 2.0}) == 2.0);
  CHECK_THAT(per_second(50, 2'000'000'000), WithinAbs(25.0, 1e-9));
  CHECK(per_second(1, 0) == 0.0);
}

TEST_CASE("measure interleaves rows, reverses every other round and times each launch on the clock") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations["bare"] = {1'000'000};
  fake.durations["nsrun workspace-write"] = {3'000'000, 5'000'000};
  fake.durations["peer"] = {8'000'000, 10'000'000};
  fake.report = R"({"phases":[{"name":"clone","micros":700},{"name":"exec","micros":900}],"launch_micros":1600})";
  Options o;
  o.launches = 4;
  o.warmup = 1;
  o.baseline = "peer";
  Results res = measure({row("bare"), row("nsrun workspace-write", true), row("peer")}, o, fake, [&] { return now; });

  // 5 rounds: forward, backward, forward...
  REQUIRE(fake.order.size() == 15);
  CHECK(fake.order[0] == "bare");
  CHECK(fake.order[3] == "peer");
  CHECK(fake.order[5] == "bare");
  CHECK(fake.order[6] == "bare");

  REQUIRE(res.rows.size() == 3);
  const RowResult& bare = res.rows[0];
  const RowResult& ns = res.rows[1];
  const RowResult& peer = res.rows[2];
  CHECK(bare.wall_ns == std::vector<uint64_t>{1'000'000, 1'000'000, 1'000'000, 1'000'000});
  // The warm-up round took the first scripted value; measured ones alternate.
  CHECK(ns.wall_ns == std::vector<uint64_t>{5'000'000, 3'000'000, 5'000'000, 3'000'000});
  CHECK(peer.wall_ns == std::vector<uint64_t>{10'000'000, 8'000'000, 10'000'000, 8'000'000});
  CHECK(ns.latency.min == 3'000'000);
  CHECK(ns.latency.p50 == 3'000'000);
  CHECK(ns.latency.max == 5'000'000);
  CHECK(ns.latency.mean == 4'000'000);
  CHECK(ns.cpu_ns_mean == 2'000'000);
  CHECK(ns.peak_rss_kib == 1000 + 5000);

  REQUIRE(res.baseline == 2u);
  REQUIRE(res.bare == 0u);
  CHECK_THAT(*ns.ratio, WithinAbs(0.4375, 1e-9));  // 0.5, 0.375 paired: median 0.4375
  CHECK_THAT(*peer.ratio, WithinAbs(1.0, 1e-9));
  // (3 - 1) / (8 - 1) on the p50s.
  CHECK_THAT(*ns.overhead_ratio, WithinAbs(2.0 / 7.0, 1e-9));
  CHECK_FALSE(bare.overhead_ratio);

  REQUIRE(ns.phases.size() == 2);
  CHECK(ns.phases[0].name == "clone");
  CHECK(ns.phases[0].micros == std::vector<uint64_t>(4, 700));
  CHECK(bare.phases.empty());
}

TEST_CASE("an unavailable row is reported with its reason and never launched") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations["bare"] = {1'000'000};
  fake.durations["nsrun landlock"] = {1'000'000};
  fake.refuse["nsrun landlock"] = "nsrun: --backend: unknown option";
  Options o;
  o.launches = 3;
  o.warmup = 0;
  o.baseline = "bare";
  Results res = measure({row("bare"), row("nsrun landlock", true)}, o, fake, [&] { return now; });
  CHECK(std::count(fake.order.begin(), fake.order.end(), "nsrun landlock") == 0);
  CHECK_FALSE(res.rows[1].row.available);
  CHECK(res.rows[1].row.reason == "nsrun: --backend: unknown option");
  CHECK(format_table(res).find("unavailable (nsrun: --backend: unknown option)") != std::string::npos);
}

TEST_CASE("every row but the floors is paired against each measured floor") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations["bare"] = {1'000'000};
  fake.durations["floor glibc"] = {2'000'000, 4'000'000};
  fake.durations["floor musl"] = {1'500'000};
  fake.durations["nsrun workspace-write"] = {6'000'000};
  fake.refuse["floor musl"] = "nsrun-floor-musl not built";
  Row glibc = row("floor glibc"), musl = row("floor musl");
  glibc.floor = musl.floor = true;
  Options o;
  o.launches = 4;
  o.warmup = 0;
  o.baseline = "bare";
  Results res = measure({row("bare"), glibc, musl, row("nsrun workspace-write", true)}, o, fake, [&] { return now; });
  // The unavailable musl floor is no yardstick; the floors get no ratio of their own.
  CHECK(res.rows[1].floor_ratios.empty());
  CHECK(res.rows[2].floor_ratios.empty());
  REQUIRE(res.rows[3].floor_ratios.size() == 1);
  CHECK(res.rows[3].floor_ratios[0].first == "floor glibc");
  CHECK_THAT(res.rows[3].floor_ratios[0].second, WithinAbs(2.25, 1e-9));  // 6/2, 6/4 paired: median of 3, 3, 1.5, 1.5
  REQUIRE(res.rows[0].floor_ratios.size() == 1);
  CHECK_THAT(res.rows[0].floor_ratios[0].second, WithinAbs(0.375, 1e-9));
  const std::string table = format_table(res);
  CHECK(table.find("above the floor") != std::string::npos);
  // p50s: workspace-write 6 ms, floor glibc 2 ms (nearest rank of 2 2 4 4); bare 1 ms is below it.
  CHECK(table.find("floor glibc: +4.00 ms 2.25x") != std::string::npos);
  CHECK(table.find("floor glibc: -1.00 ms 0.38x") != std::string::npos);
  CHECK(to_json(res).find(R"("floor_ratios": {"floor glibc": 2.250})") != std::string::npos);
}

TEST_CASE("the concurrency pass counts launches per second on the clock") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations["bare"] = {1'000'000};  // the fake finishes launches one at a time
  Options o;
  o.launches = 10;
  o.warmup = 0;
  o.concurrency = 3;
  o.baseline = "bare";
  Results res = measure({row("bare")}, o, fake, [&] { return now; });
  CHECK_THAT(res.rows[0].per_second, WithinAbs(1000.0, 1e-6));  // 10 launches in 10 ms
}

TEST_CASE("the JSON has every documented field") {
  uint64_t now = 0;
  FakeLauncher fake(now);
  fake.durations["bare"] = {1'000'000};
  fake.durations["nsrun read-only"] = {2'000'000};
  fake.durations["bwrap"] = {4'000'000};
  fake.refuse["bwrap"] = "bwrap not found";
  fake.report = R"({"phases":[{"name":"clone","micros":700}]})";
  Options o;
  o.launches = 5;
  o.warmup = 0;
  o.concurrency = 2;
  o.baseline = "bare";
  Results res = measure({row("bare"), row("nsrun read-only", true), row("bwrap")}, o, fake, [&] { return now; });
  res.payload = "/bin/true";
  const std::string text = to_json(res);
  // nsrun's JSON reader takes integers only: drop the fractions to check
  // the structure with it.
  std::string ints;
  for (std::size_t i = 0; i < text.size(); ++i) {
    ints += text[i];
    if (std::isdigit(static_cast<unsigned char>(text[i])) && i + 2 < text.size() && text[i + 1] == '.' &&
        std::isdigit(static_cast<unsigned char>(text[i + 2])))
      for (i += 1; i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));) ++i;
  }
  auto doc = nsrun::json::parse(ints);
  REQUIRE(doc);
  for (const char* key : {"tool", "version", "payload", "launches", "warmup", "concurrency", "baseline", "rows"})
    CHECK(doc->find(key) != nullptr);
  CHECK(doc->find("baseline")->as_string() == "bare");
  const auto& rows = doc->find("rows")->as_array();
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows)
    for (const char* key : {"name", "command", "nsrun", "floor", "available", "reason", "launches", "failures",
                            "latency_us", "cpu_us_mean", "peak_rss_kib", "ratio", "overhead_ratio", "floor_ratios",
                            "launches_per_s", "phases_us", "samples_us"})
      CHECK(r.find(key) != nullptr);
  const auto& ro = rows[1];
  for (const char* key : {"min", "p50", "p90", "p99", "max", "mean"}) CHECK(ro.find("latency_us")->find(key)->is_int());
  CHECK(ro.find("latency_us")->find("p50")->as_int() == 2000);
  CHECK(ro.find("ratio")->as_int() == 2);
  CHECK(ro.find("samples_us")->as_array().size() == 5);
  CHECK(ro.find("phases_us")->as_array().at(0).find("name")->as_string() == "clone");
  CHECK(rows[2].find("available")->as_bool() == false);
  CHECK(rows[2].find("reason")->as_string() == "bwrap not found");
  CHECK(rows[2].find("ratio")->is_null());

  const std::string svg = to_svg(res);
  CHECK(svg.starts_with("<svg"));
  CHECK(svg.find("nsrun read-only") != std::string::npos);
  CHECK(std::count(svg.begin(), svg.end(), '\n') > 10);
  CHECK(svg.find("</svg>") != std::string::npos);
}

TEST_CASE("bench options and --vs command lines") {
  auto words = nsrun::split_command_line(R"(bwrap --bind "a b" 'c d' e\ f {})");
  REQUIRE(words);
  CHECK(*words == std::vector<std::string>{"bwrap", "--bind", "a b", "c d", "e f", "{}"});
  CHECK_FALSE(nsrun::split_command_line("x 'open"));

  std::vector<std::string> args{"-n", "7", "--warmup=2", "--vs", "bwrap", "--rows", "bare,read-only", "--binds", "1000"};
  auto a = nsrun::parse_bench(args);
  REQUIRE(a);
  CHECK(a->options.launches == 7);
  CHECK(a->options.warmup == 2);
  CHECK(a->peers == std::vector<std::string>{"bwrap"});
  CHECK(a->rows == std::vector<std::string>{"bare", "read-only"});
  CHECK(a->binds == 1000);
  std::vector<std::string> bad{"--rows", "fast"};
  CHECK_FALSE(nsrun::parse_bench(bad));
  std::vector<std::string> zero{"--launches", "0"};
  CHECK_FALSE(nsrun::parse_bench(zero));
}
