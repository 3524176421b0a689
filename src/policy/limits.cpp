#include "policy/limits.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/core.h>

#include "policy/json.hpp"

namespace nsrun {

namespace {

constexpr uint64_t unlimited = std::numeric_limits<uint64_t>::max();

// Whole digits, then an optional fraction of up to `scale_digits` digits:
// "1.25" with 3 gives 1250. No sign, no exponent, nothing after.
std::optional<uint64_t> parse_fixed(std::string_view text, unsigned scale_digits, std::string_view* rest) {
  uint64_t whole = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(begin, end, whole);
  if (ec != std::errc() || p == begin) return std::nullopt;
  uint64_t scale = 1;
  for (unsigned i = 0; i < scale_digits; ++i) scale *= 10;
  if (whole > unlimited / scale) return std::nullopt;
  uint64_t value = whole * scale;
  if (p < end && *p == '.') {
    ++p;
    uint64_t unit = scale / 10;
    const char* digits = p;
    while (p < end && *p >= '0' && *p <= '9') {
      if (unit == 0) {
        if (*p != '0') return std::nullopt;  // finer than we keep: refused, not rounded
      } else {
        value += static_cast<uint64_t>(*p - '0') * unit;
        unit /= 10;
      }
      ++p;
    }
    if (p == digits) return std::nullopt;
  }
  *rest = std::string_view(p, static_cast<std::size_t>(end - p));
  return value;
}

Error bad(std::string_view option, std::string_view text, std::string_view want) {
  return usage_error(option, fmt::format("'{}' is not {}", text, want));
}

// Multiplies with an overflow check.
std::optional<uint64_t> times(uint64_t a, uint64_t b) {
  if (b != 0 && a > unlimited / b) return std::nullopt;
  return a * b;
}

}  // namespace

std::string_view name(LimitsMode m) {
  switch (m) {
    case LimitsMode::strict: return "strict";
    case LimitsMode::best_effort: return "best-effort";
    case LimitsMode::require_cgroup: return "require-cgroup";
  }
  return "?";
}

std::optional<LimitsMode> parse_limits_mode(std::string_view s) {
  for (auto m : {LimitsMode::strict, LimitsMode::best_effort, LimitsMode::require_cgroup})
    if (name(m) == s) return m;
  return std::nullopt;
}

std::string_view name(LimitEnforcement e) {
  switch (e) {
    case LimitEnforcement::cgroup: return "cgroup";
    case LimitEnforcement::rlimit: return "rlimit";
    case LimitEnforcement::timer: return "timer";
    case LimitEnforcement::mount: return "mount";
    case LimitEnforcement::none: return "none";
  }
  return "?";
}

Result<uint64_t> parse_size(std::string_view option, std::string_view text) {
  std::string_view rest;
  // Sizes in bytes with an optional fraction for the scaled forms ("1.5G").
  auto milli = parse_fixed(text, 3, &rest);
  if (!milli) return fail(bad(option, text, "a size (e.g. 512M, 2G, 1048576)"));
  uint64_t scale = 1;
  if (!rest.empty()) {
    const char unit = static_cast<char>(rest.front() | 0x20);
    const std::string_view units = "kmgt";
    const auto at = units.find(unit);
    if (at != std::string_view::npos) {
      for (std::size_t i = 0; i <= at; ++i) scale *= 1024;
      rest.remove_prefix(1);
      if (rest == "iB" || rest == "ib") rest = {};
    }
    if (rest == "B" || rest == "b") rest = {};
  }
  if (!rest.empty()) return fail(bad(option, text, "a size (e.g. 512M, 2G, 1048576)"));
  auto bytes = times(*milli, scale);
  if (!bytes) return fail(usage_error(option, fmt::format("'{}' is too large", text)));
  const uint64_t value = *bytes / 1000;
  if (value == 0) return fail(usage_error(option, fmt::format("'{}' is zero bytes", text)));
  return value;
}

Result<uint64_t> parse_duration_ms(std::string_view option, std::string_view text) {
  std::string_view rest;
  auto milli = parse_fixed(text, 3, &rest);  // thousandths of the unit
  if (!milli) return fail(bad(option, text, "a duration (e.g. 30, 30s, 500ms, 2m)"));
  uint64_t unit_ms = 1000;
  if (rest == "ms") unit_ms = 1;
  else if (rest.empty() || rest == "s") unit_ms = 1000;
  else if (rest == "m") unit_ms = 60'000;
  else if (rest == "h") unit_ms = 3'600'000;
  else return fail(bad(option, text, "a duration (e.g. 30, 30s, 500ms, 2m)"));
  auto ms = times(*milli, unit_ms);
  // A week is far beyond any command a sandbox runs, and far below where
  // the deadline arithmetic could overflow.
  if (!ms || *ms / 1000 > 7ULL * 24 * 3'600'000) return fail(usage_error(option, fmt::format("'{}' is too long", text)));
  const uint64_t value = *ms / 1000;
  if (value == 0 && option != "--kill-after") return fail(usage_error(option, fmt::format("'{}' is zero", text)));
  return value;
}

Result<uint64_t> parse_cores(std::string_view option, std::string_view text) {
  std::string_view rest;
  auto milli = parse_fixed(text, 3, &rest);
  if (!milli || !rest.empty()) return fail(bad(option, text, "a number of cores (e.g. 0.5, 2)"));
  // cpu.max takes a quota of at least 1 ms per period.
  if (*milli == 0) return fail(usage_error(option, fmt::format("'{}' is zero", text)));
  if (*milli > 1'000'000'000) return fail(usage_error(option, fmt::format("'{}' is too large", text)));
  return *milli;
}

Result<uint64_t> parse_count(std::string_view option, std::string_view text) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty())
    return fail(bad(option, text, "a positive whole number"));
  if (n == 0) return fail(usage_error(option, "0 is not a positive whole number"));
  if (n > (1u << 22)) return fail(usage_error(option, fmt::format("{} is above the kernel's pid_max limit", n)));
  return n;
}

