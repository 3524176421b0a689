#include "session/host.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "launch/attempt.hpp"
#include "launch/home_fallback.hpp"
#include "launch/ladder.hpp"
#include "launch/namespaces_rung.hpp"
#include "launch/protect_watch.hpp"
#include "launch/refusals.hpp"
#include "launch/report.hpp"
#include "launch/spec.hpp"
#include "layers/dirs.hpp"
#include "layers/session.hpp"
#include "session/exec_report.hpp"
#include "session/ledger.hpp"
#include "session/paths.hpp"
#include "session/pid1.hpp"
#include "session/wire.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::session {

std::string_view landlock_refusal() {
  return "the Landlock rung refuses sessions: without a PID namespace of the session's own nothing ends every "
         "process it started when it stops or its owner dies";
}

namespace {

int say(const Error& e) {
  fmt::print(stderr, "nsrun: {}\n", e.message());
  return e.exit_code();
}

uint64_t now_ms() {
  struct timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

json::Value object() { return json::Value::object(); }

// How deep in nested PID namespaces `pid` is (the NSpid line of its
// status: one pid per level); 0 when unknown. Read from status, which
// anyone may read: /proc/PID/ns/ of a non-dumpable process is not.
int pidns_depth(pid_t pid) {
  Fd f(::open(fmt::format("/proc/{}/status", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!f) return 0;
  char buf[4096];
  const ssize_t n = ::read(f.get(), buf, sizeof buf - 1);
  if (n <= 0) return 0;
  const std::string_view text(buf, static_cast<std::size_t>(n));
  const auto at = text.find("\nNSpid:");
  if (at == std::string_view::npos) return 0;
  const auto end = text.find('\n', at + 1);
  int depth = 0;
  bool in_number = false;
  for (char c : text.substr(at + 8, end == std::string_view::npos ? std::string_view::npos : end - at - 8)) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_number) ++depth;
    in_number = digit;
  }
  return depth;
}

struct Job {
  int64_t id = 0;
  std::vector<std::string> argv;
  bool background = false;
  std::string state = "starting";  // running, exited, failed
  std::optional<int> exit;
  std::string error;
  int64_t pid = 0;  // in the session's PID namespace
  int client = -1;  // the foreground caller's connection, -1: none
  Fd pipe;          // background: the read end of its stdout and stderr
  Fd log;
  uint64_t total = 0;  // bytes of output so far
  uint64_t base = 0;   // the first of them in the current log file
  // A foreground exec that asked for a report (nsrun exec --report,
  // --verdict): when its command started, and the other jobs that ran
  // while it did.
  bool report = false;
  uint64_t started_ns = 0;
  std::vector<int64_t> beside;
  // nsrun exec --timeout: SIGTERM to its process group at the deadline,
  // SIGKILL the session's --kill-after later; it then ends with 124.
  uint64_t timeout_ms = 0;
  uint64_t deadline_ns = 0;  // 0: none (pending)
  bool timed_out = false;
  bool killed = false;
};

struct Waiter {
  int client;
  int64_t job;
  uint64_t offset;
};

class Server {
 public:
  std::string name;
  Fd listener;
  Fd sockets_dir;
  Fd jobs_dir;
  Fd to_pid1;
  Fd ready;  // the starting caller's pipe: 'R' once PID 1 is serving
  Fd wake;   // eventfd: the launch is over (PID 1 reaped); its value - 1 is the end code
  pid_t pid1 = -1;
  Fd pid1_fd;
  uint64_t idle_ms = 0;
  std::string run_id;
  time_t started = 0;
  // Set before the wake of a launch that is tried again (the home's
  // overlay refused): the control socket stays for the next attempt.
  std::atomic<bool> retrying{false};
  // Each exec's report: what the listener and the proxy refused,
  // attributed (session/ledger.hpp), and what every report shares.
  Ledger ledger;
  SessionReportBase report_base;
  // --network proxy: waits until every decision the proxy sent is
  // recorded (egress::Egress::settler()); empty without a proxy.
  std::function<bool(int)> settle_egress;
  // The host directories the session's commands may write, for a caller
  // that puts a report outside them (`status`).
  std::vector<std::string> writable_dirs;
  bool verdict_default = false;  // session start --verdict
  uint64_t kill_after_ms = 2000;  // the session's --kill-after, for an exec's --timeout

  void run();

 private:
  std::map<int, Fd> clients_;
  std::map<int64_t, Job> jobs_;
  std::vector<Waiter> waiters_;
  int64_t next_job_ = 1;
  bool serving_ = false;
  bool stopping_ = false;
  uint64_t last_activity_ = 0;
  int own_depth_ = 0;

  // Through a pidfd taken before anyone could reap PID 1: a signal never
  // reaches a process that reused its number.
  void stop_session() {
    if (!stopping_ && pid1_fd.valid()) (void)::syscall(SYS_pidfd_send_signal, pid1_fd.get(), SIGKILL, nullptr, 0);
    stopping_ = true;
  }
  void send(int client, const json::Value& v) { (void)send_message(client, v); }
  void drop_client(int fd);
  void accept_client();
  void client_message(int fd);
  void pid1_message();
  void exec(int fd, const json::Value& req, std::vector<Fd>& fds);
  void read_output(Job& job);
  void answer_waiters();
  json::Value job_json(const Job& j) const;
  void add_report(Job& job, ExecEnd end, json::Value& reply);
  void signal_job(int64_t id, int sig);
  int expire_jobs();
  void finish(int code);
};

json::Value Server::job_json(const Job& j) const {
  json::Value v = object();
  v.set("job", j.id);
  v.set("argv", strings_value(j.argv));
  v.set("background", j.background);
  v.set("state", j.state);
  if (j.pid > 0) v.set("pid", j.pid);
  if (j.exit) v.set("exit", *j.exit);
  if (!j.error.empty()) v.set("error", j.error);
  if (j.background) v.set("output_bytes", static_cast<int64_t>(j.total));
  return v;
}

void Server::drop_client(int fd) {
  for (auto& [id, job] : jobs_)
    if (job.client == fd) {
      job.client = -1;
      // A caller that hangs up on a command still running takes it along
      // (a background job lives on).
      if (!job.background && (job.state == "running" || job.state == "starting")) {
        json::Value k = object();
        k.set("op", "kill");
        k.set("job", id);
        k.set("signal", SIGKILL);
        if (!send_message(to_pid1.get(), k)) stop_session();
      }
    }
  std::erase_if(waiters_, [&](const Waiter& w) { return w.client == fd; });
  clients_.erase(fd);
  last_activity_ = now_ms();
}

void Server::accept_client() {
  Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!c) return;
  struct ucred cred{};
  socklen_t len = sizeof cred;
  // The caller's own uid only; and never a process of the session itself
  // (it runs as the same uid: the socket is hidden from it, this is the
  // second lock).
  if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid()) return;
  // Not deeper than this process: every process of the session is in a
  // PID namespace below it (a peer gone before the check reads 0).
  const int depth = cred.pid > 0 ? pidns_depth(cred.pid) : 0;
  if (depth == 0 || depth > own_depth_) return;
  if (clients_.size() >= 256) return;
  const int fd = c.get();
  clients_.emplace(fd, std::move(c));
  last_activity_ = now_ms();
}

