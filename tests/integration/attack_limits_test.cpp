// Attacks on limits and verdicts: a command that floods the refused-call
// supervisor, kills itself in the middle of a notification, or keeps moving
// (a new process, session and group every instant) to slip past the timeout.
// nsrun must stay bounded, answer, and leave nothing behind, on both rungs.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// 100,000 refused keyctl calls from four threads, then a few refused calls
// with numbers no filter knows by name; prints the errno of the last.
constexpr std::string_view flood_py = R"PY(
import ctypes, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def loop():
    for _ in range(25000): libc.syscall(250, 0, 0, 0)   # keyctl
ts = [threading.Thread(target=loop) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
libc.syscall(250, 0, 0, 0)
print('errno', ctypes.get_errno(), flush=True)
)PY";

// Threads wait in refused calls while the process SIGKILLs itself.
constexpr std::string_view die_py = R"PY(
import ctypes, os, signal, threading
libc = ctypes.CDLL(None, use_errno=True)
def loop():
    while True: libc.syscall(250, 0, 0, 0)
for _ in range(8): threading.Thread(target=loop, daemon=True).start()
for _ in range(2000): libc.syscall(250, 0, 0, 0)
os.kill(os.getpid(), signal.SIGKILL)
)PY";

// The command ignores SIGTERM and SIGHUP and waits forever; its child is a
// moving target: every millisecond it forks, lets the parent exit and makes
// the child a new session (a new pid, group and session each time,
// re-parented on each exit).
constexpr std::string_view move_py = R"PY(
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
print('moving', flush=True)
if os.fork():
    while True: time.sleep(60)
while True:
    if os.fork(): os._exit(0)
    os.setsid()
    time.sleep(0.001)
)PY";

// Four threads in refused calls for ever, SIGTERM ignored: the timeout
// must still end it while nsrun answers the flood.
constexpr std::string_view flood_forever_py = R"PY(
import ctypes, signal, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
def loop():
    while True: libc.syscall(250, 0, 0, 0)
ts = [threading.Thread(target=loop) for _ in range(4)]
for t in ts: t.start()
print('flooding', flush=True)
loop()
)PY";

// PTRACE_ATTACH to, and /proc/PID/mem of, PID 1 (the reaper that owns the
// timeout on the namespace rung) and every ancestor up to nsrun.
constexpr std::string_view ptrace_py = R"PY(
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def parent(p): return int(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])
targets, p = {1}, os.getpid()
while True:
    try: p = parent(p)
    except (OSError, ValueError): break
    if p <= 0: break
    targets.add(p)
for t in sorted(targets):
    if libc.ptrace(16, t, 0, 0) == 0:
        print('attached', t); libc.ptrace(17, t, 0, 0)
    try: open('/proc/%d/mem' % t, 'rb').close(); print('mem', t)
    except OSError: pass
print('done', len(targets))
)PY";

// prlimit(2) on each ancestor (nsrun, the test, the user's shell on the
// Landlock rung, which has no PID namespace): lowering nsrun's RLIMIT_CPU
// killed it, and its timeout with it. The command's own limits (pid 0)
// stay its business.
constexpr std::string_view prlimit_py = R"PY(
import os, resource
def parent(p): return int(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])
p, changed = os.getpid(), []
while True:
    try: p = parent(p)
    except (OSError, ValueError): break
    if p <= 0: break
    try:
        soft, hard = resource.prlimit(p, resource.RLIMIT_CORE)
        resource.prlimit(p, resource.RLIMIT_CORE, (soft, hard)); changed.append(p)
    except OSError: pass
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print('changed', changed, 'own', resource.getrlimit(resource.RLIMIT_NOFILE)[0])
# Scheduling of the parent (nsrun on the Landlock rung, PID 1 on the other)
# and of a user's processes, each set to what it already is (a probe must
# not renice the host if the rule were missing); the command's own stays
# its business.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
pp, moved = os.getppid(), []
def ioprio_same():
    cur = libc.syscall(252, 1, pp)
    if cur < 0 or libc.syscall(251, 1, pp, cur) != 0: raise OSError(ctypes.get_errno(), 'ioprio')
for name, call in [('priority', lambda: os.setpriority(os.PRIO_PROCESS, pp, os.getpriority(os.PRIO_PROCESS, pp))),
                   ('affinity', lambda: os.sched_setaffinity(pp, os.sched_getaffinity(pp))),
                   ('ioprio', ioprio_same),
                   # a uid nobody has: ESRCH when allowed, EPERM when refused
                   ('user-priority', lambda: os.setpriority(os.PRIO_USER, 3999999, 0))]:
    try: call(); moved.append(name)
    except OSError as e:
        if e.errno != 1: moved.append(name)
