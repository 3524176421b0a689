#include "probe/report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {


json::Value to_json(const LaunchReport& r) {
  using json::Value;
  Value out = Value::object();
  out.set("rung", r.rung);
  out.set("mode", name(r.mode));
  out.set("proc", name(r.proc));
  out.set("host_backend", r.host_backend);
  out.set("seccomp", name(r.seccomp));
  Value landlock = Value::object();
  landlock.set("abi", r.landlock_abi);
  landlock.set("enforcement", r.landlock_enforcement);
  Value dropped = Value::array();
  for (const auto& d : r.landlock_dropped) dropped.push_back(d);
  landlock.set("dropped", std::move(dropped));
  Value refused = Value::array();
  for (const auto& d : r.landlock_refused) refused.push_back(d);
  landlock.set("refused", std::move(refused));
  out.set("landlock", std::move(landlock));
  Value rungs = Value::array();
  for (const auto& rung : r.rungs) {
    Value item = Value::object();
    item.set("name", rung.name);
    item.set("used", rung.used);
    item.set("reason", rung.reason.empty() ? Value() : Value(rung.reason));
    if (!rung.detail.empty()) item.set("detail", rung.detail);
    rungs.push_back(std::move(item));
  }
  out.set("rungs", std::move(rungs));
  Value phases = Value::array();
  uint64_t total = 0;
  for (const auto& p : r.phases) {
    Value item = Value::object();
    item.set("name", p.name);
    item.set("micros", p.micros);
    total += p.micros;
    phases.push_back(std::move(item));
  }
  out.set("phases", std::move(phases));
  out.set("launch_micros", total);
  out.set("exit_code", r.exit_code);
  out.set("error", r.error ? Value(r.error->message()) : Value());
  return out;
}

Result<void> write_report(const Policy& policy, const LaunchReport& report) {
  if (policy.report_path.empty() && !policy.report_fd) return {};
  const std::string text = json::dump(to_json(report), false) + "\n";
  if (policy.report_fd)
    if (auto r = write_all(*policy.report_fd, text, "write report", "--report-fd"); !r) return r;
  if (!policy.report_path.empty()) {
    Fd fd(::open(policy.report_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) return fail(sys_error("write report", policy.report_path));
    if (auto r = write_all(fd.get(), text, "write report", policy.report_path); !r) return r;
  }
  return {};
}

}  // namespace nsrun
