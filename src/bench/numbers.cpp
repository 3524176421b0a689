#include "bench/numbers.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>

namespace nsrun::bench {

namespace {

constexpr uint64_t fraction_mask = (uint64_t{1} << 52) - 1;

// |v| as m * 2^e with an integer m below 2^53, for a finite v.
struct Binary {
  uint64_t m;
  int e;
};

Binary split(double v) {
  const auto bits = std::bit_cast<uint64_t>(v);
  const auto biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0) return {bits & fraction_mask, -1074};  // subnormal
  return {(bits & fraction_mask) | (uint64_t{1} << 52), biased - 1075};
}

// Decimal digits of n * 2^shift: shift is at most 971, so doubling a digit
// string is quick enough and needs no big-number type.
std::string times_power_of_two(uint64_t n, int shift) {
  std::string digits = std::to_string(n);  // most significant first
  for (int i = 0; i < shift; ++i) {
    int carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const int d = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry != 0) digits.insert(digits.begin(), '1');
  }
  return digits;
}

}  // namespace

std::string fixed(double v, int decimals) {
  const std::string sign = std::signbit(v) ? "-" : "";
  if (std::isinf(v)) return sign + "inf";
  if (std::isnan(v)) return sign + "nan";
  const Binary b = split(v);
  uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  // m * scale stays below 2^63 (m < 2^53, scale <= 1000 < 2^10), and the
  // value times 10^decimals is m * scale * 2^e, rounded here.
  const uint64_t scaled = b.m * scale;
  std::string digits;
  if (b.e >= 0) {
    digits = times_power_of_two(scaled, b.e);
  } else {
    const int s = -b.e;
    uint64_t q = 0;
    // With s >= 64 the value times 10^decimals is below 2^63 / 2^64: it
    // rounds to 0.
    if (s < 64) {
      q = scaled >> s;
      const uint64_t rest = scaled & ((uint64_t{1} << s) - 1);
      const uint64_t half = uint64_t{1} << (s - 1);
      if (rest > half || (rest == half && (q & 1) != 0)) ++q;
    }
    digits = std::to_string(q);
  }
  const auto d = static_cast<std::size_t>(decimals);
  if (digits.size() <= d) digits.insert(0, d + 1 - digits.size(), '0');
  if (d > 0) digits.insert(digits.size() - d, 1, '.');
  return sign + digits;
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
