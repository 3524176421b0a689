#include "bench/numbers.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nsrun::bench {

namespace {

constexpr uint64_t fraction_mask = (uint64_t{1} << 52) - 1;

}  // namespace

// glibc's printf family, %f included, is in the static binary whatever the
// bench does (libcap and nsrun's own messages call it), so printing here
// costs no byte: an own exact digit printer measured 0 bytes of saving
// (docs/bench.md, "Tried and measured, not kept") and was dropped.
std::string fixed(double v, int decimals) {
  char buf[352];  // DBL_MAX with 3 decimals: 309 digits, sign, point, 3
  const int n = std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return std::string(buf, n > 0 ? std::min(static_cast<std::size_t>(n), sizeof buf - 1) : 0);
}

double approx_log10(double x) {
  int k = 0;
  if (x < 0x1p-1022) x *= 0x1p54, k = -54;  // subnormal: scale up first
  const auto bits = std::bit_cast<uint64_t>(x);
  k += static_cast<int>(bits >> 52) - 1023;
  double m = std::bit_cast<double>((bits & fraction_mask) | (uint64_t{1023} << 52));  // in [1, 2)
  // With m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m - 1) / (m + 1),
  // |s| < 0.172: twelve terms of the series are below 1e-18.
  if (m > 1.4142135623730951) m /= 2, ++k;
  const double s = (m - 1) / (m + 1), s2 = s * s;
  double term = s, sum = 0;
  for (int i = 1; i <= 25; i += 2) {
    sum += term / i;
    term *= s2;
  }
  constexpr double ln2 = 0.6931471805599453, ln10 = 2.302585092994046;
  return (k * ln2 + 2 * sum) / ln10;
}

namespace {

// 10^j for j in [0, 38]: all fit below 2^128.
unsigned __int128 power_of_ten(int j) {
  unsigned __int128 p = 1;
  for (int i = 0; i < j; ++i) p *= 10;
  return p;
}

}  // namespace

// 2 log10(ns / 1e6) = log10(ns^2) - 12, and ns^2 < 2^128 is exact.
int half_decades_floor(uint64_t ns) {
  const unsigned __int128 sq = static_cast<unsigned __int128>(ns) * ns;
  int j = 0;
  while (j < 38 && power_of_ten(j + 1) <= sq) ++j;
  return j - 12;
}

int half_decades_ceil(uint64_t ns) {
  const unsigned __int128 sq = static_cast<unsigned __int128>(ns) * ns;
  int j = 0;
  while (j <= 38 && power_of_ten(j) < sq) ++j;
  return j - 12;  // j = 39: above 10^38
}

std::string tick_label(int mantissa, int exponent) {
  const char digit = static_cast<char>('0' + mantissa);
  // %g's rule for precision 6: scientific when the exponent is below -4 or
  // at least 6.
  if (exponent < -4 || exponent >= 6) {
    const int e = std::abs(exponent);
    return std::string(1, digit) + (exponent < 0 ? "e-" : "e+") + (e < 10 ? "0" : "") + std::to_string(e);
  }
  if (exponent >= 0) return std::string(1, digit) + std::string(static_cast<std::size_t>(exponent), '0');
  return "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digit;
}

}  // namespace nsrun::bench
