#include "session/pid1.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "ns/channel.hpp"
#include "ns/reaper.hpp"
#include "session/exec_spec.hpp"
#include "session/wire.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::session {

namespace {

struct Pid1;

struct JobStart {
  Pid1* pid1;
  const LaunchSpec* spec;  // the command's (exec_spec())
  Attempt* a;              // the command's start's
  int channel;
  int in, out, err;
  const char* cwd;
};

int job_main(void* arg);

struct Pid1 {
  const LaunchSpec& p;  // the session's
  const Attempt& a;     // PID 1's
  int sock;
  const sigset_t& original_mask;
  const CommandSetup& setup;
  std::map<pid_t, int64_t> running;  // pid -> job
  std::map<int64_t, pid_t> groups;   // job -> its process group (its pid)

  void reply(const json::Value& v) {
    // nsrun gone: the session is over.
    if (!send_message(sock, v)) ::_exit(0);
  }

  void start(const json::Value& req, std::vector<Fd>& fds) {
    const auto job = int_field(req, "job");
    auto argv = strings_field(req, "argv");
    auto env = strings_field(req, "env");
    const std::string* cwd = string_field(req, "cwd");
    if (!job) ::_exit(0);
    auto refuse = [&](const Error& e) {
      json::Value r = json::Value::object();
      r.set("job", *job);
      r.set("error", e.message());
      r.set("code", e.exit_code());
      reply(r);
    };
    if (!argv || argv->empty() || !env || cwd == nullptr || (fds.size() != 3 && fds.size() != 1))
      return refuse(usage_error("exec", "malformed request"));
    auto channel = make_channel();
    if (!channel) return refuse(channel.error());
    // A spec of its own, made from the session's, and a fresh attempt:
    // both shared with the command's start until its exec (see job_main).
    const LaunchSpec spec = exec_spec(p, *argv, *env);
    Attempt attempt(spec, a.timeline);
    attempt.keep_caps = a.keep_caps;
    attempt.words_fd = a.words_fd;
    JobStart js{this, &spec, &attempt, channel->child.get(), fds.size() == 3 ? fds[0].get() : 0,
                fds.size() == 3 ? fds[1].get() : fds[0].get(), fds.size() == 3 ? fds[2].get() : fds[0].get(),
                cwd->c_str()};
    const pid_t pid = spawn(js);
    if (pid < 0) return refuse(sys_error(Operation::fork, "command"));
    fds.clear();
    channel->child.reset();
    auto report = receive_until_eof(channel->parent.get());
    json::Value r = json::Value::object();
    r.set("job", *job);
    if (!report || report->error || !report->exec_next) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      Error e = !report ? report.error()
                        : report->error ? *report->error
                                        : usage_error("exec", "the command's process died before its exec");
      r.set("error", e.message());
      r.set("code", e.exit_code());
      reply(r);
      return;
    }
    running[pid] = *job;
    groups[*job] = pid;
    r.set("pid", static_cast<int64_t>(pid));
    reply(r);
  }

  // The command starts as the launch's does (launch/command.cpp spawn_command()):
  // CLONE_VM|CLONE_VFORK on a stack of its own, PID 1 suspended until the
  // exec, so no page table of PID 1 is copied per command.
  pid_t spawn(JobStart& js) {
    constexpr std::size_t stack_size = 256 * 1024;
    void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return -1;
    const pid_t pid = ::clone(job_main, static_cast<char*>(stack) + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &js);
    const int err = errno;
    ::munmap(stack, stack_size);
    errno = err;
    return pid;
  }

  void kill_job(const json::Value& req) {
    const auto job = int_field(req, "job");
    const auto sig = int_field(req, "signal");
    if (!job || !sig || *sig < 1 || *sig > 64) ::_exit(0);
    if (auto it = groups.find(*job); it != groups.end()) ::kill(-it->second, static_cast<int>(*sig));
  }

