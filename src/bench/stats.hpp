// The arithmetic of `nsrun bench`, free of clocks and processes so that it
// is unit-tested on made-up numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace nsrun::bench {

// Order statistics of one row's launch latencies (nanoseconds). Percentiles
// use the nearest-rank rule: pN is the smallest sample with at least N% of
// the samples at or below it, so every figure is a latency that was seen.
struct Summary {
  std::size_t n = 0;
  uint64_t min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  uint64_t mean = 0;  // arithmetic mean, rounded down
};

// `sorted` ascending and non-empty; pct in (0, 100].
uint64_t percentile(std::span<const uint64_t> sorted, unsigned pct);
Summary summarize(std::vector<uint64_t> values);

// The ordinary median (mean of the two middle values for an even count);
// nullopt when empty.
std::optional<double> median(std::vector<double> values);

// Paired ratio: launch i of `row` and launch i of `base` ran back to back,
// so row[i] / base[i] has the machine's drift cancelled; the result is the
// median of those ratios. Pairs where either side is 0 (a failed launch)
// are left out; nullopt when no pair is left.
std::optional<double> paired_ratio(std::span<const uint64_t> row, std::span<const uint64_t> base);

// Launches per second for `launches` completed in `elapsed_ns`; 0 when no
// time passed.
double per_second(std::size_t launches, uint64_t elapsed_ns);

}  // namespace nsrun::bench