os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)); os.sched_setaffinity(0, os.sched_getaffinity(0))
print('moved', moved)
)PY";

void kill_marked(const std::string& token) {
  for (pid_t p : processes_with_marker(token)) ::kill(p, SIGKILL);
}

void flood(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-flood");
  write_file(ws / "flood.py", flood_py);
  RunOptions o = at(ws);
  o.timeout = 120s;
  RunResult r = nsrun(with(rung_options(rung), {"--report", ws / "r.json", "--", "/usr/bin/python3", ws / "flood.py"}), o);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "errno 1\n");
  const std::string report = read_file(ws / "r.json");
  // One entry per refused system call, with its count: 100,001 calls make
  // one entry, not 100,001.
  CHECK(report.size() < 64 * 1024);
  CHECK(report.find("\"count\":100001") != std::string::npos);
}

void die_mid_notification(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-die");
  write_file(ws / "die.py", die_py);
  const auto started = std::chrono::steady_clock::now();
  RunResult r = nsrun(with(rung_options(rung), {"--report", ws / "r.json", "--", "/usr/bin/python3", ws / "die.py"}),
                      at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(std::chrono::steady_clock::now() - started < 25s);
  CHECK(read_file(ws / "r.json").find("\"syscall\":\"keyctl\"") != std::string::npos);
}

void moving_target(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-move");
  write_file(ws / "move.py", move_py);
  const std::string token = unique_token("atk-move");
  RunResult r = nsrun(with(rung_options(rung), {"--timeout", "1", "--kill-after", "500ms", "--", "/usr/bin/python3",
                                                ws / "move.py", token}),
                      at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 124);
  const bool gone = eventually([&] { return processes_with_marker(token).empty(); }, 5s);
  kill_marked(token);  // never leave one running, whatever the result
  CHECK(gone);
}

void timeout_under_flood(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-flood-timeout");
  write_file(ws / "flood.py", flood_forever_py);
  const auto started = std::chrono::steady_clock::now();
  RunResult r = nsrun(with(rung_options(rung), {"--timeout", "1", "--kill-after", "500ms", "--report", ws / "r.json", "--",
                                                "/usr/bin/python3", ws / "flood.py"}),
                      at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 124);
  CHECK(std::chrono::steady_clock::now() - started < 15s);
  CHECK(read_file(ws / "r.json").find("\"how\":\"timeout\"") != std::string::npos);
}

void no_ptrace_of_the_supervisor(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-ptrace");
  write_file(ws / "ptrace.py", ptrace_py);
  RunResult r = nsrun(with(rung_options(rung), {"--", "/usr/bin/python3", ws / "ptrace.py"}), at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.starts_with("done "));
}

void no_prlimit_of_others(Rung rung) {
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-prlimit");
  write_file(ws / "prlimit.py", prlimit_py);
  RunResult r = nsrun(with(rung_options(rung), {"--", "/usr/bin/python3", ws / "prlimit.py"}), at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.starts_with("changed [] own 64\n"));
  // The namespace rung's parent is the sandbox's own PID 1; the Landlock
  // rung's is nsrun, on the host.
  if (rung == Rung::landlock) CHECK(r.out.find("moved []\n") != std::string::npos);
}

}  // namespace

#define ATTACK_BOTH(title, fn)                                                              \
  TEST_CASE(title " (namespace rung)", "[attack][limits]") { fn(Rung::namespaces); }        \
  TEST_CASE(title " (landlock rung)", "[attack][limits][landlock]") { fn(Rung::landlock); }

ATTACK_BOTH("attack: 100,000 refused calls keep the report bounded and every call refused", flood)
ATTACK_BOTH("attack: a command killed while its threads wait in refused calls does not hang nsrun", die_mid_notification)
ATTACK_BOTH("attack: a process that changes pid, group and session every millisecond still ends at the timeout",
            moving_target)
ATTACK_BOTH("attack: a flood of refused calls does not hold off the timeout", timeout_under_flood)
ATTACK_BOTH("attack: the command cannot ptrace or read the memory of PID 1 or nsrun", no_ptrace_of_the_supervisor)
ATTACK_BOTH("attack: the command cannot change the limits of nsrun or any process outside", no_prlimit_of_others)
