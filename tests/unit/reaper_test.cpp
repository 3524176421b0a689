// The wait loop's look at a command that has begun to exit: the flags
// field of /proc/PID/stat, read without libc.
#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "ns/reaper.hpp"

using nsrun::flags_in_stat;

TEST_CASE("the flags of a /proc/<pid>/stat line", "[unit][reaper]") {
  // pid (comm) state ppid pgrp session tty_nr tpgid flags
  CHECK(flags_in_stat("4242 (sleep) S 17 4242 17 0 -1 4194560 95 0 0 0\n") == 4194560UL);
  // PF_EXITING (0x4) set, as while the kernel frees an exiting process's memory.
  CHECK(flags_in_stat("77 (sh) D 1 77 77 0 -1 4194564 0 0") == 4194564UL);
  CHECK(flags_in_stat("7 (x) S 1 1 1 0 -1 9\n") == 9UL);
  // A command name may hold spaces and parentheses: the fields count from
  // the last ')'.
  CHECK(flags_in_stat("78 (a) R 99 (b) Z 1 2 3 0 -1 4 5") == 4UL);
  CHECK(flags_in_stat("79 ( ) ) S 1 2 3 4 5 6 7") == 6UL);

  CHECK_FALSE(flags_in_stat(""));
  CHECK_FALSE(flags_in_stat("garbage"));
  CHECK_FALSE(flags_in_stat("80 (cut"));
  CHECK_FALSE(flags_in_stat("81 (short) S 1 2 3 0 -1"));
  CHECK_FALSE(flags_in_stat("82 (x) S 1 2 3 0 -1 "));
  CHECK_FALSE(flags_in_stat("83 (x) S 1 2 3 0 -1 12a 0"));
  CHECK_FALSE(flags_in_stat("84 (x) S 1 2 3 0 -1 -4 0"));
  CHECK_FALSE(flags_in_stat("85 (x) S 1 2 3 0 -1 99999999999999999999999 0"));
  CHECK_FALSE(flags_in_stat("86 (x)  S 1 2 3 0 -1 4 0"));
}

TEST_CASE("the flags of this process's own /proc/self/stat say it is not exiting", "[unit][reaper]") {
  std::ifstream f("/proc/self/stat");
  std::stringstream text;
  text << f.rdbuf();
  const auto flags = flags_in_stat(text.str());
  REQUIRE(flags);
  CHECK((*flags & 0x4) == 0);
}