void Server::exec(int fd, const json::Value& req, std::vector<Fd>& fds) {
  auto argv = strings_field(req, "argv");
  std::vector<std::string> env;
  if (req.find("env") != nullptr) {
    auto e = strings_field(req, "env");
    if (!e) return send(fd, [] { json::Value v = object(); v.set("error", "exec: env must be strings NAME=VALUE"); v.set("exit", 125); return v; }());
    env = std::move(*e);
  }
  const std::string* cwd = string_field(req, "cwd");
  const bool background = bool_field(req, "background");
  const bool asked = bool_field(req, "report");
  const std::optional<int64_t> timeout_ms = int_field(req, "timeout_ms");
  // The session's --verdict: every foreground exec's verdict is made.
  const bool report = asked || (verdict_default && !background);
  auto refuse = [&](std::string why) {
    json::Value v = object();
    v.set("error", "exec: " + why);
    v.set("exit", 125);
    send(fd, v);
  };
  if (!argv || argv->empty()) return refuse("argv must be a non-empty array of strings");
  for (const auto& e : env)
    if (e.find('=') == std::string::npos || e.front() == '=') return refuse("env entries are NAME=VALUE");
  if (!background && fds.size() != 3) return refuse("a foreground exec passes 3 descriptors (stdin, stdout, stderr)");
  if (background && !fds.empty()) return refuse("a background exec passes no descriptors");
  if (background && asked) return refuse("a report is for a foreground exec (its caller waits for it)");
  if (req.find("timeout_ms") != nullptr && (!timeout_ms || *timeout_ms <= 0))
    return refuse("timeout_ms is a number of milliseconds above 0");
  if (stopping_) return refuse("the session is stopping");
  Job job;
  job.id = next_job_++;
  job.timeout_ms = static_cast<uint64_t>(timeout_ms.value_or(0));
  job.argv = *argv;
  job.background = background;
  Fd write_end;
  if (background) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return refuse(fmt::format("pipe: {}", std::strerror(errno)));
    job.pipe.reset(ends[0]);
    write_end.reset(ends[1]);
    const std::string file = fmt::format("{}.log", job.id);
    (void)::unlinkat(jobs_dir.get(), (file + ".1").c_str(), 0);
    job.log.reset(::openat(jobs_dir.get(), file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!job.log) return refuse(fmt::format("log {}: {}", file, std::strerror(errno)));
  }
  job.client = fd;
  // Every exec's window opens beside those already open: each lists the
  // others that ran while it did (their egress denials are not its own).
  for (auto& [id, other] : jobs_) {
    const bool running = other.state == "running" || other.state == "starting";
    if (!running) continue;
    if (other.report) other.beside.push_back(job.id);
    if (report) job.beside.push_back(id);
  }
  if (report) {
    job.report = true;
    ledger.expect(job.id);
  }
  json::Value start = object();
  start.set("op", "start");
  start.set("job", job.id);
  start.set("argv", strings_value(*argv));
  start.set("env", strings_value(env));
  start.set("cwd", cwd != nullptr && !cwd->empty() ? *cwd : std::string("."));
  std::vector<int> pass;
  if (background) pass.push_back(write_end.get());
  for (const auto& f : fds) pass.push_back(f.get());
  if (!send_message(to_pid1.get(), start, pass)) {
    if (report) (void)ledger.close(job.id);
    stop_session();
    return refuse("the session ended");
  }
  jobs_.emplace(job.id, std::move(job));
  // Bounded: the oldest ended jobs go first.
  while (jobs_.size() > 1000) {
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [](const auto& kv) {
      return kv.second.state != "running" && kv.second.state != "starting" && !kv.second.pipe;
    });
    if (it == jobs_.end()) break;
    jobs_.erase(it);
  }
}

