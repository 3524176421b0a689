#include "cli/session_cmd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "cli/native.hpp"
#include "launch/report.hpp"
#include "layers/dirs.hpp"
#include "policy/json.hpp"
#include "policy/limits.hpp"
#include "policy/validate.hpp"
#include "session/host.hpp"
#include "session/paths.hpp"
#include "session/wire.hpp"

namespace nsrun {

namespace {

using session::int_field;
using session::string_field;

int usage(std::string_view what, std::string_view why) {
  fmt::print(stderr, "nsrun: {}: {}\n", what, why);
  return 125;
}

int say(const Error& e) {
  fmt::print(stderr, "nsrun: {}\n", e.message());
  return e.exit_code();
}

Result<Fd> connect_named(std::string_view verb, const std::string& name) {
  if (!session::valid_name(name)) return fail(usage_error(verb, fmt::format("{}: not a session name", printable(name))));
  auto c = session::connect_session(name);
  if (!c) {
    const int err = c.error().err;
    if (err == ENOENT || err == ECONNREFUSED) return fail(usage_error(verb, fmt::format("no session named {}", name)));
    return fail(c.error());
  }
  return c;
}

Result<json::Value> request(int sock, const json::Value& req) {
  if (auto r = session::send_message(sock, req); !r) return fail(r.error());
  auto m = session::receive_message(sock, 0);
  if (!m) return fail(m.error());
  if (m->eof) return fail(usage_error("session", "the session ended"));
  return std::move(m->value);
}

int start_main(std::span<const std::string> args) {
  if (args.empty() || args[0].starts_with("-"))
    return usage("session start", "usage: nsrun session start NAME [OPTIONS] (the options of a launch)");
  session::StartOptions o;
  o.name = args[0];
  auto inv = parse_native(args.subspan(1), read_caller_context());
  if (!inv) return say(inv.error());
  if (inv->action != Invocation::Action::run) return usage("session start", "takes the options of a launch only");
  if (!inv->policy.argv.empty())
    return usage("session start", fmt::format("a session starts no command; run it with nsrun exec {} -- COMMAND", o.name));
  // A session is observed as a launch with --verdict is (session/host.cpp),
  // so --watch-writes has its reader: each exec's report.
  o.verdict = inv->policy.verdict;
  inv->policy.verdict = true;
  if (auto r = validate(inv->policy, false, inv->mount_options); !r) return say(r.error());
  o.idle_timeout_ms = inv->idle_timeout_ms.value_or(0);
  return session::start(inv->policy, o);
}

int stop_main(std::span<const std::string> args) {
  if (args.size() != 1) return usage("session stop", "usage: nsrun session stop NAME");
  auto sock = connect_named("session stop", args[0]);
  if (!sock) return say(sock.error());
  json::Value req = json::Value::object();
  req.set("op", "stop");
  auto reply = request(sock->get(), req);
  if (!reply) return say(reply.error());
  // Returns once the session has ended: its nsrun closes the connection
  // as it exits, after PID 1 (and with it every process) is gone.
  while (true) {
    auto m = session::receive_message(sock->get(), 0);
    if (!m || m->eof) break;
  }
  return 0;
}

int list_main(std::span<const std::string> args) {
  bool as_json = false;
  for (const auto& a : args) {
    if (a == "--json") as_json = true;
    else return usage("session list", "usage: nsrun session list [--json]");
  }
  json::Value all = json::Value::array();
  if (auto dir = session::open_sockets_dir(false)) {
    Fd listing(::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto names = listing ? layers::list_dir(listing.get(), session::places().sockets) : Result<std::vector<std::string>>{};
    if (names)
      for (const auto& entry : *names) {
        if (!entry.ends_with(".sock")) continue;
        const std::string name = entry.substr(0, entry.size() - 5);
        if (!session::valid_name(name)) continue;
        auto sock = session::connect_session(name);
        if (!sock) continue;  // stale: its nsrun was killed
        json::Value req = json::Value::object();
        req.set("op", "status");
        if (auto reply = request(sock->get(), req)) all.push_back(std::move(*reply));
      }
  }
  if (as_json) {
    fmt::print("{}\n", json::dump(all, false));
    return 0;
  }
  for (const auto& s : all.as_array()) {
    const std::string* name = string_field(s, "name");
    const time_t started = static_cast<time_t>(int_field(s, "started").value_or(0));
    struct tm tm{};
    ::gmtime_r(&started, &tm);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const std::string* run = string_field(s, "run_id");
    fmt::print("{}\tpid {}\t{} running job(s)\tsince {}{}\n", name ? *name : "?", int_field(s, "pid").value_or(0),
               int_field(s, "running_jobs").value_or(0), when, run ? fmt::format("\trun {}", *run) : "");
  }
  return 0;
}

constexpr std::string_view exec_usage =
    "usage: nsrun exec NAME [--cwd DIR] [--env NAME=VALUE]... [--timeout DURATION] [--background | [--verdict] "
    "[--report FILE | --report-fd N]] -- COMMAND...";

// Where the exec's report goes, opened before the command runs. A file
// in a directory the session's commands may write is refused: they run
// on after this exec (a background job could rewrite the report), so
// the session is asked which directories those are.
Result<ReportSink> open_exec_report(int sock, const std::string& path, std::optional<int> fd) {
  Policy where;
  where.mode = Mode::read_only;
  where.preset = false;
  where.report_fd = fd;
  where.report_path = path;
  if (!path.empty()) {
    json::Value req = json::Value::object();
    req.set("op", "status");
    auto reply = request(sock, req);
    if (!reply) return fail(reply.error());
    auto dirs = session::strings_field(*reply, "writable");
    if (!dirs) return fail(usage_error("--report", "the session did not say which directories its commands write"));
    where.writable = std::move(*dirs);
  }
  return ReportSink::open_outside_writable(where);
}

std::optional<int> fd_number(const std::string& s) {
  int n = -1;
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  if (std::from_chars(s.data(), s.data() + s.size(), n).ec != std::errc()) return std::nullopt;
  return n;
}

int exec_main(std::span<const std::string> args) {
  if (args.empty() || args[0].starts_with("-")) return usage("exec", exec_usage);
  const std::string name = args[0];
  std::string cwd;
  std::vector<std::string> env;
  bool background = false;
  bool verdict = false;
  std::string report_path;
  std::optional<int> report_fd;
  uint64_t timeout_ms = 0;
  std::size_t i = 1;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (!a.starts_with("-")) break;
    if (a == "--background") {
      background = true;
    } else if (a == "--verdict") {
      verdict = true;
    } else if (a == "--timeout") {
      if (i + 1 >= args.size()) return usage(a, "needs a value");
      auto ms = parse_duration_ms("--timeout", args[++i]);
      if (!ms) return say(ms.error());
      if (*ms == 0) return usage("--timeout", "must be above 0");
      timeout_ms = *ms;
    } else if (a == "--report" || a == "--report-fd") {
      if (i + 1 >= args.size()) return usage(a, "needs a value");
      const std::string& v = args[++i];
      if (a == "--report") {
        if (v.empty()) return usage("--report", "empty path");
        report_path = v;
      } else {
        report_fd = fd_number(v);
        if (!report_fd) return usage("--report-fd", fmt::format("{}: not a descriptor number", printable(v)));
      }
    } else if (a == "--cwd" || a == "--env") {
      if (i + 1 >= args.size()) return usage(a, "needs a value");
      const std::string& v = args[++i];
      if (a == "--cwd") {
        if (v.empty()) return usage("--cwd", "empty path");
        cwd = v;
      } else {
        if (v.find('=') == std::string::npos || v.front() == '=') return usage("--env", "takes NAME=VALUE");
        env.push_back(v);
      }
    } else {
      return usage(a, "unknown option of nsrun exec (--cwd DIR, --env NAME=VALUE, --timeout DURATION, --background, "
                      "--verdict, --report FILE, --report-fd N)");
    }
  }
  const bool wants_report = verdict || !report_path.empty() || report_fd.has_value();
  if (background && wants_report)
    return usage("exec", "--verdict and --report are for a foreground exec (a background job's caller does not wait "
                         "for its end)");
  if (i >= args.size()) return usage("exec", "no command: nsrun exec NAME -- COMMAND...");
  std::vector<std::string> argv(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  auto sock = connect_named("exec", name);
  if (!sock) return say(sock.error());
  ReportSink sink;
  if (!report_path.empty() || report_fd) {
    auto opened = open_exec_report(sock->get(), report_path, report_fd);
    if (!opened) return say(opened.error());
    sink = std::move(*opened);
  }
  // Termination requests go to the command (it is in a session of its own,
  // so the terminal's Ctrl-C reaches only this process).
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&forwarded, s);
  if (!background) ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  json::Value req = json::Value::object();
  req.set("op", "exec");
  req.set("argv", session::strings_value(argv));
  req.set("env", session::strings_value(env));
  if (!cwd.empty()) req.set("cwd", cwd);
  req.set("background", background);
  if (wants_report) req.set("report", true);
  if (timeout_ms > 0) req.set("timeout_ms", static_cast<int64_t>(timeout_ms));
  const int stdio[3] = {0, 1, 2};
  if (auto r = session::send_message(sock->get(), req, background ? std::span<const int>() : std::span<const int>(stdio));
      !r)
    return say(r.error());
  Fd sigfd(background ? -1 : ::signalfd(-1, &forwarded, SFD_CLOEXEC));
  while (true) {
    struct pollfd pfd[2] = {{sock->get(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}};
    if (::poll(pfd, sigfd ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return say(sys_error("poll"));
    }
    if (sigfd && (pfd[1].revents & POLLIN)) {
      struct signalfd_siginfo si{};
      if (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        json::Value s = json::Value::object();
        s.set("op", "signal");
        s.set("signal", static_cast<int64_t>(si.ssi_signo));
        (void)session::send_message(sock->get(), s);
      }
    }
    if (pfd[0].revents == 0) continue;
    auto m = session::receive_message(sock->get(), 0);
    if (!m) return say(m.error());
    if (m->eof) return usage("exec", "the session ended");
    const json::Value& v = m->value;
    if (const std::string* error = string_field(v, "error")) fmt::print(stderr, "nsrun: {}\n", printable(*error));
    if (const auto code = int_field(v, "exit")) {
      int status = static_cast<int>(*code);
      // Made by the session's nsrun, as a launch makes its own; printed
      // when asked here, or by the session's --verdict.
      const std::string* line = string_field(v, "verdict");
      if ((verdict || session::bool_field(v, "print_verdict")) && line != nullptr && !line->empty())
        fmt::print(stderr, "{}\n", *line);
      else if (const std::string* timed_out = string_field(v, "timed_out"); timed_out != nullptr)
        fmt::print(stderr, "{}\n", printable(*timed_out));
      if (!wants_report) return status;
      const json::Value* report = v.find("report");
      if (!sink.empty()) {
        if (report == nullptr || !report->is_object()) {
          const std::string* why = string_field(v, "report_error");
          fmt::print(stderr, "nsrun: exec: no report ({})\n", why != nullptr ? printable(*why) : "the session sent none");
          return status == 0 ? 125 : status;
        }
        if (auto w = sink.write(*report); !w) {
          fmt::print(stderr, "nsrun: {}\n", w.error().message());
          if (status == 0) status = 125;
        }
      }
      return status;
    }
    if (background && int_field(v, "job")) {
      fmt::print("{}\n", *int_field(v, "job"));
      return 0;
    }
  }
}

int jobs_main(std::span<const std::string> args) {
  bool as_json = false;
  std::optional<std::string> name;
  for (const auto& a : args) {
    if (a == "--json") as_json = true;
    else if (!name && !a.starts_with("-")) name = a;
    else return usage("jobs", "usage: nsrun jobs NAME [--json]");
  }
  if (!name) return usage("jobs", "usage: nsrun jobs NAME [--json]");
  auto sock = connect_named("jobs", *name);
  if (!sock) return say(sock.error());
  json::Value req = json::Value::object();
  req.set("op", "jobs");
  auto reply = request(sock->get(), req);
  if (!reply) return say(reply.error());
  const json::Value* jobs = reply->find("jobs");
  if (jobs == nullptr || !jobs->is_array()) return usage("jobs", "the session's answer has no jobs");
  if (as_json) {
    fmt::print("{}\n", json::dump(*jobs, false));
    return 0;
  }
  for (const auto& j : jobs->as_array()) {
    std::string cmd;
    if (const json::Value* argv = j.find("argv"); argv != nullptr && argv->is_array())
      for (const auto& a : argv->as_array())
        if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + printable(a.as_string());
    const auto exit = int_field(j, "exit");
    const std::string* state = string_field(j, "state");
    fmt::print("{}\t{}\t{}\t{}\n", int_field(j, "job").value_or(0), state ? *state : "?",
               exit ? std::to_string(*exit) : "-", cmd);
  }
  return 0;
}

// Digits only (from_chars: the static nsrun carries no std::stoll and
// the exceptions behind it).
std::optional<int64_t> job_number(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int64_t n = 0;
  if (std::from_chars(s.data(), s.data() + s.size(), n).ec != std::errc()) return std::nullopt;
  return n;
}

std::optional<int> signal_number(const std::string& s) {
  if (auto n = job_number(s); n && *n >= 1 && *n <= 64) return static_cast<int>(*n);
  std::string_view name = s;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  for (int i = 1; i < 32; ++i)
    if (const char* abbrev = sigabbrev_np(i); abbrev != nullptr && name == abbrev) return i;
  return std::nullopt;
}

int kill_main(std::span<const std::string> args) {
  std::vector<std::string> pos;
  int sig = SIGTERM;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--signal" && i + 1 < args.size()) {
      auto s = signal_number(args[++i]);
      if (!s) return usage("--signal", fmt::format("{}: not a signal", printable(args[i])));
      sig = *s;
    } else {
      pos.push_back(args[i]);
    }
  }
  if (pos.size() != 2 || !job_number(pos[1])) return usage("kill", "usage: nsrun kill NAME JOB [--signal SIG]");
  auto sock = connect_named("kill", pos[0]);
  if (!sock) return say(sock.error());
  json::Value req = json::Value::object();
  req.set("op", "kill");
  req.set("job", *job_number(pos[1]));
  req.set("signal", sig);
  auto reply = request(sock->get(), req);
  if (!reply) return say(reply.error());
  if (const std::string* error = string_field(*reply, "error"))
    return usage("kill", fmt::format("job {}: {}", pos[1], printable(*error)));
  return 0;
}

// Copies the log file `file` in `dir` from byte `from` to stdout; the
// bytes copied.
uint64_t copy_log(int dir, const std::string& file, uint64_t from, uint64_t limit = UINT64_MAX) {
  Fd f(::openat(dir, file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f) return 0;
  uint64_t done = 0;
  char buf[65536];
  while (done < limit) {
    const ssize_t n = ::pread(f.get(), buf, std::min<uint64_t>(sizeof buf, limit - done), static_cast<off_t>(from + done));
    if (n <= 0) break;
    std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
    done += static_cast<uint64_t>(n);
  }
  std::fflush(stdout);
  return done;
}

int logs_main(std::span<const std::string> args) {
  bool follow = false;
  std::vector<std::string> pos;
  for (const auto& a : args) {
    if (a == "--follow" || a == "-f") follow = true;
    else pos.push_back(a);
  }
  if (pos.size() != 2 || !job_number(pos[1]) || !session::valid_name(pos[0]))
    return usage("logs", "usage: nsrun logs NAME JOB [--follow]");
  auto state = session::open_state_dir(false);
  if (!state) return say(state.error());
  auto jobs = layers::open_private_dir(fmt::format("{}/{}/jobs", session::places().state, pos[0]), 0700, false);
  if (!jobs) return usage("logs", fmt::format("no logs of a session named {}", pos[0]));
  const std::string file = fmt::format("{}.log", pos[1]);
  if (!follow) {
    copy_log(jobs->get(), file + ".1", 0);
    copy_log(jobs->get(), file, 0);
    return 0;
  }
  auto sock = connect_named("logs", pos[0]);
  if (!sock) return say(sock.error());
  uint64_t offset = 0;  // of the job's whole output, printed so far
  bool first = true;
  while (true) {
    json::Value req = json::Value::object();
    req.set("op", "output");
    req.set("job", *job_number(pos[1]));
    req.set("offset", static_cast<int64_t>(offset));
    auto reply = request(sock->get(), req);
    if (!reply) return say(reply.error());
    if (const std::string* error = string_field(*reply, "error")) return usage("logs", printable(*error));
    const uint64_t total = static_cast<uint64_t>(int_field(*reply, "total").value_or(0));
    const uint64_t base = static_cast<uint64_t>(int_field(*reply, "base").value_or(0));
    if (first && base > 0) copy_log(jobs->get(), file + ".1", 0);
    first = false;
    const uint64_t from = offset > base ? offset - base : 0;
    if (total > base + from) copy_log(jobs->get(), file, from, total - base - from);
    offset = total;
    if (!session::bool_field(*reply, "open")) return 0;
  }
}

}  // namespace

bool is_session_command(std::string_view verb) {
  return verb == "session" || verb == "exec" || verb == "jobs" || verb == "logs" || verb == "kill";
}

int session_main(std::span<const std::string> args) {
  const std::string& verb = args[0];
  auto rest = args.subspan(1);
  if (verb == "exec") return exec_main(rest);
  if (verb == "jobs") return jobs_main(rest);
  if (verb == "logs") return logs_main(rest);
  if (verb == "kill") return kill_main(rest);
  if (rest.empty()) return usage("session", "usage: nsrun session start|stop|list ...");
  if (rest[0] == "start") return start_main(rest.subspan(1));
  if (rest[0] == "stop") return stop_main(rest.subspan(1));
  if (rest[0] == "list") return list_main(rest.subspan(1));
  return usage("session", fmt::format("{}: unknown (start, stop, list)", printable(rest[0])));
}

}  // namespace nsrun
