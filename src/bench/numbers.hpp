// The few floating-point operations the bench's output needs, done without
// libm and without fmt's floating-point formatting, which the static nsrun
// is built without (measured in docs/bench.md, "Where the bytes go": fmt's
// float formatting 24,576 bytes, libm's log10 8,192; glibc's own %f is linked
// anyway and costs nothing more).
#pragma once

#include <cstdint>
#include <string>

namespace nsrun::bench {

// `v` with `decimals` (0 to 3) digits after the point, as printf("%.*f")
// prints it (glibc: the exact binary value, rounded half to even).
std::string fixed(double v, int decimals);

// log10(x) for a finite x > 0, within a few units in the last place: for
// positions on the plot's log axis.
double approx_log10(double x);

// floor(2 * log10(ns / 1e6)) and ceil(2 * log10(ns / 1e6)) for ns >= 1,
// exactly: the plot's axis ends on half decades of milliseconds, and a
// latency right on a boundary must not move the axis by half a decade.
int half_decades_floor(uint64_t ns);
int half_decades_ceil(uint64_t ns);

// `mantissa` * 10^`exponent` (mantissa 1 to 9) as printf("%g") prints it.
std::string tick_label(int mantissa, int exponent);

}  // namespace nsrun::bench
