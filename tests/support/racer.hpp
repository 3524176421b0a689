// A writer racing a launch: a thread swaps two names in
// one directory (renameat2 RENAME_EXCHANGE, so each name is always one of
// the two objects) flat out until stopped. No sleeps: each launch is
// whatever it hits. With the checks both race tests make: objects watched
// through fds (their names keep moving), refusals in one line. Used by
// race_test.cpp and binds_race_test.cpp.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "harness.hpp"
#include "sys/fd.hpp"

namespace nsrun_test {

// Whether `name` exists in the directory `dirfd` names (whatever it is
// called now).
inline bool has(int dirfd, const char* name) {
  struct stat st{};
  return ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

inline nsrun::Fd open_dir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  return nsrun::Fd{fd};
}

// A refusal is exit 125 (bwrap's dialect: 1) and one line saying why: a
// symlink met, or an object renamed or replaced between two lookups.
inline void check_refusal(const RunResult& r, int code) {
  INFO(r.err);
  CHECK(r.exit_code == code);
  CHECK(count_lines(r.err) == 1);
  const bool why = r.err.find("symlink") != std::string::npos || r.err.find("renamed or replaced") != std::string::npos;
  CHECK(why);
}

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
