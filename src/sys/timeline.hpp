// Launch phase timings: each step of the pipeline marks its end on one
// monotonic clock, in whichever process it ran; the marks travel to the
// parent with the channel's last message. `--report` and `nsrun bench`
// print them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsrun {

struct PhaseTime {
  std::string name;
  uint64_t micros = 0;
  bool operator==(const PhaseTime&) const = default;
};

class Timeline {
 public:
  static uint64_t now_ns();

  void start() { start_ns_ = last_ns_ = now_ns(); }
  // Records the time since the previous mark as phase `name`.
  void mark(std::string_view name);

  // Wire form: "name=ns,name=ns" (nanoseconds, absolute marks).
  std::string encode() const;
  // Merges marks from another process (same clock).
  void merge(std::string_view encoded);

  // Durations per phase, in order, in microseconds.
  std::vector<PhaseTime> phases() const;
  uint64_t total_micros() const;

 private:
  struct Mark {
    char name[16];  // fixed size: marking allocates nothing
    uint64_t ns;
  };
  void add(std::string_view name, uint64_t ns);
  static constexpr std::size_t capacity = 24;
  std::array<Mark, capacity> marks_{};
  std::size_t count_ = 0;
  uint64_t start_ns_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace nsrun
