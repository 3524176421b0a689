// The bench's fake launcher for the unit tests (bench_test.cpp,
// floor_sandbox_test.cpp): no process is spawned, each launch takes a
// scripted time on a fake clock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench.hpp"

namespace nsrun::bench::testing {

// Each launch of a row takes a scripted duration on the fake clock; the
// launcher advances the clock by it when the launch is waited for.
class FakeLauncher final : public Launcher {
 public:
  explicit FakeLauncher(uint64_t& clock) : clock_(clock) {}

  std::map<std::string, std::vector<uint64_t>> durations;  // cycled per row
  std::map<std::string, std::string> refuse;               // row -> reason
  std::vector<std::string> order;                          // every spawn, in order
  std::string report;                                      // returned to nsrun rows

  std::optional<std::string> check(const Row& row) override {
    if (auto it = refuse.find(row.name); it != refuse.end()) return it->second;
    return std::nullopt;
  }
  pid_t spawn(const Row& row) override {
    order.push_back(row.name);
    auto& d = durations.at(row.name);
    const uint64_t took = d[count_[row.name]++ % d.size()];
    pending_.push_back({next_pid_, took, row.nsrun});
    return next_pid_++;
  }
  std::pair<pid_t, Launch> wait_any() override {
    if (pending_.empty()) return {-1, {}};
    auto p = pending_.front();
    pending_.erase(pending_.begin());
    clock_ += p.took;
    Launch l;
    l.status = 0;  // exited 0
    l.cpu_ns = p.took / 2;
    l.maxrss_kib = 1000 + static_cast<long>(p.took / 1000);
    if (p.nsrun) l.report = report;
    return {p.pid, l};
  }

 private:
  struct Pending {
    pid_t pid;
    uint64_t took;
    bool nsrun;
  };
  uint64_t& clock_;
  std::map<std::string, std::size_t> count_;
  std::vector<Pending> pending_;
  pid_t next_pid_ = 100;
};

}  // namespace nsrun::bench::testing
