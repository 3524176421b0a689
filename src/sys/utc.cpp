#include "sys/utc.hpp"

namespace nsrun {

namespace {
// Floor division, for times before 1970 too.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
}  // namespace

UtcTime utc_time(int64_t s) {
  const int64_t days = floor_div(s, 86400);
  const int64_t rest = s - days * 86400;
  UtcTime t{};
  t.hour = static_cast<unsigned>(rest / 3600);
  t.minute = static_cast<unsigned>(rest % 3600 / 60);
  t.second = static_cast<unsigned>(rest % 60);
  // Count from 0000-03-01, so that the leap day ends a year; 400 Gregorian
  // years are exactly 146,097 days, and 1970-01-01 is day 719,468.
  const int64_t z = days + 719468;
  const int64_t cycle = floor_div(z, 146097);
  const int64_t day_of_cycle = z - cycle * 146097;  // 0..146096
  // Years into the cycle: a leap day every 4 years, none every 100, one
  // every 400 (the cycle's last day).
  const int64_t year_of_cycle =
      (day_of_cycle - day_of_cycle / 1460 + day_of_cycle / 36524 - day_of_cycle / 146096) / 365;
  const int64_t day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle / 4 - year_of_cycle / 100);
  // Months from March: 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31, 29/28;
  // the five-month pattern 31 30 31 30 31 is 153 days.
  const int64_t month_from_march = (5 * day_of_year + 2) / 153;
  t.day = static_cast<unsigned>(day_of_year - (153 * month_from_march + 2) / 5 + 1);
  t.month = static_cast<unsigned>(month_from_march < 10 ? month_from_march + 3 : month_from_march - 9);
  t.year = year_of_cycle + cycle * 400 + (t.month <= 2 ? 1 : 0);
  return t;
}

}  // namespace nsrun
