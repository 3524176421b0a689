#include "ns/cgroup.hpp"

#include <charconv>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "probe/cgroup.hpp"
#include "sys/io.hpp"

namespace nsrun {

std::string cgroup_controllers_line(const LimitsPlan& plan) {
  std::string out;
  auto add = [&](std::string_view c) { out += fmt::format("{}+{}", out.empty() ? "" : " ", c); };
  if (plan.cgroup_memory) add("memory");
  if (plan.cgroup_pids) add("pids");
  if (plan.cgroup_cpu_millis) add("cpu");
  return out;
}

std::vector<std::pair<std::string, std::string>> cgroup_writes(const LimitsPlan& plan) {
  std::vector<std::pair<std::string, std::string>> out;
  if (plan.cgroup_memory) {
    out.emplace_back("memory.max", std::to_string(*plan.cgroup_memory));
    // Swap would let the sandbox go past its memory limit.
    out.emplace_back("memory.swap.max", "0");
  }
  if (plan.cgroup_pids) out.emplace_back("pids.max", std::to_string(*plan.cgroup_pids));
  if (plan.cgroup_cpu_millis) {
    // A 100 ms period; the quota is the share of it, per core asked.
    constexpr uint64_t period = 100'000;
    out.emplace_back("cpu.max", fmt::format("{} {}", *plan.cgroup_cpu_millis * period / 1000, period));
  }
  return out;
}

// The decimal number `text` starts with, 0 when there is none or it does
// not fit: std::from_chars, because std::stoull throws (and its throw
// helpers clash with the static build's own, src/cli/static_runtime.cpp).
uint64_t leading_number(std::string_view text) {
  uint64_t v = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), v).ec != std::errc{}) return 0;
  return v;
}

