// Attacks on the egress proxy: request tricks that might make the proxy judge
// one host and reach another, floods that might grow nsrun's memory or
// exhaust its descriptors, and DNS packets built to hurt the stub. A server
// at 198.18.0.2 (evil.test, never allowed) writes a line for every connection
// it gets: the test's verdict is that file, on the host, not what the proxy
// answered.
//
// The world is the test's own: `unshare --user --map-root-user --net`
// (only loopback), 198.18.0.1 (web.test, allowed) and 198.18.0.2 added to
// `lo`; nsrun runs inside it, so no packet leaves the test's namespace.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>

using namespace nsrun_test;

namespace {

constexpr std::string_view servers_py = R"PY(
import socket, sys, threading
def listen(addr, port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(128); return s
def web(s):
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(5); c.recv(65536)
            c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nweb')
        except OSError: pass
        c.close()
def evil(s, log):
    while True:
        c, _ = s.accept()
        with open(log, 'a') as f: f.write('reached\n')
        c.close()
def hold(s):
    held = []
    while True: held.append(s.accept()[0])
threading.Thread(target=web, args=(listen('198.18.0.1', 80),), daemon=True).start()
threading.Thread(target=hold, args=(listen('198.18.0.1', 81),), daemon=True).start()
for port in (80, 443):
    threading.Thread(target=evil, args=(listen('198.18.0.2', port), sys.argv[2]), daemon=True).start()
open(sys.argv[1], 'w').write('ok\n')
threading.Event().wait()
)PY";

// Inside the sandbox: each trick prints "name=what came back".
constexpr std::string_view client_py = R"PY(
import os, random, resource, socket, struct
P = ('127.0.0.1', 3128)
def out(k, v): print('%s=%s' % (k, v), flush=True)
def ask(raw):
    s = socket.create_connection(P, timeout=10)
    data = b''
    try:
        s.sendall(raw)
        while True:
            d = s.recv(65536)
            if not d: break
            data += d
    except OSError: pass
    s.close()
    return data.split(b'\r\n', 1)[0].decode(errors='replace') or 'closed'
R = b'\r\n'
out('userinfo', ask(b'GET http://web.test@evil.test/ HTTP/1.1\r\nHost: web.test@evil.test\r\n\r\n'))
out('userinfo_host', ask(b'GET http://web.test@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n'))
out('fragment', ask(b'GET http://evil.test#@web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'))
out('backslash', ask(b'GET http://web.test\\@evil.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'))
out('pct', ask(b'GET http://evil.test%2f@web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'))
out('two_hosts', ask(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\nHost: evil.test\r\n\r\n'))
out('host_other', ask(b'GET http://evil.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'))
out('connect_userinfo', ask(b'CONNECT web.test@evil.test:80 HTTP/1.1\r\nHost: web.test:80\r\n\r\n'))
out('connect_evil', ask(b'CONNECT evil.test:80 HTTP/1.1\r\nHost: web.test:80\r\n\r\n'))
out('connect_space', ask(b'CONNECT web.test:80 evil.test:80 HTTP/1.1\r\n\r\n'))
out('connect_mapped', ask(b'CONNECT [::ffff:198.18.0.2]:80 HTTP/1.1\r\n\r\n'))
out('connect_hex', ask(b'CONNECT 0xc6120002:80 HTTP/1.1\r\n\r\n'))
out('smuggle', ask(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n'))
out('huge_head', ask(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n' + b'X: ' + b'a' * (1 << 20) + b'\r\n\r\n'))
def socks5(name):
    s = socket.create_connection(P, timeout=10)
    s.sendall(b'\x05\x01\x00'); s.recv(2)
    s.sendall(b'\x05\x01\x00\x03' + bytes([len(name)]) + name + struct.pack('>H', 80))
    r = s.recv(10); s.close()
    return r[1] if len(r) > 1 else 'closed'
out('socks5_nul', socks5(b'web.test\x00evil.test'))
out('socks5_colon', socks5(b'evil.test:80'))
out('socks5_port', socks5(b'web.test:80'))
# DNS: a compression loop, a name pointing past the packet, ANY and TXT
# for an allowed name, a 64 KiB query over TCP; then the stub still answers.
def udp(packet):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(packet, ('127.0.0.1', 53))
    try: return s.recv(4096)
    except OSError: return b''
    finally: s.close()
head = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0)
out('dns_loop', len(udp(head + b'\xc0\x0c' + struct.pack('>HH', 1, 1))) >= 0)
out('dns_past', len(udp(head + b'\xc0\xff' + struct.pack('>HH', 1, 1))) >= 0)
def q(name, qtype):
    return head + b''.join(bytes([len(l)]) + l for l in name.split(b'.')) + b'\0' + struct.pack('>HH', qtype, 1)
for name, qtype in [('any', 255), ('txt', 16), ('axfr', 252)]:
    r = udp(q(b'web.test', qtype)); out('dns_' + name, (r[3] & 15) if len(r) > 3 else 'none')
t = socket.create_connection(('127.0.0.1', 53), timeout=5)
try:
    t.sendall(struct.pack('>H', 65535) + b'\x01' * 65535); t.recv(4096)
except OSError: pass
t.close()
r = udp(q(b'web.test', 1)); out('dns_after', (r[3] & 15, r[7]) if len(r) > 7 else 'none')
# A flood of refused queries, each for a new name.
for i in range(20000): udp(q(b'x%d.evil.test' % i, 1))
out('flood', 'done')
# Many connections held open at once, then a normal request.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
held = []
for _ in range(1500):
    try: held.append(socket.create_connection(P, timeout=5))
    except OSError: break
out('held', len(held) >= 1000)
out('while_held_evil', ask(b'CONNECT evil.test:80 HTTP/1.1\r\n\r\n'))
for s in held: s.close()
out('after', ask(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'))
)PY";

// More open tunnels than nsrun has descriptors for (its soft limit is set
// to 1024 by the test), then a daemon in its own session; the command
// ignores SIGTERM and waits.
constexpr std::string_view tunnels_py = R"PY(
import os, resource, signal, socket, sys, time
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
tun, last = [], ''
for i in range(700):
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
        s.sendall(b'CONNECT web.test:81 HTTP/1.1\r\n\r\n')
        r = s.recv(100)
    except OSError as e:
        last = 'error'; break
    if not r.startswith(b'HTTP/1.1 200'):
        last = r.split(b'\r\n', 1)[0].decode(); break
    tun.append(s)
print('tunnels=%d last=%s' % (len(tun), last), flush=True)
if os.fork() == 0:
    os.setsid(); os.execv('/bin/sleep', ['sleep', '300', sys.argv[1]])
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(300)
)PY";

// Runs `nsrun_args -- python3 client` in the test's own network namespace
// with the servers up; `before` is shell run just before nsrun.
RunResult in_world(const TempDir& dir, const std::string& nsrun_args, const std::string& client,
                   const std::string& before = "") {
  for (const char* tool : {"/usr/bin/unshare", "/usr/sbin/ip", "/usr/bin/python3"})
    if (::access(tool, X_OK) != 0) unavailable("egress", std::string(tool) + " is missing");
  write_file(dir / "servers.py", servers_py);
  const std::string q = shell_quote(dir.path());
  const std::string script = "set -e; ip link set lo up; ip addr add 198.18.0.1/32 dev lo; "
                             "ip addr add 198.18.0.2/32 dev lo; mkfifo " + q + "/ready; /usr/bin/python3 " + q +
                             "/servers.py " + q + "/ready " + q + "/evil.log & server=$!; read x < " + q +
                             "/ready; set +e; " + before + shell_quote(nsrun_path()) + " " + nsrun_args +
                             " -- /usr/bin/python3 " + client + "; rc=$?; kill $server; exit $rc";
  RunOptions o = at(dir);
  o.timeout = 240s;
  return run({"unshare", "--user", "--map-root-user", "--net", "--", "/bin/sh", "-c", script}, o);
}

}  // namespace

TEST_CASE("attack: proxy and DNS tricks never reach a denied host; floods keep nsrun bounded and serving",
          "[attack][egress]") {
  require_userns();
  TempDir dir("atk-egress");
  write_file(dir / "client.py", client_py);
  const std::string q = shell_quote(dir.path());
  RunResult r = in_world(dir,
                         "--network proxy --allow-host web.test --resolve-host web.test=198.18.0.1"
                         " --resolve-host evil.test=198.18.0.2 --report " + q + "/r.json --network-log " + q + "/net.log",
                         q + "/client.py");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  // The verdict: nothing reached evil.test's server.
  CHECK_FALSE(file_exists(dir / "evil.log"));
  for (const char* refused : {"userinfo", "userinfo_host", "fragment", "backslash", "pct", "two_hosts", "host_other",
                              "connect_userinfo", "connect_evil", "connect_space", "connect_mapped", "connect_hex"}) {
    INFO(refused);
    CHECK(r.out.find(std::string(refused) + "=HTTP/1.1 4") != std::string::npos);
  }
  // A Content-Length beside a transfer coding: refused before any upstream is chosen.
  CHECK(r.out.find("smuggle=HTTP/1.1 411") != std::string::npos);
  // Refused with 400, or reset while still sending (the answer then lost).
  CHECK((r.out.find("huge_head=HTTP/1.1 4") != std::string::npos || r.out.find("huge_head=closed") != std::string::npos));
  for (const char* refused : {"socks5_nul", "socks5_colon", "socks5_port"}) {
    INFO(refused);
    CHECK(r.out.find(std::string(refused) + "=2\n") != std::string::npos);
  }
  CHECK(r.out.find("dns_after=(0, 1)") != std::string::npos);
  CHECK(r.out.find("held=True") != std::string::npos);
  // At capacity a new connection is closed unanswered (fail closed), or refused.
  CHECK((r.out.find("while_held_evil=closed") != std::string::npos ||
         r.out.find("while_held_evil=HTTP/1.1 4") != std::string::npos));
  CHECK(r.out.find("after=HTTP/1.1 200") != std::string::npos);
  // The report stays bounded however many decisions the command forces,
  // and its totals still count every one; the log has each.
  const std::string report = read_file(dir / "r.json");
  CHECK(report.size() < 1536 * 1024);
  CHECK(report.find("\"reason\":\"not-listed\"") != std::string::npos);
  CHECK(count_lines(read_file(dir / "net.log")) >= 20000);
  const std::size_t denied = report.find("\"denied\":");
  REQUIRE(denied != std::string::npos);
  CHECK(std::stol(report.substr(denied + 9)) >= 20000);
}

TEST_CASE("attack: more tunnels than nsrun has descriptors fail closed, and the timeout still ends everything",
          "[attack][egress]") {
  require_userns();
  TempDir dir("atk-tunnels");
  write_file(dir / "tunnels.py", tunnels_py);
  const std::string q = shell_quote(dir.path());
  const std::string token = unique_token("atk-tunnels");
  RunResult r = in_world(dir,
                         "--network proxy --allow-host web.test --resolve-host web.test=198.18.0.1 --timeout 3 "
                         "--kill-after 500ms --report " + q + "/r.json",
                         q + "/tunnels.py " + token, "ulimit -Sn 1024; ");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 124);
  // Some hundreds of tunnels, then a refusal (or a close) once nsrun ran
  // out: never a crash, never a way around the proxy.
  CHECK(r.out.find("tunnels=") != std::string::npos);
  CHECK(r.out.find("last=HTTP/1.1 2") == std::string::npos);
  CHECK(read_file(dir / "r.json").find("\"how\":\"timeout\"") != std::string::npos);
  CHECK(eventually([&] { return processes_with_marker(token).empty(); }));
  CHECK_FALSE(file_exists(dir / "evil.log"));
}
