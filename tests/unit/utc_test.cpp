// nsrun's own UTC calendar (sys/utc.hpp) against glibc's gmtime_r.
#include <catch2/catch_test_macros.hpp>

#include <time.h>

#include <cstdint>

#include "sys/utc.hpp"

using namespace nsrun;

namespace {
void check_against_gmtime(int64_t s) {
  const time_t t = static_cast<time_t>(s);
  tm want{};
  REQUIRE(::gmtime_r(&t, &want) != nullptr);
  const UtcTime got = utc_time(s);
  INFO("seconds " << s);
  CHECK(got.year == int64_t{want.tm_year} + 1900);
  CHECK(got.month == static_cast<unsigned>(want.tm_mon + 1));
  CHECK(got.day == static_cast<unsigned>(want.tm_mday));
  CHECK(got.hour == static_cast<unsigned>(want.tm_hour));
  CHECK(got.minute == static_cast<unsigned>(want.tm_min));
  CHECK(got.second == static_cast<unsigned>(want.tm_sec));
}
}  // namespace

TEST_CASE("utc_time gives gmtime_r's calendar fields", "[unit][utc]") {
  // Leap days and century years: 1900 and 2100 are not leap years, 2000 and
  // 2400 are; the day before and after each 29 February / 1 March.
  for (int64_t s : {int64_t{0}, int64_t{-1}, int64_t{86399}, int64_t{86400}, int64_t{951782400} /* 2000-02-29 */,
                    int64_t{951868800}, int64_t{4107456000} /* 2100-02-28 */, int64_t{4107542400},
                    int64_t{13574563200} /* 2400-02-29 */, int64_t{-2203891200} /* 1900-03-01 */,
                    int64_t{-2203977600}, int64_t{1798761599} /* 2026-12-31 23:59:59 */, int64_t{253402300799}})
    for (int64_t d : {-86400, -1, 0, 1, 86400}) check_against_gmtime(s + d);
  // Every day from 1800 to 2500 at a time of day that moves.
  for (int64_t s = -5364662400; s < 16725225600; s += 86400 + 3607) check_against_gmtime(s);
}
