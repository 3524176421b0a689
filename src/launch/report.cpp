#include "launch/report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

namespace {

// A JSON array with `item(x)` for each element.
template <class T, class F>
json::Value array_of(const std::vector<T>& items, F&& item) {
  json::Value out = json::Value::array();
  for (const auto& x : items) out.push_back(item(x));
  return out;
}

// The verdict: facts only; what is unknown is null.
void add_verdict(json::Value& out, const LaunchReport& r) {
  using json::Value;
  const Verdict& v = r.verdict;
  Value ended = Value::object();
  if (v.started) {
    ended.set("how", v.ended.how);
    ended.set("code", v.ended.code);
    ended.set("signal", v.ended.signal != 0 ? Value(v.ended.signal) : Value());
    ended.set("limit", v.ended.limit.empty() ? Value() : Value(v.ended.limit));
  } else {
    ended.set("how", "setup-failed");
    ended.set("code", r.exit_code);
    ended.set("signal", Value());
    ended.set("limit", Value());
  }
  out.set("ended", std::move(ended));
  if (v.started) {
    Value usage = Value::object();
    usage.set("wall_micros", v.usage.wall_us);
    usage.set("user_micros", v.usage.user_us);
    usage.set("system_micros", v.usage.sys_us);
    usage.set("peak_memory_bytes", v.usage.peak_memory_bytes);
    usage.set("peak_memory_source", v.usage.peak_memory_source);
    usage.set("processes", v.usage.processes ? Value(*v.usage.processes) : Value());
    out.set("usage", std::move(usage));
  } else {
    out.set("usage", Value());
  }
  Value limits = Value::object();
  Value enforcement = Value::object();
  Value details = Value::object();
  for (const auto& d : v.limits) {
    enforcement.set(d.limit, name(d.how));
    details.set(d.limit, d.detail);
  }
  limits.set("enforcement", std::move(enforcement));
  limits.set("detail", std::move(details));
  out.set("limits", std::move(limits));
  if (v.started && r.seccomp_filter && !v.denials_observed) {
    out.set("denials", "unobserved");
  } else {
    Value denials = Value::array();
    for (const auto& d : v.denials) {
      Value item = Value::object();
      item.set("syscall", d.syscall);
      item.set("count", d.count);
      item.set("first_pid", d.first_pid);
      item.set("args", d.args);
      denials.push_back(std::move(item));
    }
    out.set("denials", std::move(denials));
  }
  // Every refusal nsrun saw, and what it could not see: an agent reads
  // why its command failed here (launch/refusals.hpp).
  out.set("refusals", array_of(v.refusals, [](const Refusal& r) {
    Value item = Value::object();
    item.set("kind", r.kind);
    item.set("what", r.what);
    item.set("allow", r.allow.empty() ? Value() : Value(r.allow));
    item.set("count", r.count);
    item.set("words", r.words);
    return item;
  }));
  out.set("unobserved", array_of(v.unobserved, [](const std::pair<std::string, std::string>& u) {
    Value item = Value::object();
    item.set("kind", u.first);
    item.set("why", u.second);
    return item;
  }));
  // --watch-writes: observations (paths read from the command's memory,
  // racy), marked as such; present only when asked for.
  if (v.started && v.writes_watched && !v.writes_observed) {
    out.set("writes_outside", "unobserved");
  } else if (v.writes_watched) {
    Value writes = Value::array();
    for (const auto& w : v.writes_outside) {
      Value item = Value::object();
      item.set("path", w.path);
      item.set("syscall", w.syscall);
      item.set("where", name(w.where));
      item.set("count", w.count);
      item.set("first_pid", w.first_pid);
      item.set("observed", true);
      writes.push_back(std::move(item));
    }
    out.set("writes_outside", std::move(writes));
    if (v.writes_outside_dropped > 0) out.set("writes_outside_dropped", v.writes_outside_dropped);
  }
}

}  // namespace