const std::vector<std::string_view>& rlimit_names() {
  static const std::vector<std::string_view> names = {"core", "nofile", "fsize", "nproc", "cpu", "stack", "as"};
  return names;
}

int rlimit_resource(std::string_view n) {
  if (n == "core") return RLIMIT_CORE;
  if (n == "nofile") return RLIMIT_NOFILE;
  if (n == "fsize") return RLIMIT_FSIZE;
  if (n == "nproc") return RLIMIT_NPROC;
  if (n == "cpu") return RLIMIT_CPU;
  if (n == "stack") return RLIMIT_STACK;
  if (n == "as") return RLIMIT_AS;
  return -1;
}

namespace {

// One rlimit value in its resource's own unit: bytes for the sizes (with
// suffixes), seconds for cpu, a count for nofile and nproc.
Result<uint64_t> rlimit_value(std::string_view option, std::string_view resource, std::string_view text) {
  if (text == "unlimited" || text == "infinity") return unlimited;
  if (resource == "core" || resource == "fsize" || resource == "stack" || resource == "as") {
    if (text == "0") return uint64_t{0};
    return parse_size(option, text);
  }
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty())
    return fail(bad(option, text, fmt::format("a value for {} (a whole number or unlimited)", resource)));
  return n;
}

std::string rlimit_text(uint64_t v) { return v == unlimited ? "unlimited" : std::to_string(v); }

}  // namespace

Result<RlimitSetting> parse_rlimit(std::string_view option, std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return fail(bad(option, text, "NAME=SOFT[:HARD] (e.g. nofile=256, core=0, as=1G:2G)"));
  RlimitSetting r;
  r.name = std::string(text.substr(0, eq));
  if (rlimit_resource(r.name) < 0)
    return fail(usage_error(option, fmt::format("unknown limit '{}' (expected core, nofile, fsize, nproc, cpu, stack "
                                                "or as)",
                                                r.name)));
  std::string_view values = text.substr(eq + 1);
  const auto colon = values.find(':');
  auto soft = rlimit_value(option, r.name, values.substr(0, colon));
  if (!soft) return fail(soft.error());
  r.soft = r.hard = *soft;
  if (colon != std::string_view::npos) {
    auto hard = rlimit_value(option, r.name, values.substr(colon + 1));
    if (!hard) return fail(hard.error());
    r.hard = *hard;
  }
  if (r.soft > r.hard)
    return fail(usage_error(option, fmt::format("{}: the soft limit is above the hard one", text)));
  return r;
}