void Server::client_message(int fd) {
  auto m = receive_message(fd, max_fds);
  if (!m || m->eof) return drop_client(fd);
  last_activity_ = now_ms();
  const std::string* op = string_field(m->value, "op");
  json::Value r = object();
  if (op == nullptr) {
    r.set("error", "a request needs \"op\"");
    send(fd, r);
    return drop_client(fd);
  }
  if (*op == "exec") return exec(fd, m->value, m->fds);
  if (!m->fds.empty()) {
    r.set("error", fmt::format("{}: takes no descriptors", *op));
    send(fd, r);
    return drop_client(fd);
  }
  if (*op == "jobs") {
    json::Value list = json::Value::array();
    for (const auto& [id, job] : jobs_) list.push_back(job_json(job));
    r.set("jobs", std::move(list));
  } else if (*op == "kill" || *op == "signal") {
    std::optional<int64_t> id = int_field(m->value, "job");
    if (*op == "signal")
      for (const auto& [jid, job] : jobs_)
        if (job.client == fd) id = jid;
    const int64_t sig = int_field(m->value, "signal").value_or(SIGTERM);
    auto it = id ? jobs_.find(*id) : jobs_.end();
    if (it == jobs_.end()) {
      r.set("error", "no such job");
    } else if (sig < 1 || sig > 64) {
      r.set("error", "signal: 1 to 64");
    } else {
      json::Value k = object();
      k.set("op", "kill");
      k.set("job", it->first);
      k.set("signal", sig);
      if (!send_message(to_pid1.get(), k)) stop_session();
      r.set("ok", true);
    }
    if (*op == "signal") return;  // answered by the command's end
  } else if (*op == "status") {
    r.set("name", name);
    r.set("pid", static_cast<int64_t>(::getpid()));
    r.set("started", static_cast<int64_t>(started));
    int64_t running = 0;
    for (const auto& [id, job] : jobs_) running += job.state == "running" ? 1 : 0;
    r.set("running_jobs", running);
    r.set("idle_timeout_ms", static_cast<int64_t>(idle_ms));
    if (!run_id.empty()) r.set("run_id", run_id);
    r.set("writable", strings_value(writable_dirs));
  } else if (*op == "output") {
    const auto id = int_field(m->value, "job");
    const auto offset = int_field(m->value, "offset");
    auto it = id ? jobs_.find(*id) : jobs_.end();
    if (it == jobs_.end() || !it->second.background || !offset || *offset < 0) {
      r.set("error", "no such background job");
    } else {
      waiters_.push_back({fd, *id, static_cast<uint64_t>(*offset)});
      return answer_waiters();
    }
  } else if (*op == "stop") {
    stop_session();
    r.set("ok", true);
    // The connection stays open: it closes when the session has ended.
  } else {
    r.set("error", fmt::format("unknown op {}", json::quote(*op)));
  }
  send(fd, r);
}

void Server::answer_waiters() {
  std::erase_if(waiters_, [&](const Waiter& w) {
    auto it = jobs_.find(w.job);
    if (it == jobs_.end()) {
      json::Value gone = object();
      gone.set("error", "no such background job");
      send(w.client, gone);
      return true;
    }
    const Job& job = it->second;
    if (job.total <= w.offset && job.pipe) return false;
    json::Value v = object();
    v.set("total", static_cast<int64_t>(job.total));
    v.set("base", static_cast<int64_t>(job.base));
    v.set("open", job.pipe.valid());
    if (job.exit) v.set("exit", *job.exit);
    send(w.client, v);
    return true;
  });
}

