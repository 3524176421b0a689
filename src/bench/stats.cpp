#include "bench/stats.hpp"

#include <algorithm>

namespace nsrun::bench {

uint64_t percentile(std::span<const uint64_t> sorted, unsigned pct) {
  // rank = ceil(pct/100 * n), 1-based, in integers.
  const std::size_t n = sorted.size();
  std::size_t rank = (static_cast<std::size_t>(pct) * n + 99) / 100;
  rank = std::clamp<std::size_t>(rank, 1, n);
  return sorted[rank - 1];
}

Summary summarize(std::vector<uint64_t> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  unsigned __int128 sum = 0;
  for (uint64_t v : values) sum += v;
  s.mean = static_cast<uint64_t>(sum / values.size());
  return s;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  return (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::optional<double> paired_ratio(std::span<const uint64_t> row, std::span<const uint64_t> base) {
  std::vector<double> ratios;
  const std::size_t n = std::min(row.size(), base.size());
  ratios.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (row[i] != 0 && base[i] != 0) ratios.push_back(static_cast<double>(row[i]) / static_cast<double>(base[i]));
  return median(std::move(ratios));
}

double per_second(std::size_t launches, uint64_t elapsed_ns) {
  if (elapsed_ns == 0) return 0.0;
  return static_cast<double>(launches) * 1e9 / static_cast<double>(elapsed_ns);
}

}  // namespace nsrun::bench
