#include "sys/timeline.hpp"

#include <time.h>

#include <algorithm>
#include <charconv>

#include <fmt/core.h>

namespace nsrun {

uint64_t Timeline::now_ns() {
  struct timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Timeline::add(std::string_view name, uint64_t ns) {
  if (count_ == capacity) return;
  Mark& m = marks_[count_++];
  const std::size_t n = std::min(name.size(), sizeof m.name - 1);
  name.copy(m.name, n);
  m.name[n] = '\0';
  m.ns = ns;
  last_ns_ = ns;
}

void Timeline::mark(std::string_view name) { add(name, now_ns()); }

std::string Timeline::encode() const {
  std::string out;
  for (std::size_t i = 0; i < count_; ++i) {
    if (i != 0) out += ',';
    out += fmt::format("{}={}", marks_[i].name, marks_[i].ns);
  }
  return out;
}

void Timeline::merge(std::string_view encoded) {
  // The other process forked from this one, so its marks start with ours:
  // keep only those later than our last.
  while (!encoded.empty() && count_ < capacity) {
    const std::size_t comma = encoded.find(',');
    std::string_view item = encoded.substr(0, comma);
    encoded = comma == std::string_view::npos ? std::string_view() : encoded.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    uint64_t ns = 0;
    std::from_chars(item.data() + eq + 1, item.data() + item.size(), ns);
    if (ns <= last_ns_) continue;
    add(item.substr(0, eq), ns);
  }
}

std::vector<PhaseTime> Timeline::phases() const {
  std::vector<PhaseTime> out;
  uint64_t prev = start_ns_;
  for (std::size_t i = 0; i < count_; ++i) {
    out.push_back({marks_[i].name, (marks_[i].ns - prev) / 1000});
    prev = marks_[i].ns;
  }
  return out;
}

uint64_t Timeline::total_micros() const { return count_ == 0 ? 0 : (marks_[count_ - 1].ns - start_ns_) / 1000; }

}  // namespace nsrun
