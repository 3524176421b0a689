// Calendar fields of a UTC time, computed here. glibc's gmtime_r goes
// through the time-zone code (tzset), which reads TZ rules with sscanf and
// so links the whole scanf and strtod/strtof/strtold/strtof128 family into
// the static nsrun: about 90 KB (docs/bench.md, "Where the bytes go") for
// the egress log's timestamps. UTC needs no zone rules: the proleptic
// Gregorian calendar, as gmtime_r gives it.
#pragma once

#include <cstdint>

namespace nsrun {

struct UtcTime {
  int64_t year;
  unsigned month;   // 1..12
  unsigned day;     // 1..31
  unsigned hour, minute, second;
};

UtcTime utc_time(int64_t seconds_since_epoch);

}  // namespace nsrun
