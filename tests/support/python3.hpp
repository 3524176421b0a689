// The attacks that need a script run it with /usr/bin/python3; without it
// they skip loudly (or fail when $NSRUN_TEST_REQUIRE names python3).
#pragma once

#include "harness.hpp"

namespace nsrun_test {

inline void require_python3() {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
}

}  // namespace nsrun_test
