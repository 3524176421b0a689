// What the sandbox refused during a run, gathered once the command has
// ended: from the verdict's own observations (seccomp denials, the
// --watch-writes attempts, how the command ended), the cgroup's counters
// and the egress proxy's decisions. What the kernel answers the command
// directly (EROFS on a read-only bind, ENOENT behind a hidden credential,
// no route with --network none) nsrun does not see: that is listed as
// unobserved, never guessed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launch/watch.hpp"
#include "net/egress.hpp"
#include "policy/policy.hpp"

namespace nsrun {

struct RefusalFacts {
  Mode mode = Mode::workspace_write;
  bool landlock_rung = false;
  bool watch_writes = false;
  bool seccomp_filter = true;  // a filter with refusals was loaded
  Network network = Network::share;
  std::optional<uint64_t> timeout_ms;
  uint64_t kill_after_ms = 2000;
  std::optional<uint64_t> memory;
  std::optional<uint64_t> pids;
  std::vector<RlimitSetting> rlimits;
  std::size_t hidden_credentials = 0;
  std::size_t hidden_sockets = 0;
  const std::vector<egress::Decision>* egress = nullptr;  // --network proxy's decisions
};

RefusalFacts refusal_facts(const Policy& policy, bool landlock_rung);

// Fills v.refusals (through add_refusal()) and v.unobserved. Pure.
void collect_refusals(Verdict& v, const RefusalFacts& facts);

// "2s", "500ms", "1m30s".
std::string duration_words(uint64_t ms);

}  // namespace nsrun