void Server::read_output(Job& job) {
  char buf[65536];
  const ssize_t n = ::read(job.pipe.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    job.pipe.reset();
    job.log.reset();
    answer_waiters();
    return;
  }
  // No file grows past the bound: the current one moves aside first.
  if (job.total > job.base && job.total - job.base + static_cast<uint64_t>(n) > log_file_max) {
    const std::string file = fmt::format("{}.log", job.id);
    (void)::renameat(jobs_dir.get(), file.c_str(), jobs_dir.get(), (file + ".1").c_str());
    job.log.reset(::openat(jobs_dir.get(), file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    job.base = job.total;
  }
  if (job.log) (void)!::write(job.log.get(), buf, static_cast<std::size_t>(n));
  job.total += static_cast<uint64_t>(n);
  answer_waiters();
}

void Server::pid1_message() {
  auto m = receive_message(to_pid1.get(), 0);
  if (!m || m->eof || !m->value.is_object()) {
    // Gone, or speaking nonsense (it lives beside the command): either
    // way the session is over.
    to_pid1.reset();
    return stop_session();
  }
  const json::Value& v = m->value;
  if (bool_field(v, "ready")) {
    if (serving_) return stop_session();
    serving_ = true;
    const char r = 'R';
    (void)!::write(ready.get(), &r, 1);
    ready.reset();
    last_activity_ = now_ms();
    return;
  }
  const auto id = int_field(v, "job");
  auto it = id ? jobs_.find(*id) : jobs_.end();
  if (it == jobs_.end()) return;  // a job dropped from the table
  Job& job = it->second;
  json::Value r = object();
  r.set("job", job.id);
  if (const auto pid = int_field(v, "pid")) {
    if (job.state != "starting") return stop_session();
    job.state = "running";
    job.pid = *pid;
    r.set("started", true);
    if (job.timeout_ms > 0) job.deadline_ns = Timeline::now_ns() + job.timeout_ms * 1'000'000;
    if (job.report) {
      job.started_ns = Timeline::now_ns();
      ledger.open(job.id, *pid);
    }
  } else if (const auto exit = int_field(v, "exit")) {
    job.state = "exited";
    job.exit = static_cast<int>(*exit);
    // Ended at its --timeout: 124, and the launch's line saying so (exit
    // 124 alone does not tell the caller that nsrun ended it).
    if (job.timed_out) {
      job.exit = 124;
      Verdict said;
      said.started = true;
      said.ended.how = "timeout";
      said.ended.killed = job.killed;
      RefusalFacts facts;
      facts.timeout_ms = job.timeout_ms;
      facts.kill_after_ms = kill_after_ms;
      collect_refusals(said, facts);
      r.set("timed_out", timeout_line(said));
    }
    job.deadline_ns = 0;
    r.set("exit", *job.exit);
    if (job.report) {
      // PID 1's numbers, read as hostile: bounded, never negative.
      auto count = [&](std::string_view key) {
        return static_cast<uint64_t>(std::clamp<int64_t>(int_field(v, key).value_or(0), 0, INT64_MAX / 1024));
      };
      ExecEnd end;
      end.code = job.exit.value_or(125);
      end.timed_out = job.timed_out;
      end.killed = job.killed;
      end.timeout_ms = job.timeout_ms;
      end.kill_after_ms = kill_after_ms;
      if (const auto status = int_field(v, "status"); status && *status >= 0 && *status <= 0xffff)
        end.wait_status = static_cast<int>(*status);
      end.user_us = count("user_us");
      end.sys_us = count("sys_us");
      end.maxrss_kb = count("maxrss_kb");
      add_report(job, std::move(end), r);
    }
  } else if (const std::string* error = string_field(v, "error")) {
    job.state = "failed";
    job.error = error->substr(0, 4096);
    job.exit = static_cast<int>(int_field(v, "code").value_or(125));
    r.set("exit", *job.exit);
    r.set("error", job.error);
    job.pipe.reset();
    job.log.reset();
    if (job.report) {
      ExecEnd end;
      end.how = ExecEnd::How::failed;
      end.code = *job.exit;
      end.error = job.error;
      add_report(job, std::move(end), r);
    }
  } else {
    return stop_session();
  }
  if (job.client >= 0) {
    send(job.client, r);
    // A background job's caller only waited for its start.
    if (job.exit || job.background) job.client = -1;
  }
  answer_waiters();
}

// The exec's report and verdict line, into its last reply. Its window
// closes here: the proxy's decisions on their way are waited for (a
// bounded wait: the proxy sends a refusal before the client hears it).
void Server::add_report(Job& job, ExecEnd end, json::Value& reply) {
  job.report = false;
  if (settle_egress) (void)settle_egress(250);
  const ExecObservations obs = ledger.close(job.id);
  if (job.client < 0) return;
  if (job.started_ns != 0) end.wall_us = (Timeline::now_ns() - job.started_ns) / 1000;
  end.beside = job.beside;
  // Egress denials to tell apart, and no other job ran: what earlier
  // commands left running could have made them too.
  if (!obs.egress.empty() && end.beside.empty() && job.pid > 0) end.strays = ledger.others_in_session(pid1, job.pid);
  const LaunchReport report = exec_report(report_base, end, obs);
  // One reply is one packet of at most max_message bytes, with the rest
  // of the reply beside the report.
  json::Value j = bounded_json(report, max_message - 8 * 1024);
  if (json::dump(j, false).size() <= max_message - 8 * 1024) reply.set("report", std::move(j));
  else reply.set("report_error", "the report does not fit in one message");
  std::string line = verdict_line(report.verdict);
  if (line.size() > 4096) line.resize(4096);
  reply.set("verdict", line);
  if (verdict_default) reply.set("print_verdict", true);
}

void Server::signal_job(int64_t id, int sig) {
  json::Value k = object();
  k.set("op", "kill");
  k.set("job", id);
  k.set("signal", sig);
  if (!send_message(to_pid1.get(), k)) stop_session();
}

// The exec timeouts due: SIGTERM first, SIGKILL kill_after_ms later.
// Returns the milliseconds to the next deadline, -1: none.
int Server::expire_jobs() {
  const uint64_t now = Timeline::now_ns();
  uint64_t next = 0;
  for (auto& [id, job] : jobs_) {
    if (job.deadline_ns == 0) continue;
    if (job.deadline_ns <= now) {
      if (!job.timed_out) {
        job.timed_out = true;
        job.deadline_ns = now + kill_after_ms * 1'000'000;
        signal_job(id, SIGTERM);
      } else {
        job.killed = true;
        job.deadline_ns = 0;
        signal_job(id, SIGKILL);
        continue;
      }
    }
    if (next == 0 || job.deadline_ns < next) next = job.deadline_ns;
  }
  if (next == 0) return -1;
  return static_cast<int>(std::min<uint64_t>((next - now + 999'999) / 1'000'000, INT_MAX));
}

void Server::finish(int code) {
  for (auto& [id, job] : jobs_) {
    while (job.pipe) read_output(job);  // every writer is dead: bounded by what is buffered
    if (job.client >= 0 && !job.exit) {
      json::Value r = object();
      r.set("job", id);
      r.set("exit", code);
      r.set("error", code == 124 ? "the session's time limit ended it" : "the session ended");
      if (job.report) {
        ExecEnd end;
        end.how = ExecEnd::How::session_ended;
        end.code = code;
        end.session_timeout = code == 124;
        add_report(job, std::move(end), r);
      }
      send(job.client, r);
    }
    if (job.report) (void)ledger.close(id);
  }
  for (auto& w : waiters_) {
    json::Value r = object();
    r.set("error", "the session ended");
    send(w.client, r);
  }
  if (!retrying) (void)::unlinkat(sockets_dir.get(), fmt::format("{}.sock", name).c_str(), 0);
}

void Server::run() {
  serving_ = false;
  stopping_ = false;
  started = ::time(nullptr);
  own_depth_ = pidns_depth(::getpid());
  ledger.set_depth(own_depth_);
  last_activity_ = now_ms();
  while (true) {
    std::vector<struct pollfd> pfds;
    pfds.push_back({wake.get(), POLLIN, 0});
    pfds.push_back({to_pid1.valid() ? to_pid1.get() : -1, POLLIN, 0});
    pfds.push_back({serving_ && !stopping_ ? listener.get() : -1, POLLIN, 0});
    std::vector<int> client_fds;
    for (const auto& [fd, c] : clients_) {
      pfds.push_back({fd, POLLIN, 0});
      client_fds.push_back(fd);
    }
    std::vector<int64_t> job_ids;
    for (const auto& [id, job] : jobs_)
      if (job.pipe) {
        pfds.push_back({job.pipe.get(), POLLIN, 0});
        job_ids.push_back(id);
      }
    int timeout = -1;
    if (idle_ms > 0 && serving_ && !stopping_ && clients_.empty()) {
      const uint64_t idle = now_ms() - last_activity_;
      if (idle >= idle_ms) {
        stop_session();
        continue;
      }
      timeout = static_cast<int>(std::min<uint64_t>(idle_ms - idle, INT_MAX));
    }
    if (const int due = expire_jobs(); due >= 0) timeout = timeout < 0 ? due : std::min(timeout, due);
    if (::poll(pfds.data(), pfds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      stop_session();
    }
    if (pfds[0].revents & POLLIN) {
      uint64_t value = 0;
      (void)!::read(wake.get(), &value, sizeof value);
      return finish(static_cast<int>(value) - 1);
    }
    if (pfds[1].revents & (POLLIN | POLLHUP | POLLERR)) pid1_message();
    if (pfds[2].revents & POLLIN) accept_client();
    std::size_t i = 3;
    for (int fd : client_fds) {
      if (pfds[i].revents != 0 && clients_.contains(fd)) client_message(fd);
      ++i;
    }
    for (int64_t id : job_ids) {
      if (pfds[i].revents != 0)
        if (auto it = jobs_.find(id); it != jobs_.end() && it->second.pipe) read_output(it->second);
      ++i;
    }
  }
}

Result<Fd> bind_control(const Fd& dir, const std::string& name) {
  const std::string path = socket_path(dir, name);
  struct sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return fail(sys_error("bind", path, ENAMETOOLONG));
  std::memcpy(addr.sun_path, path.data(), path.size());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!sock) return fail(sys_error("socket"));
    const mode_t old = ::umask(0177);
    const int r = ::bind(sock.get(), reinterpret_cast<struct sockaddr*>(&addr), sizeof addr);
    const int err = errno;
    ::umask(old);
    if (r == 0) {
      if (::listen(sock.get(), 64) != 0) return fail(sys_error("listen", name));
      return sock;
    }
    if (err != EADDRINUSE || attempt > 0) return fail(sys_error("bind", name, err));
    // A socket left by a session whose nsrun was killed answers nothing.
    auto alive = connect_session(name);
    if (alive) {
      Error e = usage_error("session start", "");
      e.path = name;
      e.detail = "a session of that name is running (nsrun session stop " + name + ")";
      return fail(e);
    }
    if (alive.error().err != ECONNREFUSED) return fail(alive.error());
    if (::unlinkat(dir.get(), fmt::format("{}.sock", name).c_str(), 0) != 0) return fail(sys_error("unlink", name));
  }
  return fail(sys_error("bind", name, EADDRINUSE));
}

std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

struct Daemon {
  Server server;
  pthread_t thread{};
  bool thread_started = false;
};

// The detached process: the launch, with PID 1 serving.
[[noreturn]] void daemon_main(const Policy& policy, Daemon& d, Fd pid1_end) {
  auto layers = layers::Session::open(policy);
  if (!layers) ::_exit(say(layers.error()));
  auto prepared = prepare(layers->policy());
  if (!prepared) {
    (void)layers->discard_unused();
    ::_exit(say(prepared.error()));
  }
  d.server.run_id = layers->run_id();
  if (!layers->run_id().empty())
    fmt::print(stderr, "nsrun: session {}: run {}: the workspace is copy-on-write (nsrun changes {}; nsrun commit {}; "
                       "nsrun discard {}, after nsrun session stop {})\n",
               d.server.name, layers->run_id(), layers->run_id(), layers->run_id(), layers->run_id(), d.server.name);
  std::fflush(stderr);
  // As run() does (launch/launch.cpp): --network-log opened before
  // anything runs (the proxy appends each decision of every exec as it
  // comes), and the protect guard armed for the session's life.
  Fd network_log;
  if (prepared->egress && !policy.egress.log.empty()) {
    auto log = open_network_log(policy);
    if (!log) {
      (void)layers->discard_unused();
      ::_exit(say(log.error()));
    }
    network_log = std::move(*log);
    prepared->egress->log_fd = network_log.get();
  }
  const ProtectWatch protect_watch = watch_protected(policy);
  if (auto r = arm_protect_guard(*prepared, layers->policy(), held_mounts(protect_watch)); !r) {
    (void)layers->discard_unused();
    ::_exit(say(r.error()));
  }
  // The session's spec, const from here on; what its run learns is the
  // attempt's, with the session's hooks (launch/attempt.hpp).
  const LaunchSpec& spec = *prepared;
  // What every exec's report shares (session/exec_report.hpp).
  {
    LaunchReport& base = d.server.report_base.report;
    base.rung = "namespaces";
    base.mode = policy.mode;
    base.proc = spec.plan.proc;
    base.host_backend = policy.host_backend;
    base.seccomp = policy.seccomp;
    base.rungs = {RungReport{"namespaces", true, {}, {}}};
    base.hidden_credentials = layers->policy().hidden_paths;
    base.seccomp_filter = !spec.seccomp.empty();
    base.verdict.limits = spec.limits.decisions;
    base.layers.run_id = layers->run_id();
    if (!layers->run_id().empty()) base.layers.run_layer = layers->policy().layers.workspace.upper;
    if (!layers->policy().layers.home.empty()) base.layers.home = name(layers->policy().home);
    RefusalFacts& facts = d.server.report_base.facts;
    facts = refusal_facts(layers->policy(), false);
    facts.seccomp_filter = base.seccomp_filter;
    d.server.report_base.proxy = spec.egress.has_value();
    // As ReportSink counts them (launch/report.cpp), and the layers'
    // upper directories, which the commands write through their overlays.
    const Policy& lp = layers->policy();
    std::vector<std::string>& dirs = d.server.writable_dirs;
    dirs = lp.writable;
    if (lp.mode == Mode::workspace_write && lp.preset) dirs.push_back(lp.workspace);
    for (const auto& m : lp.mounts)
      if (m.kind == MountOp::Kind::bind || m.kind == MountOp::Kind::dev_bind || m.kind == MountOp::Kind::overlay)
        dirs.push_back(m.source);
    for (const std::string* upper : {&lp.layers.workspace.upper, &lp.layers.home_layer.upper})
      if (!upper->empty()) dirs.push_back(*upper);
  }
  SessionHooks hooks;
  hooks.serve = serve_in_sandbox;
  hooks.tap = &d.server.ledger;
  // Called once --network proxy's process is forked: the thread below is
  // the first of this process.
  hooks.started = [&](pid_t pid1, egress::Egress* proxy) {
    pid1_end.reset();
    if (proxy != nullptr) {
      proxy->observe([ledger = &d.server.ledger](const egress::Decision& decision) { ledger->decision(decision); });
      d.server.settle_egress = proxy->settler();
    } else {
      d.server.settle_egress = nullptr;
    }
    d.server.pid1 = pid1;
    d.server.pid1_fd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid1, 0)));
    if (!d.server.pid1_fd) {
      ::kill(pid1, SIGKILL);
      return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    d.thread_started = ::pthread_create(
                           &d.thread, &attr,
                           [](void* arg) -> void* {
                             static_cast<Server*>(arg)->run();
                             return nullptr;
                           },
                           &d.server) == 0;
    pthread_attr_destroy(&attr);
    if (!d.thread_started) (void)::syscall(SYS_pidfd_send_signal, d.server.pid1_fd.get(), SIGKILL, nullptr, 0);
  };
  auto launch = [&](const LaunchSpec& s) {
    Attempt attempt(s);
    SessionHooks h = hooks;
    h.fd = pid1_end.get();
    attempt.session = std::move(h);
    return run_namespaces(s, attempt);
  };
  // The launch is over (PID 1 reaped): the serving thread ends.
  auto end_thread = [&](int code, bool retry) {
    if (!d.thread_started) return;
    d.server.retrying = retry;
    const uint64_t value = static_cast<uint64_t>(code) + 1;
    (void)!::write(d.server.wake.get(), &value, sizeof value);
    ::pthread_join(d.thread, nullptr);
    d.thread_started = false;
  };
  LaunchOutcome out = launch(spec);
  // The home's overlay refused by this kernel or file system, before the
  // command ran: the same rung again with the caches redirected, as the
  // ladder does for a launch (launch/home_fallback.hpp).
  std::optional<LaunchSpec> redirected;
  if (!out.command_started && out.error && home_overlay_refused(*out.error, spec.plan, layers->policy())) {
    end_thread(out.exit_code, true);
    const std::string why = fmt::format("no overlay for the home here ({}: {})", reason::overlay_unavailable,
                                        out.error->message());
    auto again = cache_redirect_spec(spec, layers->policy(), why);
    int pair[2];
    if (!again) {
      out = LaunchOutcome{};
      out.error = again.error();
    } else if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      out = LaunchOutcome{};
      out.error = sys_error(Operation::socketpair);
    } else {
      d.server.to_pid1 = Fd(pair[0]);
      pid1_end = Fd(pair[1]);
      redirected = std::move(*again);
      out = launch(*redirected);
    }
  }
  int code = out.exit_code;
  end_thread(code, false);
  layers->mark_ended();
  layers->close();
  // What a launch says after its run: the protected paths left behind,
  // the git material the session made or changed, quarantined.
  LaunchReport report;
  report_protected(protect_watch, policy, report, out.error);
  if (!out.command_started) {
    if (out.error) {
      code = say(*out.error);
      const std::string reason = classify_namespace_failure(*out.error, spec.plan.proc);
      if (!reason.empty())
        fmt::print(stderr, "nsrun: session start: the namespace rung is not usable here ({}); {}\n", reason,
                   landlock_refusal());
    }
    if (layers->discard_unused())
      fmt::print(stderr, "nsrun: session {}: its unused run layer was removed\n", d.server.name);
    ::_exit(code == 0 ? 125 : code);
  }
  fmt::print(stderr, "nsrun: session {} ended ({})\n", d.server.name, code);
  std::fflush(stderr);
  ::_exit(0);
}

}  // namespace

