// The wait loop's look at a command that has begun to exit: fields of
// /proc/PID/stat, read without libc.
#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <semaphore>
#include <sstream>
#include <thread>

#include "ns/reaper.hpp"

using nsrun::number_in_stat;

namespace {
constexpr int flags = 9;
constexpr int threads = 20;
constexpr unsigned long pf_exiting = 0x4;

std::string stat_of(const char* path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("numbers of a /proc/<pid>/stat line", "[unit][reaper]") {
  // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
  // majflt cmajflt utime stime cutime cstime priority nice num_threads
  const std::string sleeping = "4242 (sleep) S 17 4242 17 0 -1 4194560 95 0 0 0 0 0 0 0 20 0 1 0 5\n";
  CHECK(number_in_stat(sleeping, 4) == 17UL);
  CHECK(number_in_stat(sleeping, flags) == 4194560UL);
  CHECK(number_in_stat(sleeping, threads) == 1UL);
  // PF_EXITING (0x4) set, as while the kernel frees an exiting process's memory.
  CHECK(number_in_stat("77 (sh) D 1 77 77 0 -1 4194564 0 0", flags) == 4194564UL);
  // A command name may hold spaces and parentheses: the fields count from
  // the last ')'.
  CHECK(number_in_stat("78 (a) R 99 (b) Z 1 2 3 0 -1 4 5", flags) == 4UL);
  CHECK(number_in_stat("79 ( ) ) S 1 2 3 4 5 6 7", flags) == 6UL);

  // Field 3 (the state) is a letter, fields 1 and 2 are before the name.
  CHECK_FALSE(number_in_stat(sleeping, 3));
  CHECK_FALSE(number_in_stat(sleeping, 1));
  CHECK_FALSE(number_in_stat(sleeping, 60));
  CHECK_FALSE(number_in_stat("", flags));
  CHECK_FALSE(number_in_stat("garbage", flags));
  CHECK_FALSE(number_in_stat("80 (cut", flags));
  CHECK_FALSE(number_in_stat("81 (short) S 1 2 3 0 -1", flags));
  CHECK_FALSE(number_in_stat("82 (x) S 1 2 3 0 -1 ", flags));
  CHECK_FALSE(number_in_stat("83 (x) S 1 2 3 0 -1 12a 0", flags));
  // tpgid is -1 when there is no terminal: skipped, never read as a number.
  CHECK(number_in_stat("84 (x) S 1 2 3 0 -1 4 0", flags) == 4UL);
  CHECK_FALSE(number_in_stat("84 (x) S 1 2 3 0 -1 4 0", 8));
  CHECK_FALSE(number_in_stat("85 (x) S 1 2 3 0 -1 99999999999999999999999 0", flags));
  CHECK_FALSE(number_in_stat("86 (x)  S 1 2 3 0 -1 4 0", flags));
}

TEST_CASE("a running process's /proc stat says it is not exiting, and counts its threads", "[unit][reaper]") {
  const std::string alone = stat_of("/proc/self/stat");
  REQUIRE(number_in_stat(alone, flags));
  CHECK((*number_in_stat(alone, flags) & pf_exiting) == 0);
  const auto before = number_in_stat(alone, threads);
  REQUIRE(before);
  std::binary_semaphore done(0);
  std::jthread other([&] { done.acquire(); });
  const auto during = number_in_stat(stat_of("/proc/self/stat"), threads);
  done.release();
  REQUIRE(during);
  CHECK(*during == *before + 1);
}
