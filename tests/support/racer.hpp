// A writer racing a launch (issue 10 item 8): a thread swaps two names in
// one directory (renameat2 RENAME_EXCHANGE, so each name is always one of
// the two objects) flat out until stopped. No sleeps: each launch is
// whatever it hits. Used by race_test.cpp and binds_race_test.cpp.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

namespace nsrun_test {

// Swaps `a` and `b` in `dir` until destroyed; counts the swaps.
class Racer {
 public:
  Racer(const std::string& dir, std::string a, std::string b) : a_(std::move(a)), b_(std::move(b)) {
    dir_ = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir_ >= 0);
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_relaxed))
        if (::renameat2(dir_, a_.c_str(), dir_, b_.c_str(), RENAME_EXCHANGE) == 0) swaps_.fetch_add(1);
    });
  }
  ~Racer() {
    stop();
    ::close(dir_);
  }
  Racer(const Racer&) = delete;
  Racer& operator=(const Racer&) = delete;
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long swaps() const { return swaps_.load(); }

 private:
  int dir_ = -1;
  std::string a_, b_;
  std::atomic<bool> stop_{false};
  std::atomic<long> swaps_{0};
  std::thread thread_;
};

}  // namespace nsrun_test