std::vector<RlimitSetting> effective_rlimits(const Limits& limits) {
  std::vector<RlimitSetting> out;
  for (auto n : rlimit_names()) {
    std::optional<RlimitSetting> chosen;
    if (n == "core" && limits.no_core_dumps) chosen = RlimitSetting{"core", 0, 0};
    for (const auto& r : limits.rlimits)
      if (r.name == n) chosen = r;
    if (chosen) out.push_back(*chosen);
  }
  return out;
}

Result<LimitsPlan> plan_limits(const Limits& l, const LimitFacts& f) {
  LimitsPlan plan;
  plan.rlimits = effective_rlimits(l);
  plan.timeout_ms = l.timeout_ms;
  plan.kill_after_ms = l.kill_after_ms;
  if (l.mode == LimitsMode::require_cgroup && !f.cgroup)
    return fail(usage_error("--limits require-cgroup",
                            fmt::format("no cgroup can be made for the sandbox here: {}",
                                        f.cgroup_why.empty() ? "none is delegated to this user" : f.cgroup_why)));
  std::vector<std::string> unenforced;
  auto decide = [&](std::string limit, LimitEnforcement how, std::string detail) {
    if (how == LimitEnforcement::none) unenforced.push_back(fmt::format("{} ({})", limit, detail));
    plan.decisions.push_back(LimitDecision{std::move(limit), how, std::move(detail)});
  };
  auto add_rlimit = [&](std::string_view n, uint64_t v) {
    std::erase_if(plan.rlimits, [&](const RlimitSetting& r) { return r.name == n; });
    plan.rlimits.push_back(RlimitSetting{std::string(n), v, v});
  };
  const std::string no_cgroup = f.cgroup_why.empty() ? "no cgroup for the sandbox" : f.cgroup_why;

  if (l.memory) {
    if (f.cgroup && f.cgroup_memory) {
      plan.use_cgroup = true;
      plan.cgroup_memory = l.memory;
      decide("memory", LimitEnforcement::cgroup,
             f.cgroup_version == 1 ? "cgroup v1 memory.limit_in_bytes, the whole sandbox; the OOM killer at the limit"
                                   : "cgroup v2 memory.max, the whole sandbox; the OOM killer at the limit");
    } else if (l.mode == LimitsMode::best_effort) {
      // An address-space limit per process is not the memory of the whole
      // sandbox: N processes may use N times it, and one that reserves
      // address space it never touches (node, java, a Go runtime) fails at
      // start. Used only when best effort was asked for, and said so.
      add_rlimit("as", *l.memory);
      decide("memory", LimitEnforcement::rlimit,
             fmt::format("RLIMIT_AS per process instead (best-effort: address space, not the sandbox's memory; a "
                         "runtime that reserves more fails to start): {}",
                         no_cgroup));
    } else {
      decide("memory", LimitEnforcement::none,
             fmt::format("only a cgroup limits the sandbox's memory, and {}; RLIMIT_AS (per process, address space) "
                         "is not that limit",
                         no_cgroup));
    }
  }
  if (l.pids) {
    if (f.cgroup && f.cgroup_pids) {
      plan.use_cgroup = true;
      plan.cgroup_pids = *l.pids + 1;  // and nsrun's PID 1
      decide("pids", LimitEnforcement::cgroup,
             fmt::format("cgroup v{} pids.max, the whole sandbox (nsrun's PID 1 not counted)", f.cgroup_version));
    } else if (f.namespaces_rung && f.new_user_ns && !f.kernel_root) {
      // Since Linux 5.14 RLIMIT_NPROC counts the processes of a uid in
      // each user namespace (ucounts): in the sandbox's own namespace that
      // is the sandbox's process count, PID 1 included.
      add_rlimit("nproc", *l.pids + 1);
      decide("pids", LimitEnforcement::rlimit,
             "RLIMIT_NPROC, counted in the sandbox's own user namespace (nsrun's PID 1 not counted)");
    } else {
      decide("pids", LimitEnforcement::none,
             f.kernel_root ? "RLIMIT_NPROC does not bind processes of the host's uid 0, and " + no_cgroup
             : !f.namespaces_rung ? "without a user namespace RLIMIT_NPROC counts every process of the caller's uid, "
                                    "and " + no_cgroup
                                  : "no user namespace of its own, and " + no_cgroup);
    }
  }
  if (l.cpu_millis) {
    if (f.cgroup && f.cgroup_cpu) {
      plan.use_cgroup = true;
      plan.cgroup_cpu_millis = l.cpu_millis;
      decide("cpu", LimitEnforcement::cgroup,
             f.cgroup_version == 1 ? "cgroup v1 cpu.cfs_quota_us, the whole sandbox"
                                   : "cgroup v2 cpu.max bandwidth, the whole sandbox");
    } else {
      decide("cpu", LimitEnforcement::none, "only a cgroup can share out CPU bandwidth, and " + no_cgroup);
    }
  }
  if (l.timeout_ms) {
    std::string detail =
        fmt::format("nsrun's own timer: SIGTERM to the whole sandbox, SIGKILL {} ms later", l.kill_after_ms);
    if (!f.ends_all_at_once) {
      // The timer still runs, but what it ends is only what a kill loop
      // catches: a strict run refuses, a best-effort one says so.
      const std::string why = "the Landlock rung without a signal scope (kernel Landlock ABI below 6) ends the "
                              "sandbox one process at a time, which a fork bomb outruns";
      unenforced.push_back(fmt::format("timeout ({})", why));
      detail += "; " + why;
    }
    decide("timeout", LimitEnforcement::timer, std::move(detail));
  }
  if (l.tmpfs_size) {
    plan.tmpfs_size = l.tmpfs_size;
    if (f.namespaces_rung)
      decide("tmpfs", LimitEnforcement::mount, "size= of every tmpfs nsrun mounts");
    else
      decide("tmpfs", LimitEnforcement::none, "the Landlock rung's private /tmp is a host directory, not a tmpfs");
  }
  for (const auto& r : plan.rlimits)
    decide(r.name, LimitEnforcement::rlimit,
           fmt::format("{}:{} on the command", rlimit_text(r.soft), rlimit_text(r.hard)));

  if (!unenforced.empty() && l.mode != LimitsMode::best_effort) {
    std::string list;
    for (const auto& u : unenforced) list += (list.empty() ? "" : "; ") + u;
    return fail(usage_error("limits", fmt::format("cannot be enforced here: {}; --limits best-effort runs without "
                                                  "them",
                                                  list)));
  }
  return plan;
}