  void reap() {
    while (true) {
      int status = 0;
      struct rusage ru{};
      const pid_t pid = ::wait4(-1, &status, WNOHANG, &ru);
      if (pid <= 0) return;
      auto it = running.find(pid);
      if (it == running.end()) continue;  // an orphan of the session
      json::Value r = json::Value::object();
      r.set("job", it->second);
      r.set("exit", exit_status(status));
      // For the exec's report: the raw status (a signal told from an exit
      // with 128+N) and what the command and the children it waited for used.
      r.set("status", static_cast<int64_t>(status));
      r.set("user_us", static_cast<int64_t>(ru.ru_utime.tv_sec) * 1'000'000 + ru.ru_utime.tv_usec);
      r.set("sys_us", static_cast<int64_t>(ru.ru_stime.tv_sec) * 1'000'000 + ru.ru_stime.tv_usec);
      r.set("maxrss_kb", static_cast<int64_t>(ru.ru_maxrss));
      running.erase(it);
      reply(r);
    }
  }

  [[noreturn]] void loop(int sigfd) {
    while (true) {
      struct pollfd pfd[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
      if (::poll(pfd, 2, -1) < 0) {
        if (errno == EINTR) continue;
        ::_exit(125);
      }
      if (pfd[1].revents & POLLIN) {
        struct signalfd_siginfo si{};
        while (::read(sigfd, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGCHLD) continue;
          // A termination request or the timeout's: the session ends, and
          // the kernel ends every process of the PID namespace with PID 1.
          if (si.ssi_signo != SIGWINCH) ::_exit(si.ssi_signo == static_cast<uint32_t>(end_sandbox_signal()) ? 124 : 0);
        }
        reap();
      }
      if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        auto m = receive_message(sock, max_fds);
        // nsrun is gone or spoke nonsense: nothing is left to serve.
        if (!m || m->eof) ::_exit(0);
        const std::string* op = string_field(m->value, "op");
        if (op == nullptr) ::_exit(0);
        if (*op == "start") start(m->value, m->fds);
        else if (*op == "kill") kill_job(m->value);
        else ::_exit(0);
        reap();
      }
    }
  }
};

// The command's process until its exec: its fd table and working
// directory are its own (no CLONE_FILES, CLONE_FS), its memory PID 1's.
int job_main(void* arg) {
  auto* js = static_cast<JobStart*>(arg);
  if ((js->in != 0 && ::dup2(js->in, 0) < 0) || ::dup2(js->out, 1) < 0 || ::dup2(js->err, 2) < 0) {
    send_error(js->channel, sys_error(Operation::dup, "stdio"));
    ::_exit(125);
  }
  // The session's directory is where relative paths start.
  if (::chdir(js->spec->plan.chdir.c_str()) != 0 || ::chdir(js->cwd) != 0) {
    send_error(js->channel, sys_error(Operation::chdir, js->cwd));
    ::_exit(125);
  }
  start_command(js->channel, *js->spec, *js->a, js->pid1->original_mask, js->pid1->setup);
}

}  // namespace

void serve_in_sandbox(const LaunchSpec& p, Attempt& a, int channel, const sigset_t& original_mask,
                      const CommandSetup& setup, const std::vector<Fd>& keep) {
  // Only a PID 1 that confined itself as the command would be serves: a
  // command keeping capabilities (--cap-add) has no place in a session.
  if (!setup.confined_by_parent) {
    send_error(channel, usage_error("session", "PID 1 is not confined as a command (--cap-add)"));
    ::_exit(125);
  }
  const int sock = a.session ? a.session->fd : -1;
  std::vector<int> held{sock, channel, a.words_fd, a.last_pid_fd};
  for (const auto& fd : keep) held.push_back(fd.get());
  sys::close_all_but(held);
  // The sandbox's own /dev/null on 0, 1, 2: PID 1 keeps nothing of the
  // caller's stdio (nor of nsrun's log), writes to none of them, and a
  // background job's stdin is this one. Read-only: nsrun serves the
  // listener only once the channel is closed, and with --watch-writes an
  // open for writing is one of the calls it is sent (seccomp/writes.hpp).
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0) {
    send_error(channel, sys_error(Operation::open, "/dev/null"));
    ::_exit(125);
  }
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  ::close(null);
  const sigset_t signals = launch_signals();
  const int sigfd = ::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    send_error(channel, sys_error("signalfd"));
    ::_exit(125);
  }
  // What a command's exec would say: the sandbox is ready.
  send_timeline(channel, a.timeline.encode());
  ::close(channel);
  Pid1 pid1{p, a, sock, original_mask, setup, {}, {}};
  json::Value ready = json::Value::object();
  ready.set("ready", true);
  pid1.reply(ready);
  pid1.loop(sigfd);
}

}  // namespace nsrun::session