json::Value to_json(const LaunchReport& r) {
  using json::Value;
  Value out = Value::object();
  // docs/report.schema.json describes this version; a change that removes
  // or retypes a key bumps it.
  out.set("schema_version", report_schema_version);
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
  out.set("rungs", array_of(r.rungs, [](const RungReport& rung) {
    Value item = Value::object();
    item.set("name", rung.name);
    item.set("used", rung.used);
    item.set("reason", rung.reason.empty() ? Value() : Value(rung.reason));
    if (!rung.detail.empty()) item.set("detail", rung.detail);
    return item;
  }));
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
  out.set("protected", array_of(r.protected_paths, [](const ProtectedReport& pr) {
    Value item = Value::object();
    item.set("path", pr.path);
    item.set("kept", pr.kept);
    item.set("operation", pr.operation.empty() ? Value() : Value(pr.operation));
    if (!pr.renamed_to.empty()) item.set("renamed_to", pr.renamed_to);
    return item;
  }));
  out.set("hidden_credentials", array_of(r.hidden_credentials, [](const std::string& h) { return Value(h); }));
  out.set("exit_code", r.exit_code);
  out.set("error", r.error ? Value(r.error->message()) : Value());
  add_verdict(out, r);
  if (!r.layers.run_id.empty() || !r.layers.home.empty()) {
    Value layers = Value::object();
    layers.set("run_id", r.layers.run_id.empty() ? Value() : Value(r.layers.run_id));
    if (!r.layers.run_layer.empty()) layers.set("run_layer", r.layers.run_layer);
    layers.set("home", r.layers.home);
    if (!r.layers.home_layer.empty()) layers.set("home_layer", r.layers.home_layer);
    Value redirected = Value::array();
    for (const auto& v : r.layers.redirected) redirected.push_back(v);
    if (!r.layers.redirected.empty()) layers.set("redirected", std::move(redirected));
    out.set("layers", std::move(layers));
  }
  if (r.network) out.set("network", egress::network_section(*r.network));
  return out;
}