bool cgroup_enables(std::string_view subtree_control, std::string_view line) {
  auto has = [&](std::string_view c) {
    std::string_view rest = subtree_control;
    while (!rest.empty()) {
      const auto sp = rest.find_first_of(" \n");
      if (rest.substr(0, sp) == c) return true;
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
    return false;
  };
  while (!line.empty()) {
    const auto sp = line.find(' ');
    if (std::string_view item = line.substr(0, sp); item.starts_with('+') && !has(item.substr(1))) return false;
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return true;
}

uint64_t cgroup_key(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ' ')
      return leading_number(line.substr(key.size() + 1));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}

namespace {

Result<void> write_control(int dir, const std::string& name, std::string_view value, const std::string& where,
                           bool fake) {
  Fd fd(::openat(dir, name.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (fake ? O_CREAT | O_TRUNC : 0), 0644));
  if (!fd) return fail(sys_error("cgroup", fmt::format("{}/{}", where, name)));
  return write_all(fd.get(), value, "cgroup", fmt::format("{}/{}", where, name));
}

std::string read_control(int dir, const char* name) {
  Fd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return {};
  auto text = read_all(fd.get(), "cgroup", name, 1 << 16);
  return text ? *text : std::string();
}

}  // namespace

Result<SandboxCgroup> SandboxCgroup::make(const std::string& base, pid_t self, const LimitsPlan& plan, bool fake) {
  SandboxCgroup cg;
  cg.fake_ = fake;
  cg.base_ = Fd(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cg.base_) return fail(sys_error("cgroup", base));
  // nsrun into a leaf of its own when it is in the delegated cgroup, so
  // that cgroup holds no process of ours when it hands out controllers.
  // Shared by concurrent launches; nsrun cannot remove the leaf it is in,
  // so it stays, empty once nsrun has exited (docs/limits.md).
  if (cgroup_lists(read_control(cg.base_.get(), "cgroup.procs"), self)) {
    constexpr const char* leaf = "nsrun-supervisor";
    if (::mkdirat(cg.base_.get(), leaf, 0755) != 0 && errno != EEXIST)
      return fail(sys_error("cgroup", fmt::format("{}/{}", base, leaf)));
    Fd leaf_fd(::openat(cg.base_.get(), leaf, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!leaf_fd) return fail(sys_error("cgroup", fmt::format("{}/{}", base, leaf)));
    if (auto r = write_control(leaf_fd.get(), "cgroup.procs", std::to_string(self), base + "/" + leaf, fake); !r)
      return fail(r.error());
  }
  // Once enabled (the first launch), the controllers stay: a read, no write
  // under the cgroup core's lock for every launch.
  if (const std::string line = cgroup_controllers_line(plan);
      !line.empty() && !cgroup_enables(read_control(cg.base_.get(), "cgroup.subtree_control"), line))
    if (auto r = write_control(cg.base_.get(), "cgroup.subtree_control", line, base, fake); !r) return fail(r.error());
  cg.name_ = fmt::format("nsrun-{}", self);
  cg.path_ = fmt::format("{}/{}", base, cg.name_);
  if (::mkdirat(cg.base_.get(), cg.name_.c_str(), 0755) != 0) return fail(sys_error("cgroup", cg.path_));
  // From here on a failure removes what was made.
  cg.dir_ = Fd(::openat(cg.base_.get(), cg.name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!cg.dir_) {
    Error e = sys_error("cgroup", cg.path_);
    (void)::unlinkat(cg.base_.get(), cg.name_.c_str(), AT_REMOVEDIR);
    return fail(e);
  }
  for (const auto& [file, value] : cgroup_writes(plan)) {
    // memory.swap.max is missing without swap accounting: nothing to bound.
    if (file == "memory.swap.max" && !fake && ::faccessat(cg.dir_.get(), file.c_str(), F_OK, 0) != 0) continue;
    if (auto r = write_control(cg.dir_.get(), file, value, cg.path_, fake); !r) {
      (void)cg.remove();
      return fail(r.error());
    }
  }
  return cg;
}

CgroupEvents SandboxCgroup::events() const {
  CgroupEvents e;
  if (!dir_) return e;
  e.oom_kills = cgroup_key(read_control(dir_.get(), "memory.events"), "oom_kill");
  e.pids_max_hits = cgroup_key(read_control(dir_.get(), "pids.events"), "max");
  const std::string peak = read_control(dir_.get(), "memory.peak");
  if (!peak.empty() && peak[0] >= '0' && peak[0] <= '9') e.peak_bytes = leading_number(peak);
  return e;
}

Result<void> SandboxCgroup::remove() {
  if (!dir_) return {};
  if (auto r = write_control(dir_.get(), "cgroup.kill", "1", path_, fake_); !r && !fake_) return r;
  if (fake_) {
    // A fake tree holds the files we wrote; a real cgroup's vanish with it.
    for (const char* f : {"memory.max", "memory.swap.max", "pids.max", "cpu.max", "cgroup.kill"})
      (void)::unlinkat(dir_.get(), f, 0);
  }
  // Killed processes leave the cgroup as they exit: wait for "populated 0"
  // (cgroup.events signals POLLPRI on change), bounded.
  for (int i = 0; i < 50 && !fake_; ++i) {
    if (cgroup_key(read_control(dir_.get(), "cgroup.events"), "populated") == 0) break;
    Fd ev(::openat(dir_.get(), "cgroup.events", O_RDONLY | O_CLOEXEC));
    pollfd p{ev.get(), POLLPRI, 0};
    (void)::poll(&p, 1, 100);
  }
  dir_.reset();
  if (::unlinkat(base_.get(), name_.c_str(), AT_REMOVEDIR) != 0) return fail(sys_error("cgroup remove", path_));
  return {};
}

std::vector<std::pair<std::string, std::string>> cgroup_v1_writes(const std::string& controller,
                                                                  const LimitsPlan& plan) {
  std::vector<std::pair<std::string, std::string>> out;
  if (controller == "memory" && plan.cgroup_memory) {
    out.emplace_back("memory.limit_in_bytes", std::to_string(*plan.cgroup_memory));
    // Memory plus swap, when swap is accounted: after the plain limit,
    // which the kernel wants no larger than it.
    out.emplace_back("memory.memsw.limit_in_bytes", std::to_string(*plan.cgroup_memory));
  }
  if (controller == "pids" && plan.cgroup_pids) out.emplace_back("pids.max", std::to_string(*plan.cgroup_pids));
  if (controller == "cpu" && plan.cgroup_cpu_millis) {
    constexpr uint64_t period = 100'000;
    out.emplace_back("cpu.cfs_period_us", std::to_string(period));
    out.emplace_back("cpu.cfs_quota_us", std::to_string(*plan.cgroup_cpu_millis * period / 1000));
  }
  return out;
}

Result<SandboxCgroupV1> SandboxCgroupV1::make(const std::vector<std::pair<std::string, std::string>>& dirs, pid_t self,
                                              const LimitsPlan& plan, bool fake) {
  SandboxCgroupV1 cg;
  cg.fake_ = fake;
  cg.name_ = fmt::format("nsrun-{}", self);
  for (const auto& [controller, dir] : dirs) {
    const auto writes = cgroup_v1_writes(controller, plan);
    if (writes.empty()) continue;
    One one;
    one.controller = controller;
    one.path = fmt::format("{}/{}", dir, cg.name_);
    one.parent = Fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!one.parent) {
      Error e = sys_error("cgroup", dir);
      (void)cg.remove();
      return fail(e);
    }
    if (::mkdirat(one.parent.get(), cg.name_.c_str(), 0755) != 0) {
      Error e = sys_error("cgroup", one.path);
      (void)cg.remove();
      return fail(e);
    }
    one.dir = Fd(::openat(one.parent.get(), cg.name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    const bool opened = one.dir.valid();
    const Error open_error = sys_error("cgroup", one.path);
    cg.cgroups_.push_back(std::move(one));
    if (!opened) {
      (void)cg.remove();
      return fail(open_error);
    }
    One& made = cg.cgroups_.back();
    for (const auto& [file, value] : writes) {
      if (file == "memory.memsw.limit_in_bytes" && !fake && ::faccessat(made.dir.get(), file.c_str(), F_OK, 0) != 0)
        continue;
      if (auto r = write_control(made.dir.get(), file, value, made.path, fake); !r) {
        (void)cg.remove();
        return fail(r.error());
      }
    }
  }
  return cg;
}

Result<void> SandboxCgroupV1::enter(pid_t self) {
  for (const One& one : cgroups_)
    if (auto r = write_control(one.dir.get(), "cgroup.procs", std::to_string(self), one.path, fake_); !r) return r;
  return {};
}

Result<void> SandboxCgroupV1::leave(pid_t self) {
  Result<void> first;
  for (const One& one : cgroups_) {
    auto r = write_control(one.parent.get(), "cgroup.procs", std::to_string(self), one.path + "/..", fake_);
    if (!r && first) first = r;
  }
  return first;
}

CgroupEvents SandboxCgroupV1::events() const {
  CgroupEvents e;
  for (const One& one : cgroups_) {
    if (one.controller == "memory") {
      e.oom_kills = cgroup_key(read_control(one.dir.get(), "memory.oom_control"), "oom_kill");
      const std::string peak = read_control(one.dir.get(), "memory.max_usage_in_bytes");
      if (!peak.empty() && peak[0] >= '0' && peak[0] <= '9') e.peak_bytes = leading_number(peak);
    }
    if (one.controller == "pids")
      e.pids_max_hits = cgroup_key(read_control(one.dir.get(), "pids.events"), "max");
  }
  return e;
}

Result<void> SandboxCgroupV1::remove() {
  Result<void> first;
  for (One& one : cgroups_) {
    if (!one.dir) continue;
    if (fake_) {
      for (const char* f : {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "pids.max", "cpu.cfs_period_us",
                            "cpu.cfs_quota_us", "cgroup.procs"})
        (void)::unlinkat(one.dir.get(), f, 0);
    }
    one.dir.reset();
    // PID 1 has been reaped: its namespace, and so the cgroup, is empty or
    // about to be (an exiting task leaves it in do_exit). EBUSY only for
    // that moment: a bounded retry.
    int rc = -1;
    for (int i = 0; i < 100; ++i) {
      rc = ::unlinkat(one.parent.get(), name_.c_str(), AT_REMOVEDIR);
      if (rc == 0 || errno != EBUSY) break;
      pollfd none{-1, 0, 0};
      (void)::poll(&none, 0, 10);
    }
    if (rc != 0 && errno != ENOENT && first) first = fail(sys_error("cgroup remove", one.path));
  }
  cgroups_.clear();
  return first;
}

}  // namespace nsrun