std::string describe(const LimitsPlan& plan) {
  std::string out;
  for (const auto& d : plan.decisions) out += fmt::format("  {:<8} {:<7} {}\n", d.limit, name(d.how), d.detail);
  return out;
}

// ---- JSON ----

namespace {

std::string duration_text(uint64_t ms) { return fmt::format("{}ms", ms); }

Error field(std::string_view where, std::string_view key, const Error& e) {
  Error out = usage_error(fmt::format("policy field '{}.{}'", where, key), e.detail.empty() ? e.message() : e.detail);
  return out;
}

// A size or count field: an integer, or a string in the option's syntax.
template <class Parse>
Result<uint64_t> number_or_text(const json::Value& v, std::string_view where, std::string_view key, Parse parse) {
  if (v.is_int()) {
    if (v.as_int() <= 0) return fail(usage_error(fmt::format("policy field '{}.{}'", where, key), "must be positive"));
    return static_cast<uint64_t>(v.as_int());
  }
  if (!v.is_string())
    return fail(usage_error(fmt::format("policy field '{}.{}'", where, key),
                            fmt::format("expected integer or string, got {}", v.type_name())));
  auto r = parse(v.as_string());
  if (!r) return fail(field(where, key, r.error()));
  return *r;
}

}  // namespace

json::Value to_json(const Limits& l) {
  using json::Value;
  Value out = Value::object();
  auto opt = [](const std::optional<uint64_t>& v) { return v ? Value(*v) : Value(); };
  out.set("memory", opt(l.memory));
  out.set("pids", opt(l.pids));
  out.set("cpu", l.cpu_millis ? Value(fmt::format("{}.{:03}", *l.cpu_millis / 1000, *l.cpu_millis % 1000)) : Value());
  out.set("timeout", l.timeout_ms ? Value(duration_text(*l.timeout_ms)) : Value());
  out.set("kill_after", duration_text(l.kill_after_ms));
  Value rl = Value::array();
  for (const auto& r : l.rlimits) rl.push_back(fmt::format("{}={}:{}", r.name, rlimit_text(r.soft), rlimit_text(r.hard)));
  out.set("rlimits", std::move(rl));
  out.set("tmpfs_size", opt(l.tmpfs_size));
  out.set("mode", name(l.mode));
  out.set("no_core_dumps", l.no_core_dumps);
  return out;
}