int start(const Policy& in, const StartOptions& o) {
  if (!valid_name(o.name))
    return say(usage_error("session start", "a session's name is 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'"));
  auto refuse = [](std::string why) { return say(usage_error("session start", why)); };
  if (in.mode == Mode::full_access) return refuse("full-access: a session is a sandbox");
  if (in.backend == Backend::landlock) return refuse(fmt::format("--backend landlock: {}", landlock_refusal()));
  if (!in.cap_add.empty()) return refuse("--cap-add: a session's commands keep no capabilities");
  if (in.as_pid_1 || !in.ns.pid) return refuse("a session needs its own PID 1 (no --as-pid-1, a PID namespace)");
  if (!in.report_path.empty() || in.report_fd)
    return refuse("--report is for one command: nsrun exec NAME --report FILE -- COMMAND");
  if (!in.pass_fds.empty() || in.block_fd || in.userns_block_fd || in.info_fd || in.json_status_fd || in.userns_fd ||
      in.pidns_fd || !in.seccomp_fds.empty())
    return refuse("descriptors of the caller (--pass-fd, status and namespace fds) are for one command");
  auto sockets = open_sockets_dir(true);
  if (!sockets) return say(sockets.error());
  auto state = open_state_dir(true);
  if (!state) return say(state.error());
  const Places where = places();
  auto own = layers::open_private_dir(fmt::format("{}/{}", where.state, o.name), 0700, true);
  if (!own) return say(own.error());
  auto jobs = layers::open_private_dir(fmt::format("{}/{}/jobs", where.state, o.name), 0700, true);
  if (!jobs) return say(jobs.error());
  auto listener = bind_control(*sockets, o.name);
  if (!listener) return say(listener.error());
  auto unbind = [&] { (void)::unlinkat(sockets->get(), fmt::format("{}.sock", o.name).c_str(), 0); };
  // A command of the session sees neither the control sockets nor the
  // logs (every session's): both are covered as the well-known sockets are.
  Policy policy = in;
  // Observed, as a launch with --verdict is (the refusing rules notify
  // nsrun): any exec may ask for its report. Only refused calls pay.
  policy.verdict = true;
  for (const auto& dir : {where.sockets, where.state})
    if (const std::string real = canonical(dir); !real.empty()) policy.hidden_sockets.push_back(real + "/");
  Fd log(::openat(own->get(), "session.log", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!log) {
    unbind();
    return say(sys_error("open", "session.log"));
  }
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    unbind();
    return say(sys_error("pipe"));
  }
  Fd ready_read(ready[0]), ready_write(ready[1]);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    unbind();
    return say(sys_error(Operation::socketpair));
  }
  Fd host_end(pair[0]), pid1_end(pair[1]);
  Fd wake(::eventfd(0, EFD_CLOEXEC));
  if (!wake) {
    unbind();
    return say(sys_error("eventfd"));
  }
  std::fflush(nullptr);
  const pid_t daemon = ::fork();
  if (daemon < 0) {
    unbind();
    return say(sys_error(Operation::fork, "session"));
  }
  if (daemon == 0) {
    ready_read.reset();
    ::setsid();
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(log.get(), 2);
    ::close(null);
    log.reset();
    // Nothing of the caller's but what the launch needs: a pipe of theirs
    // held open here would keep them waiting for its end.
    sys::close_all_but({listener->get(), sockets->get(), jobs->get(), host_end.get(), pid1_end.get(), ready_write.get(),
                        wake.get()});
    static Daemon d;
    d.server.name = o.name;
    d.server.listener = std::move(*listener);
    d.server.sockets_dir = std::move(*sockets);
    d.server.jobs_dir = std::move(*jobs);
    d.server.to_pid1 = std::move(host_end);
    d.server.ready = std::move(ready_write);
    d.server.wake = std::move(wake);
    d.server.idle_ms = o.idle_timeout_ms;
    d.server.verdict_default = o.verdict;
    d.server.kill_after_ms = policy.limits.kill_after_ms;
    daemon_main(policy, d, std::move(pid1_end));
  }
  listener->reset();
  ready_write.reset();
  host_end.reset();
  pid1_end.reset();
  char r = 0;
  ssize_t n;
  while ((n = ::read(ready_read.get(), &r, 1)) < 0 && errno == EINTR) {
  }
  // What the session's process said while it started (its notes, or why
  // it failed).
  Fd shown(::openat(own->get(), "session.log", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (shown) {
    char buf[4096];
    ssize_t got;
    while ((got = ::read(shown.get(), buf, sizeof buf)) > 0) (void)!::write(2, buf, static_cast<std::size_t>(got));
  }
  if (n == 1 && r == 'R') return 0;
  int status = 0;
  ::waitpid(daemon, &status, 0);
  unbind();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 125;
  return code == 0 ? 125 : code;
}

}  // namespace nsrun::session