Result<std::pair<std::string, std::string>> split_report_path(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string_view::npos ? "." : slash == 0 ? "/" : std::string(path.substr(0, slash));
  std::string name(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (name.empty() || name == "." || name == "..") {
    Error e = usage_error("--report", "does not name a file");
    e.path = std::string(path);
    return fail(std::move(e));
  }
  return std::pair{std::move(dir), std::move(name)};
}

namespace {

Error refuse(const std::string& path, std::string_view why) {
  Error e = usage_error("--report", why);
  e.path = path;
  return e;
}

Error refuse_errno(const std::string& path, int err) { return refuse(path, std::strerror(err)); }

constexpr std::string_view symlink_refusal =
    "is a symbolic link; give the file's own path (for a descriptor such as /dev/stdout, --report-fd N)";

// What may be truncated and written: a regular file with no other name.
Result<void> acceptable(const std::string& path, const struct stat& st) {
  if (S_ISLNK(st.st_mode))
    return fail(refuse(path, symlink_refusal));
  if (!S_ISREG(st.st_mode)) return fail(refuse(path, "exists and is not a regular file"));
  if (st.st_nlink > 1)
    return fail(refuse(path, fmt::format("has {} hard links; writing it would change the other names too",
                                         st.st_nlink)));
  return {};
}

struct Identity {
  dev_t dev;
  ino_t ino;
  bool operator==(const Identity&) const = default;
};

// The host directories a sandboxed command may write: where an earlier
// command could have planted a symlink on the way to a later report.
std::vector<Identity> writable_roots(const Policy& policy) {
  std::vector<std::string> paths = policy.writable;
  if (policy.mode == Mode::workspace_write && policy.preset) paths.push_back(policy.workspace);
  for (const auto& m : policy.mounts) {
    if (m.kind == MountOp::Kind::bind || m.kind == MountOp::Kind::dev_bind) paths.push_back(m.source);
    if (m.kind == MountOp::Kind::overlay) paths.push_back(m.source);
  }
  std::vector<Identity> out;
  struct stat st{};
  for (const auto& path : paths)
    if (!path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back({st.st_dev, st.st_ino});
  return out;
}

// Whether the directory `fd` is one of `roots` or below one, walking ".."
// up to the root of the file system.
bool inside(int fd, const std::vector<Identity>& roots) {
  Fd up;
  int at = fd;
  struct stat st{};
  if (::fstat(at, &st) != 0) return true;  // unknown: assume the worst
  for (int depth = 0; depth < 4096; ++depth) {
    if (std::find(roots.begin(), roots.end(), Identity{st.st_dev, st.st_ino}) != roots.end()) return true;
    Fd parent(::openat(at, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    struct stat pst{};
    if (!parent || ::fstat(parent.get(), &pst) != 0) return true;
    if (pst.st_dev == st.st_dev && pst.st_ino == st.st_ino) return false;  // reached "/"
    up = std::move(parent);
    at = up.get();
    st = pst;
  }
  return true;
}

// Opens the report's parent directory one component at a time. A symlink
// on the way is followed (`/var/run` -> `/run` is ordinary) unless it sits
// inside a directory the command may write: a symlink an earlier sandboxed
// command planted there (`ws/out` -> `/home/u/.ssh`) must not steer where
// the caller's report goes.
Result<Fd> open_parent(const std::string& report, const std::string& dir, const std::vector<Identity>& roots) {
  Fd cur(::open(dir.starts_with('/') ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) return fail(refuse_errno(report, errno));
  std::string_view rest = dir;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string part(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    Fd next(::openat(cur.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return fail(refuse_errno(report, errno));
    struct stat st{};
    if (::fstat(next.get(), &st) != 0) return fail(refuse_errno(report, errno));
    if (S_ISLNK(st.st_mode)) {
      if (inside(cur.get(), roots))
        return fail(refuse(report, fmt::format("{} on the way is a symbolic link inside a directory the command "
                                               "may write; give the path without it",
                                               part)));
      next = Fd(::openat(cur.get(), part.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!next) return fail(refuse_errno(report, errno));
    } else if (!S_ISDIR(st.st_mode)) {
      return fail(refuse_errno(report, ENOTDIR));
    }
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

Result<ReportSink> ReportSink::open(const Policy& policy) { return open(policy, false); }

Result<ReportSink> ReportSink::open_outside_writable(const Policy& policy) { return open(policy, true); }

Result<ReportSink> ReportSink::open(const Policy& policy, bool outside_writable) {
  ReportSink sink;
  if (policy.report_fd) {
    const int flags = ::fcntl(*policy.report_fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
      return fail(usage_error("--report-fd", fmt::format("{}: not open for writing", *policy.report_fd)));
    sink.fd_ = *policy.report_fd;
  }
  if (policy.report_path.empty()) return sink;
  sink.path_ = policy.report_path;
  auto parts = split_report_path(policy.report_path);
  if (!parts) return fail(parts.error());
  // The parent is resolved once, here, before the command exists; a later
  // rename of a directory on the way changes nothing for this fd.
  const std::vector<Identity> roots = writable_roots(policy);
  auto dir = open_parent(sink.path_, parts->first, roots);
  if (!dir) return fail(dir.error());
  if (outside_writable && inside(dir->get(), roots))
    return fail(refuse(sink.path_, "is in a directory the session's commands may write (one could change the report "
                                   "after it is written); give a path outside it, or --report-fd"));
  sink.dir_ = std::move(*dir);
  sink.name_ = std::move(parts->second);
  struct stat st{};
  if (::fstatat(sink.dir_.get(), sink.name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    // Checked before opening: opening a device or a FIFO for writing can
    // itself have effects (a tape rewinds, a reader wakes up).
    if (auto r = acceptable(sink.path_, st); !r) return fail(r.error());
  } else if (errno != ENOENT) {
    return fail(refuse_errno(sink.path_, errno));
  }
  // O_NOFOLLOW: a symlink planted since the check fails with ELOOP;
  // O_NONBLOCK: a FIFO planted since does not hang nsrun. No O_TRUNC: the
  // file is emptied only when the report is written.
  sink.file_ = Fd(::openat(sink.dir_.get(), sink.name_.c_str(),
                           O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644));
  if (!sink.file_) {
    if (errno == ELOOP) return fail(refuse(sink.path_, symlink_refusal));
    return fail(refuse_errno(sink.path_, errno));
  }
  if (::fstat(sink.file_.get(), &st) != 0) return fail(refuse_errno(sink.path_, errno));
  if (auto r = acceptable(sink.path_, st); !r) return fail(r.error());
  sink.dev_ = st.st_dev;
  sink.ino_ = st.st_ino;
  return sink;
}

Result<Fd> open_network_log(const Policy& policy) {
  Policy as_report = policy;
  as_report.report_path = policy.egress.log;
  as_report.report_fd.reset();
  auto sink = ReportSink::open(as_report);
  if (!sink) {
    Error e = sink.error();
    e.step = "--network-log";
    return fail(std::move(e));
  }
  Fd file = sink->take_file();
  if (::ftruncate(file.get(), 0) != 0) return fail(sys_error("--network-log", policy.egress.log));
  return file;
}

Result<void> ReportSink::write_file(std::string_view text) {
  struct stat st{};
  const bool same = ::fstatat(dir_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                    st.st_dev == dev_ && st.st_ino == ino_;
  if (!same) return replace_entry(text);
  if (::ftruncate(file_.get(), 0) != 0) return fail(sys_error(Operation::write_report, path_));
  if (::lseek(file_.get(), 0, SEEK_SET) < 0) return fail(sys_error(Operation::write_report, path_));
  return write_all(file_.get(), text, "write report", path_);
}

Result<void> ReportSink::replace_entry(std::string_view text) {
  // A fresh name in the held directory, created exclusively (never an
  // existing file, never through a symlink), then renamed over whatever
  // the command left at the report's name: rename replaces the entry and
  // never writes to what it pointed at.
  Fd tmp;
  std::string tmp_name;
  for (int attempt = 0; attempt < 100 && !tmp; ++attempt) {
    // Short whatever the report's name, so NAME_MAX is never in the way.
    tmp_name = fmt::format(".nsrun-report-{}-{}", ::getpid(), attempt);
    tmp = Fd(::openat(dir_.get(), tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!tmp && errno != EEXIST) return fail(sys_error(Operation::write_report, path_));
  }
  if (!tmp) return fail(sys_error(Operation::write_report, path_, EEXIST));
  // The permissions the file had before the run (the user may have narrowed
  // them), not the command's choice.
  struct stat held{};
  if (::fstat(file_.get(), &held) == 0) (void)::fchmod(tmp.get(), held.st_mode & 0777);
  auto written = write_all(tmp.get(), text, "write report", path_);
  if (written && ::renameat(dir_.get(), tmp_name.c_str(), dir_.get(), name_.c_str()) != 0) {
    Error e = sys_error(Operation::write_report, path_);
    e.detail = "the command replaced the file; the report could not take its place";
    written = fail(std::move(e));
  }
  if (!written) (void)::unlinkat(dir_.get(), tmp_name.c_str(), 0);
  return written;
}

Result<void> ReportSink::write(const LaunchReport& report) { return write(to_json(report)); }

Result<void> ReportSink::write(const json::Value& report) {
  if (empty()) return {};
  const std::string text = json::dump(report, false) + "\n";
  if (fd_ >= 0)
    if (auto r = write_all(fd_, text, "write report", "--report-fd"); !r) return r;
  if (file_) return write_file(text);
  return {};
}

}  // namespace nsrun
