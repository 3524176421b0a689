// --network proxy on the Landlock rung: the command shares the
// host's network namespace, so what keeps it in is Landlock (no TCP connect
// or bind at all), the rung's filter (TCP sockets only, no fast open) and
// nsrun's answer to connect() (only the proxy; net/connector.hpp). Each
// attack here is one that port-only Landlock rules would let through. And
// the namespace rung's part of the same promise: no ptrace, no
// process_vm_* in proxy mode.
//
// The world is egress_world.hpp's: a network namespace of the test's own;
// no packet leaves it.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "egress_world.hpp"
#include "harness.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;
using egress::value;

namespace {

// Runs inside the sandbox on the Landlock rung; one "name=result" line each.
// The proxy's port is the one nsrun put into http_proxy.
constexpr std::string_view client_py = R"PY(
import ctypes, os, socket, struct, sys, threading, urllib.request
P = int(os.environ['http_proxy'].rsplit(':', 1)[1])
def out(k, v): print('%s=%s' % (k, v), flush=True)
def err(e): return 'refused:' + (os.strerror(e.errno) if e.errno else str(e))
def try_connect(name, family, addr):
    s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(5)
    try: s.connect(addr); out(name, 'connected:%s' % (s.getpeername(),))
    except OSError as e: out(name, err(e))
def try_call(name, fn):
    try: fn(); out(name, 'ok')
    except OSError as e: out(name, err(e))
what = sys.argv[1]
if what == 'probe':
    try_connect('web80', socket.AF_INET, ('198.18.0.1', 80))
    try_connect('metadata80', socket.AF_INET, ('169.254.169.254', 80))
    try_connect('loopback80', socket.AF_INET, ('127.0.0.1', 80))
    try_connect('other_loopback', socket.AF_INET, ('127.0.0.2', P))
    try_connect('mapped', socket.AF_INET6, ('::ffff:198.18.0.1', 80))
    # The proxy, by a plain connect: what the command gets is a socket to it.
    s = socket.create_connection(('127.0.0.1', P), timeout=10)
    out('proxy_peer', 'proxy' if s.getpeername() == ('127.0.0.1', P) else 'other:%s' % (s.getpeername(),))
    out('urllib', urllib.request.urlopen('http://web.test/', timeout=10).read().decode().strip())
    # From a thread that is not the process's first: nsrun finds it too.
    peers = []
    t = threading.Thread(target=lambda: peers.append(socket.create_connection(('127.0.0.1', P), timeout=10).getpeername()))
    t.start(); t.join()
    out('thread_peer', 'proxy' if peers == [('127.0.0.1', P)] else 'other:%s' % (peers,))
    s6 = socket.socket(socket.AF_INET6); s6.settimeout(10); s6.connect(('::1', P))
    out('proxy_v6', 'connected:' + s6.getpeername()[0])
    # A non-blocking connect keeps O_NONBLOCK; close-on-exec is kept either way.
    n = socket.socket(); n.setblocking(False); rc = n.connect_ex(('127.0.0.1', P))
    out('nonblock', '%s:%s:%s' % (rc in (0, 115), not n.getblocking(), n.get_inheritable()))
    i = socket.socket(); i.set_inheritable(True); i.connect(('127.0.0.1', P))
    out('inheritable', '%s:%s' % (i.get_inheritable(), i.getblocking()))
    try_call('udp4', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    try_call('udp6', lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
    try_call('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
    try_call('sctp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
    try_call('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM))
    try_call('bind', lambda: socket.socket().bind(('127.0.0.1', 0)))
    try_call('bind_any', lambda: socket.socket().bind(('0.0.0.0', 0)))
    try_call('listen', lambda: socket.socket().listen())
    try_call('fastopen', lambda: socket.socket().sendto(b'x', 0x20000000, ('198.18.0.1', 80)))
    name = '\0nsrun-egress-%d' % os.getpid()
    u = socket.socket(socket.AF_UNIX); u.bind(name); u.listen()
    c = socket.socket(socket.AF_UNIX); c.connect(name); out('unix', 'ok')
elif what == 'attack':
    # Tell the test the port, wait for its listener on 198.18.0.1:P.
    open(sys.argv[2], 'w').write('%d\n' % P)
    open(sys.argv[3]).read()
    try_connect('attack_v4', socket.AF_INET, ('198.18.0.1', P))
    try_connect('attack_mapped', socket.AF_INET6, ('::ffff:198.18.0.1', P))
    try_call('attack_fastopen', lambda: socket.socket().sendto(b'x', 0x20000000, ('198.18.0.1', P)))
    # A thread rewrites the address while connect() waits for nsrun's
    # answer (ctypes lets go of the GIL for the call).
    libc = ctypes.CDLL(None, use_errno=True)
    def sin(a): return struct.pack('=H', socket.AF_INET) + struct.pack('!H', P) + socket.inet_aton(a) + bytes(8)
    good, bad = sin('127.0.0.1'), sin('198.18.0.1')
    buf = ctypes.create_string_buffer(good, 16)
    stop = []
    def flip():
        while not stop:
            ctypes.memmove(buf, bad, 16); ctypes.memmove(buf, good, 16)
    t = threading.Thread(target=flip); t.start()
    seen = {'proxy': 0, 'refused': 0, 'elsewhere': 0}
    for _ in range(300):
        s = socket.socket()
        if libc.connect(s.fileno(), buf, 16) == 0:
            seen['proxy' if s.getpeername() == ('127.0.0.1', P) else 'elsewhere'] += 1
        else:
            seen['refused'] += 1
        s.close()
    stop.append(1); t.join()
    out('race', 'proxy=%(proxy)d refused=%(refused)d elsewhere=%(elsewhere)d' % seen)
    # connect() on a unix socket continues in the kernel, which reads the fd
    # and the address again: a thread swaps the fd for a TCP socket and the
    # address for the attacker's meanwhile (Landlock must refuse those).
    path = b'\0nsrun-%07d' % (os.getpid() % 10000000)
    srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1024)
    unix = struct.pack('=H', socket.AF_UNIX) + path
    assert len(unix) == 16
    target = os.dup(srv.fileno())
    u = socket.socket(socket.AF_UNIX); os.dup2(u.fileno(), target); u.close(); ctypes.memmove(buf, unix, 16)
    out('swap_plain', 'connected' if libc.connect(target, buf, 16) == 0 else os.strerror(ctypes.get_errno()))
    stop = []
    def swap():
        while not stop:
            u = socket.socket(socket.AF_UNIX); os.dup2(u.fileno(), target); u.close(); ctypes.memmove(buf, unix, 16)
            for _ in range(200): pass  # a while in the unix state, so both paths are taken
            t4 = socket.socket(); os.dup2(t4.fileno(), target); t4.close(); ctypes.memmove(buf, bad, 16)
    t = threading.Thread(target=swap); t.start()
    counts = {}
    for _ in range(300):
        k = 'connected' if libc.connect(target, buf, 16) == 0 else os.strerror(ctypes.get_errno())
        counts[k] = counts.get(k, 0) + 1
    stop.append(1); t.join()
    out('swap', ' '.join('%s:%d' % kv for kv in sorted(counts.items())))
)PY";

// The attacker's listener on 198.18.0.1:PORT: one line in LOG per
// connection it accepts, then "logged" to the peer. Writes "ok" to READY
// once listening.
constexpr std::string_view attacker_py = R"PY(
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
open(sys.argv[4], 'w').write('ok\n')
while True:
    c, a = s.accept()
    with open(sys.argv[3], 'a') as f: f.write('%s\n' % (a,))
    c.sendall(b'logged\n'); c.close()
)PY";

// A host process (outside the sandbox, in the test's namespace) at the
// proxy's listener: it must get nothing.
constexpr std::string_view host_client_py = R"PY(
import socket, sys
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)
s.sendall(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n')
try: data = s.recv(4096)
except OSError: data = b''
print('host_at_proxy=' + ('closed' if not data else 'answered:' + data.split(b'\r\n')[0].decode()))
)PY";

struct World : egress::World {
  World() {
    write_file(dir / "client.py", client_py);
    write_file(dir / "attacker.py", attacker_py);
    write_file(dir / "host_client.py", host_client_py);
  }
  std::string landlock(const std::string& extra, const std::string& command) {
    return nsrun_cmd("--backend landlock " + extra, command);
  }
};

}  // namespace

TEST_CASE("egress on the Landlock rung: allowed hosts through curl (HTTP and SOCKS5h), denied ones 403, nothing else",
          "[egress][landlock]") {
  require_landlock();
  egress::have_tools();
  World w;
  const std::string report = w.dir / "report.json";
  auto r = w.run(
      w.curl_script("--backend landlock") +
      "echo connect=$(printf 'GET / HTTP/1.1\\r\\nHost: web.test\\r\\nConnection: close\\r\\n\\r\\n' | " +
      w.landlock("", shell_quote(nsrun_path()) + " connect web.test 80 | tail -n 1") + "); " +
      w.landlock("--report " + shell_quote(report), "/usr/bin/python3 " + shell_quote(w.dir / "client.py") + " probe"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  egress::check_curl(r.out);
  // The host's network is right there, but nothing but the proxy answers.
  // bind: Landlock (no port rule); listen: nsrun; sockets and fast open: the filter.
  const char* const eacces = "refused:Permission denied";
  const char* const eperm = "refused:Operation not permitted";
  const std::pair<const char*, const char*> expected[] = {
      {"connect", "hello web web.test"}, {"urllib", "hello web web.test"}, {"web80", eacces}, {"metadata80", eacces}, {"loopback80", eacces},
      {"other_loopback", eacces}, {"mapped", eacces}, {"proxy_peer", "proxy"}, {"thread_peer", "proxy"},
      {"proxy_v6", "connected:::ffff:127.0.0.1"}, {"nonblock", "True:True:False"}, {"inheritable", "True:True"},
      {"udp4", eperm}, {"udp6", eperm}, {"raw", eperm}, {"sctp", eperm}, {"packet", eperm},
      {"bind", eacces}, {"bind_any", eacces}, {"listen", eacces}, {"fastopen", eperm}, {"unix", "ok"},
  };
  for (const auto& [key, want] : expected) {
    INFO(key);
    CHECK(value(r.out, key) == want);
  }
  // The report: each refused connect() and listen(), beside the proxy's own.
  const std::string json = read_file(report);
  CHECK_THAT(json, ContainsSubstring(R"("rung":"landlock")"));
  CHECK_THAT(json, ContainsSubstring(R"("mode":"proxy")"));
  for (const char* target : {R"("host":"198.18.0.1","port":80)", R"("host":"169.254.169.254","port":80)",
                             R"("host":"127.0.0.1","port":80)", R"("host":"::ffff:198.18.0.1","port":80)"}) {
    INFO(target);
    CHECK_THAT(json, ContainsSubstring(std::string(R"("protocol":"connect",)") + target));
  }
  CHECK_THAT(json, ContainsSubstring(R"("reason":"direct-connect")"));
  CHECK_THAT(json, ContainsSubstring(R"("protocol":"listen")"));
  CHECK_THAT(json, ContainsSubstring(R"("denied":6)"));
}

TEST_CASE("egress on the Landlock rung: the proxy's port on another address, a racing address, a host process at the proxy",
          "[egress][landlock]") {
  require_landlock();
  egress::have_tools();
  World w;
  const auto q = [&](const char* name) { return shell_quote(w.dir / name); };
  // The command names the proxy's port; the test then listens on
  // 198.18.0.1 at that port (the address Landlock's port rule alone would
  // let through), and a host process knocks on the proxy.
  auto r = w.run("mkfifo " + q("f1") + " " + q("f2") + " " + q("r3") + "; " +
                 w.landlock("--report " + q("report.json") + " --network-log " + q("net.log"), "/usr/bin/python3 " + q("client.py") + " attack " +
                                                                q("f1") + " " + q("f2")) +
                 " > " + q("inside.out") + " 2>&1 & ns=$!; read port < " + q("f1") + "; " +
                 "/usr/bin/python3 " + q("attacker.py") + " 198.18.0.1 $port " + q("attacker.log") + " " + q("r3") +
                 " & atk=$!; read x < " + q("r3") + "; " +
                 "/usr/bin/python3 " + q("host_client.py") + " $port; " +
                 "echo go > " + q("f2") + "; wait $ns; echo inside_rc=$?; " +
                 // The control: from outside the sandbox the listener is reached.
                 "/usr/bin/python3 -c \"import socket, sys; print('control=' + socket.create_connection(('198.18.0.1', "
                 "int(sys.argv[1])), timeout=5).recv(16).decode().strip())\" $port; kill $atk; cat " + q("inside.out") +
                 "; echo port=$port; echo attacker_accepts=$(cat " + q("attacker.log") + " 2>/dev/null | wc -l)");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(value(r.out, "inside_rc") == "0");
  CHECK(value(r.out, "attack_v4") == "refused:Permission denied");
  CHECK(value(r.out, "attack_mapped") == "refused:Permission denied");
  CHECK(value(r.out, "attack_fastopen") == "refused:Operation not permitted");
  // Every connect() reached the proxy or nothing: nsrun read the address
  // once and never let the command's own connect() run.
  const std::string race = value(r.out, "race");
  CHECK_THAT(race, ContainsSubstring("elsewhere=0"));
  CHECK_FALSE(race.starts_with("proxy=0 "));
  // Only the control's connection reached the attacker.
  // The unix path continues (swap_plain) and, whatever the swapping thread
  // did meanwhile, no connect() reached the attacker.
  CHECK(value(r.out, "swap_plain") == "connected");
  INFO("swap: " << value(r.out, "swap"));
  CHECK(value(r.out, "control") == "logged");
  CHECK(value(r.out, "attacker_accepts") == "1");
  // The proxy's listener is on the host's loopback: a host process's
  // connection is closed unserved.
  CHECK(value(r.out, "host_at_proxy") == "closed");
  const std::string json = read_file(w.dir / "report.json");
  CHECK_THAT(json, ContainsSubstring(R"("protocol":"connect","host":"198.18.0.1","port":)" + value(r.out, "port")));
  CHECK_THAT(json, ContainsSubstring(R"("reason":"not-from-the-sandbox")"));
  // The log streamed the same refusals while the command ran.
  const std::string log = read_file(w.dir / "net.log");
  CHECK_THAT(log, ContainsSubstring(R"("protocol":"connect","host":"198.18.0.1","port":)" + value(r.out, "port")));
  CHECK_THAT(log, ContainsSubstring(R"("reason":"not-from-the-sandbox")"));
}

TEST_CASE("egress on the namespace rung: the command can neither trace nor read the memory of any process",
          "[egress]") {
  require_userns();
  TempDir dir("egress");
  const std::string probe = shell_quote(probe_path());
  // Its own shell is the nearest process it could otherwise trace (PID 1
  // is not dumpable anyway): without the proxy, PTRACE_SEIZE works.
  const std::string script = probe + " ptrace $$; " + probe + " vm-read $$; " + probe + " ptrace 1; " + probe + " vm-read 1";
  auto control = nsrun({"--network", "none", "--", "/bin/sh", "-c", script}, at(dir));
  INFO(control.out << control.err);
  REQUIRE(control.exit_code != 125);
  CHECK(control.out.starts_with("ok\n"));
  CHECK_FALSE(control.out.starts_with("ok\nerror EPERM\n"));
  auto r = nsrun({"--network", "proxy", "--allow-host", "a.test", "--", "/bin/sh", "-c", script}, at(dir));
  INFO(r.out << r.err);
  CHECK(r.out == "error EPERM\nerror EPERM\nerror EPERM\nerror EPERM\n");
}

TEST_CASE("egress on the Landlock rung fails closed where nsrun cannot answer connect()", "[egress][landlock]") {
  require_landlock();
  TempDir dir("egress");
  // An outer nsrun that observes refusals keeps its command from loading a
  // listening filter: the inner launch must stop, not run unanswered.
  auto r = nsrun({"--backend", "landlock", "--verdict", "--", nsrun_path(), "--backend", "landlock", "--network", "proxy",
                  "--allow-host", "a.test", "--", "/bin/sh", "-c", "echo inner-ran"},
                 at(dir));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 125);
  CHECK_THAT(r.out, !ContainsSubstring("inner-ran"));
  CHECK_THAT(r.err, ContainsSubstring("seccomp listener: --network proxy on the Landlock rung answers connect() through it"));
}
