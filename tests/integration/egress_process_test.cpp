// --network proxy: the proxy runs in a process of its own, confined as a
// sandboxed command is (net/confine.hpp), because it parses bytes the
// command writes. While a command inside uses the network, the test's
// namespace (where nsrun runs) looks at that process from outside: its
// filter and no_new_privs, its capabilities, every fd it holds (sockets
// only, none of nsrun's), and that it ends when nsrun is killed. On both
// rungs; the world is egress_world.hpp's (no packet leaves it).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "egress_world.hpp"
#include "harness.hpp"

using namespace nsrun_test;
using egress::value;

namespace {

// Outside the sandbox, in nsrun's namespace: argv[1] is nsrun's pid.
constexpr std::string_view probe_py = R"PY(
import os, select, signal, sys
nsrun = int(sys.argv[1])
def out(k, v): print('%s=%s' % (k, v), flush=True)
def stat(pid):
    text = open('/proc/%d/stat' % pid).read()
    comm = text[text.index('(') + 1:text.rindex(')')]
    return comm, int(text[text.rindex(')') + 2:].split()[1])
proxies = []
for p in os.listdir('/proc'):
    if not p.isdigit(): continue
    try: comm, ppid = stat(int(p))
    except OSError: continue
    if ppid == nsrun and comm == 'nsrun-proxy': proxies.append(int(p))
out('proxies', len(proxies))
proxy = proxies[0]
status = dict(l.split(':', 1) for l in open('/proc/%d/status' % proxy).read().splitlines() if ':' in l)
for k in ('Seccomp', 'NoNewPrivs', 'CapEff', 'CapPrm'): out(k, status[k].strip())
def links(pid):
    d = '/proc/%d/fd' % pid
    return {int(f): os.readlink(d + '/' + f) for f in os.listdir(d)}
fds = links(proxy)
theirs = set(links(nsrun).values())
out('fd_count', len(fds))
out('not_sockets', ','.join('%d:%s' % (f, t) for f, t in sorted(fds.items()) if not t.startswith('socket:')) or 'none')
out('shared_with_nsrun', ','.join(sorted(set(fds.values()) & theirs)) or 'none')
out('low_fds', ','.join(str(f) for f in sorted(fds) if f < 7))
pidfd = os.pidfd_open(proxy)
os.kill(nsrun, signal.SIGKILL)
ready, _, _ = select.select([pidfd], [], [], 20)
out('gone_after_nsrun_killed', 'yes' if ready else 'no')
)PY";

struct ProcessWorld : egress::World {
  ProcessWorld() { write_file(dir / "probe.py", probe_py); }
};

void check_proxy_process(const std::string& rung) {
  ProcessWorld w;
  const std::string f1 = shell_quote(w.dir / "f1"), f2 = shell_quote(w.dir / "f2");
  // The command reaches web.test (the proxy starts), says so, then waits;
  // the probe looks, then kills nsrun; the sandbox ends with it.
  auto r = w.run("mkfifo " + f1 + " " + f2 + "; " +
                 w.nsrun_cmd(rung, "/bin/sh -c 'echo inside=$(/usr/bin/curl -s -S --max-time 20 http://web.test/); echo up > " +
                                       w.dir / "f1" + "; read x < " + w.dir / "f2" + "'") +
                 " & ns=$!; read x < " + f1 + "; /usr/bin/python3 " + shell_quote(w.dir / "probe.py") +
                 " $ns; wait $ns; echo nsrun_status=$?");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(value(r.out, "inside") == "hello web web.test");
  REQUIRE(value(r.out, "proxies") == "1");
  CHECK(value(r.out, "Seccomp") == "2");
  CHECK(value(r.out, "NoNewPrivs") == "1");
  CHECK(value(r.out, "CapEff") == "0000000000000000");
  CHECK(value(r.out, "CapPrm") == "0000000000000000");
  // 0-2 a dead socket, 3 the control socket, then the listeners: three on
  // the namespace rung, one on the Landlock rung; perhaps a connection
  // still closing. No file, no directory, nothing nsrun holds.
  CHECK(value(r.out, "not_sockets") == "none");
  CHECK(value(r.out, "shared_with_nsrun") == "none");
  CHECK(value(r.out, "low_fds") == (rung.empty() ? "0,1,2,3,4,5,6" : "0,1,2,3,4"));
  CHECK(std::stoi(value(r.out, "fd_count")) <= 9);
  CHECK(value(r.out, "gone_after_nsrun_killed") == "yes");
  CHECK(value(r.out, "nsrun_status") == "137");
}

}  // namespace

TEST_CASE("egress: the proxy is a confined process of its own holding only its sockets, and it dies with nsrun",
          "[egress][egress-confine]") {
  require_userns();
  egress::have_tools();
  check_proxy_process("");
}

TEST_CASE("egress on the Landlock rung: the proxy is a confined process of its own too", "[egress][egress-confine][landlock]") {
  require_landlock();
  egress::have_tools();
  check_proxy_process("--backend landlock");
}
