// Resource limits: what the Policy asks for, how each value is
// written, and which mechanism can keep each limit on a given host. All of
// it is pure: the launch gathers the host facts, plan_limits() decides, and
// the report states what was decided (never claimed when not real).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/error.hpp"

namespace nsrun::json {
struct Value;  // policy/json.hpp, for the callers that build or read JSON
}  // namespace nsrun::json

namespace nsrun {

// What happens when a limit asked for has no mechanism on this host.
enum class LimitsMode {
  strict,          // default: refuse to run (exit 125), naming the limit
  best_effort,     // run anyway; the report says `none` for that limit
  require_cgroup,  // refuse unless a cgroup holds the whole sandbox
};

// One rlimit as asked: `--rlimit nofile=64:128`. RLIM_INFINITY is written
// as "unlimited".
struct RlimitSetting {
  std::string name;  // core, nofile, fsize, nproc, cpu, stack, as
  uint64_t soft = 0;
  uint64_t hard = 0;

  bool operator==(const RlimitSetting&) const = default;
};

struct Limits {
  std::optional<uint64_t> memory;        // bytes, the whole sandbox
  std::optional<uint64_t> pids;          // processes and threads of the command at once
  std::optional<uint64_t> cpu_millis;    // CPU time per wall second, in thousandths of a core
  std::optional<uint64_t> timeout_ms;    // wall clock, from the exec of the command
  uint64_t kill_after_ms = 2000;         // SIGTERM .. SIGKILL after a timeout
  std::vector<RlimitSetting> rlimits;    // in order given; a later one of a name wins
  std::optional<uint64_t> tmpfs_size;    // bytes: size= of every tmpfs nsrun mounts
  LimitsMode mode = LimitsMode::strict;
  // core=0 unless --rlimit core=... says otherwise; off in the bwrap
  // dialect, which sets no rlimit (bwrap's semantics, not ours).
  bool no_core_dumps = true;

  bool operator==(const Limits&) const = default;
};

std::string_view name(LimitsMode);
std::optional<LimitsMode> parse_limits_mode(std::string_view);

// "512M", "1G", "64k", "1048576" (bytes; K, M, G, T are powers of 1024, an
// optional trailing "B" or "iB"). Zero is refused: a limit of nothing is a
// mistake, not a wish.
Result<uint64_t> parse_size(std::string_view option, std::string_view text);
// "30", "30s", "500ms", "2m", "1h", "1.5s" (a bare number is seconds).
Result<uint64_t> parse_duration_ms(std::string_view option, std::string_view text);
// "0.5", "2", "1.25": cores, to thousandths.
Result<uint64_t> parse_cores(std::string_view option, std::string_view text);
// A positive integer.
Result<uint64_t> parse_count(std::string_view option, std::string_view text);
// "nofile=64", "nofile=64:128", "core=0", "as=1G", "cpu=unlimited".
Result<RlimitSetting> parse_rlimit(std::string_view option, std::string_view text);

// The rlimit names, and the RLIMIT_* resource of one (-1: unknown).
const std::vector<std::string_view>& rlimit_names();
int rlimit_resource(std::string_view name);

// The rlimits the command gets: core=0 unless given, then the given ones
// (the last of each name), in rlimit_names() order.
std::vector<RlimitSetting> effective_rlimits(const Limits& limits);

// ---- enforcement ----

enum class LimitEnforcement { cgroup, rlimit, timer, mount, none };
std::string_view name(LimitEnforcement);

// What the host offers, gathered by the launch before the rung runs.
struct LimitFacts {
  bool namespaces_rung = true;   // false: the Landlock rung
  bool new_user_ns = true;       // the sandbox has a user namespace of its own
  bool kernel_root = false;      // the sandbox's processes are uid 0 on the host
  bool cgroup = false;           // a cgroup for the sandbox can be made (v2 delegated, or v1 as root)
  int cgroup_version = 2;
  bool cgroup_memory = false;    // ... with these controllers
  bool cgroup_pids = false;
  bool cgroup_cpu = false;
  std::string cgroup_why;        // why not, when !cgroup
  // The rung can end every process of the sandbox at once, however fast it
  // forks: a PID namespace's teardown, or the Landlock rung's supervisor in
  // a signal scope (Landlock ABI 6). Without, the timeout's end of the
  // sandbox is one process at a time, which a fork bomb outruns.
  bool ends_all_at_once = true;
};

struct LimitDecision {
  std::string limit;             // "memory", "pids", "cpu", "timeout", "tmpfs", or an rlimit name
  LimitEnforcement how = LimitEnforcement::none;
  std::string detail;            // "RLIMIT_AS, per process", why none, ...
};

struct LimitsPlan {
  std::vector<LimitDecision> decisions;  // one per limit asked for (and core)
  std::vector<RlimitSetting> rlimits;    // set on the command before exec
  bool use_cgroup = false;
  std::optional<uint64_t> cgroup_memory;  // memory.max
  std::optional<uint64_t> cgroup_pids;    // pids.max (the command's tasks plus PID 1)
  std::optional<uint64_t> cgroup_cpu_millis;
  std::optional<uint64_t> timeout_ms;
  uint64_t kill_after_ms = 2000;
  std::optional<uint64_t> tmpfs_size;

  bool any_limit() const { return use_cgroup || timeout_ms.has_value(); }
};

// Pure. Each limit gets the strongest mechanism the facts offer: a cgroup,
// else an rlimit where one keeps the same promise, else none; `none` is an
// error (usage, exit 125) unless the mode is best-effort, and without a
// cgroup require-cgroup is one whatever was asked.
Result<LimitsPlan> plan_limits(const Limits& limits, const LimitFacts& facts);

// ---- JSON (Policy "limits") ----

json::Value to_json(const Limits& limits);
Result<Limits> limits_from_json(const json::Value& v, Limits base, const std::string& where);

// One line per decision, for `nsrun explain`.
std::string describe(const LimitsPlan& plan);

}  // namespace nsrun