Result<Limits> limits_from_json(const json::Value& v, Limits l, const std::string& where) {
  if (!v.is_object()) return fail(usage_error(fmt::format("policy field '{}'", where), "expected object"));
  for (const auto& [key, value] : v.as_object()) {
    const std::string k = key;
    if (value.is_null() && k != "kill_after" && k != "rlimits" && k != "mode" && k != "no_core_dumps") {
      if (k == "memory") l.memory.reset();
      else if (k == "pids") l.pids.reset();
      else if (k == "cpu") l.cpu_millis.reset();
      else if (k == "timeout") l.timeout_ms.reset();
      else if (k == "tmpfs_size") l.tmpfs_size.reset();
      else return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "unknown field"));
      continue;
    }
    Result<uint64_t> n = 0;
    if (k == "memory" || k == "tmpfs_size") {
      n = number_or_text(value, where, k, [&](std::string_view s) { return parse_size("--limit-memory", s); });
      if (n) (k == "memory" ? l.memory : l.tmpfs_size) = *n;
    } else if (k == "pids") {
      n = number_or_text(value, where, k, [&](std::string_view s) { return parse_count("--limit-pids", s); });
      if (n) l.pids = *n;
    } else if (k == "cpu") {
      // An integer is whole cores; a string may have a fraction ("0.5").
      n = number_or_text(value, where, k, [&](std::string_view s) { return parse_cores("--limit-cpu", s); });
      if (n) l.cpu_millis = value.is_int() ? std::min<uint64_t>(*n, 1'000'000) * 1000 : *n;
    } else if (k == "timeout" || k == "kill_after") {
      if (!value.is_string())
        return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "expected a duration string (\"30s\")"));
      n = parse_duration_ms(k == "timeout" ? "--timeout" : "--kill-after", value.as_string());
      if (!n) return fail(field(where, k, n.error()));
      if (k == "timeout") l.timeout_ms = *n;
      else l.kill_after_ms = *n;
    } else if (k == "rlimits") {
      if (!value.is_array())
        return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "expected array of strings"));
      l.rlimits.clear();
      for (const auto& item : value.as_array()) {
        if (!item.is_string())
          return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "expected array of strings"));
        auto r = parse_rlimit("--rlimit", item.as_string());
        if (!r) return fail(field(where, k, r.error()));
        l.rlimits.push_back(std::move(*r));
      }
    } else if (k == "no_core_dumps") {
      if (!value.is_bool())
        return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "expected true or false"));
      l.no_core_dumps = value.as_bool();
    } else if (k == "mode") {
      auto m = value.is_string() ? parse_limits_mode(value.as_string()) : std::nullopt;
      if (!m)
        return fail(usage_error(fmt::format("policy field '{}.{}'", where, k),
                                "expected \"strict\", \"best-effort\" or \"require-cgroup\""));
      l.mode = *m;
    } else {
      return fail(usage_error(fmt::format("policy field '{}.{}'", where, k), "unknown field"));
    }
    if (!n) return fail(n.error());
  }
  return l;
}

}  // namespace nsrun
