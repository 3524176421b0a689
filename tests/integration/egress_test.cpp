// --network proxy: what a command can reach through nsrun's
// egress proxy, and every trick to reach something else.
//
// Each test makes its own world: `unshare --user --map-root-user --net`
// gives a network namespace (only loopback) where 198.18.0.1 and
// 169.254.169.254 are added to `lo` and small Python servers listen. nsrun
// runs inside that namespace, so its proxy reaches those servers and
// nothing else; names are mapped with --resolve-host. No packet leaves the
// test's namespace.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <unistd.h>

#include "egress_world.hpp"
#include "harness.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {

// Runs inside the sandbox: each trick against the proxy at 127.0.0.1:3128,
// one "name=result" line each.
constexpr std::string_view client_py = R"PY(
import os, socket, struct, sys, urllib.request
P = ('127.0.0.1', 3128)
def out(k, v): print('%s=%s' % (k, v), flush=True)
def conn():
    s = socket.create_connection(P, timeout=10); return s
def recv_all(s):
    data = b''
    while True:
        try: d = s.recv(4096)
        except OSError: break
        if not d: break
        data += d
    return data
def status(raw):
    line = raw.split(b'\r\n', 1)[0].decode(errors='replace')
    err = ''
    for h in raw.split(b'\r\n'):
        if h.lower().startswith(b'x-proxy-error:'): err = h.split(b':', 1)[1].strip().decode()
    return (line.split(' ')[1] if ' ' in line else 'none') + ('/' + err if err else '')
def connect_status(target):
    s = conn(); s.sendall(b'CONNECT ' + target.encode() + b' HTTP/1.1\r\nHost: ' + target.encode() + b'\r\n\r\n')
    return status(recv_all(s) if True else b'')
def connect_head(target):
    s = conn(); s.sendall(b'CONNECT ' + target.encode() + b' HTTP/1.1\r\n\r\n')
    data = b''
    while b'\r\n\r\n' not in data:
        d = s.recv(4096)
        if not d: break
        data += d
    return s, status(data)
def hello(sni):
    u16 = lambda v: struct.pack('>H', v)
    ext = b''
    if sni:
        e = b'\0' + u16(len(sni)) + sni.encode(); l = u16(len(e)) + e
        ext = u16(0) + u16(len(l)) + l
    body = b'\3\3' + b'r' * 32 + b'\0' + u16(2) + b'\x13\x01' + b'\1\0' + u16(len(ext)) + ext
    hs = b'\1\0' + u16(len(body)) + body
    return b'\x16\3\1' + u16(len(hs)) + hs
def socks5(atyp, addr, port):
    s = conn(); s.sendall(b'\5\1\0'); s.recv(2)
    s.sendall(b'\5\1\0' + bytes([atyp]) + addr + struct.pack('>H', port))
    r = s.recv(10)
    return s, (r[1] if len(r) > 1 else -1)
def dns(name, qtype=1):
    q = b'\x12\x34\1\0\0\1\0\0\0\0\0\0' + b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\0' + struct.pack('>HH', qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
    s.sendto(q, ('127.0.0.1', 53)); r = s.recv(4096)
    rcode = r[3] & 15; n = struct.unpack('>H', r[6:8])[0]
    return '%d/%d/%s' % (rcode, n, socket.inet_ntoa(r[-4:]) if rcode == 0 and n and qtype == 1 else '-')

what = sys.argv[1]
if what == 'urllib':
    out('urllib', urllib.request.urlopen('http://web.test/', timeout=10).read().decode().strip())
    try: urllib.request.urlopen('http://other.test/', timeout=10); out('urllib_denied', 'no')
    except urllib.error.HTTPError as e: out('urllib_denied', '%d/%s' % (e.code, e.headers.get('X-Proxy-Error')))
elif what == 'direct':
    for a in ['198.18.0.1', '169.254.169.254']:
        try: socket.create_connection((a, 80), timeout=5); out('direct_' + a, 'connected')
        except OSError as e: out('direct_' + a, 'refused:' + (e.strerror or str(e)))
elif what == 'tricks':
    for name, target in [('dec', '2130706433:80'), ('hex', '0x7f.1:80'), ('octal', '0177.0.0.1:80'), ('mapped', '[::ffff:127.0.0.1]:80'),
                         ('literal_of_allowed', '198.18.0.1:80'), ('metadata_literal', '169.254.169.254:80'),
                         ('apex', 'sub.test:80'), ('wildcard', 'a.sub.test:80'), ('deny', 'bad.sub.test:80'),
                         ('trailing_dot', 'web.test.:80'), ('upper', 'WEB.Test:80'), ('to_loopback', 'local.test:80'),
                         ('to_metadata', 'meta.test:80'), ('other', 'other.test:80'), ('idn', 'w\u00e9b.test:80'),
                         ('port', 'tls.test:80')]:
        s, st = connect_head(target)
        out(name, st)
    for name, sni in [('sni_match', 'tls.test'), ('sni_other', 'web.test'), ('sni_none', '')]:
        s, st = connect_head('tls.test:443')
        s.sendall(hello(sni))
        out(name, st + ':' + (recv_all(s).decode().strip() or 'closed'))
    s = conn(); s.sendall(b'GET http://web.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n'); out('host_mismatch', status(recv_all(s)))
    s = conn(); s.sendall(b'GET http://web.test/ HTTP/1.1\r\n\r\n'); out('host_missing', status(recv_all(s)))
    s = conn(); s.sendall(b'GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n'); out('host_same', recv_all(s).split(b'\r\n\r\n', 1)[-1].decode().strip())
    s, code = socks5(3, b'\x0aother.test', 80); out('socks5_other', code)
    s, code = socks5(1, socket.inet_aton('127.0.0.1'), 80); out('socks5_loopback', code)
    s, code = socks5(4, socket.inet_pton(socket.AF_INET6, '::ffff:169.254.169.254'), 80); out('socks5_mapped', code)
    s, code = socks5(3, b'\x08web.test', 80)
    s.sendall(b'GET / HTTP/1.1\r\nHost: web.test\r\n\r\n'); out('socks5_web', str(code) + ':' + recv_all(s).split(b'\r\n\r\n', 1)[-1].decode().strip())
    s = conn(); s.sendall(b'\4\1\0\x50\0\0\0\1\0web.test\0'); r = s.recv(8)
    s.sendall(b'GET / HTTP/1.1\r\nHost: web.test\r\n\r\n'); out('socks4a_web', '%d:%s' % (r[1], recv_all(s).split(b'\r\n\r\n', 1)[-1].decode().strip()))
    s = conn(); s.sendall(b'\4\1\0\x50\0\0\0\1\0other.test\0'); out('socks4a_other', s.recv(8)[1])
    out('dns_web', dns('web.test')); out('dns_other', dns('other.test')); out('dns_local', dns('local.test'))
    out('dns_upper', dns('WEB.TEST'))
    out('resolver', open('/etc/resolv.conf').read().split('nameserver ')[1].split()[0])
    out('getaddrinfo', socket.getaddrinfo('web.test', 80, socket.AF_INET)[0][4][0])
)PY";

// The shared world, with this file's client beside the servers.
struct World : egress::World {
  World() { write_file(dir / "client.py", client_py); }
};

using egress::have_tools;
using egress::value;

}  // namespace

TEST_CASE("egress: allowed hosts through curl (HTTP and SOCKS5h) and urllib; denied ones refused", "[egress]") {
  require_userns();
  have_tools();
  World w;
  auto r = w.run(
      w.curl_script("") +
      w.nsrun_cmd("", "/usr/bin/python3 " + shell_quote(w.dir / "client.py") + " urllib") + "; " +
      w.nsrun_cmd("", "/usr/bin/python3 " + shell_quote(w.dir / "client.py") + " direct"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  egress::check_curl(r.out);
  CHECK(value(r.out, "urllib") == "hello web web.test");
  CHECK(value(r.out, "urllib_denied") == "403/blocked-by-allowlist");
  // Only lo inside: the servers' addresses are not reachable but through the proxy.
  CHECK_THAT(value(r.out, "direct_198.18.0.1"), ContainsSubstring("refused:"));
  CHECK_THAT(value(r.out, "direct_169.254.169.254"), ContainsSubstring("refused:"));
}

TEST_CASE("egress: every trick is refused, and the report and the log say what happened", "[egress]") {
  require_userns();
  have_tools();
  World w;
  auto r = w.run(w.nsrun_cmd("--report " + shell_quote(w.dir / "report.json") + " --network-log " + shell_quote(w.dir / "net.log"),
                             "/usr/bin/python3 " + shell_quote(w.dir / "client.py") + " tricks"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* literal : {"dec", "hex", "octal", "mapped", "literal_of_allowed", "metadata_literal", "other", "port"}) {
    INFO(literal);
    CHECK(value(r.out, literal) == "403/blocked-by-allowlist");
  }
  CHECK(value(r.out, "apex") == "403/blocked-by-allowlist");
  CHECK(value(r.out, "wildcard") == "200");
  CHECK(value(r.out, "deny") == "403/blocked-by-denylist");
  CHECK(value(r.out, "trailing_dot") == "200");
  CHECK(value(r.out, "upper") == "200");
  CHECK(value(r.out, "to_loopback") == "403/blocked-by-allowlist");
  CHECK(value(r.out, "to_metadata") == "403/blocked-by-allowlist");
  // wéb.test is xn--wb-bja.test, another name than web.test.
  CHECK(value(r.out, "idn") == "403/blocked-by-allowlist");
  CHECK(value(r.out, "sni_match") == "200:reached");
  CHECK(value(r.out, "sni_other") == "200:closed");
  CHECK(value(r.out, "sni_none") == "200:closed");
  CHECK(value(r.out, "host_mismatch") == "400/host-mismatch");
  CHECK(value(r.out, "host_missing") == "400/host-mismatch");
  CHECK(value(r.out, "host_same") == "hello web web.test");
  CHECK(value(r.out, "socks5_other") == "2");
  CHECK(value(r.out, "socks5_loopback") == "2");
  CHECK(value(r.out, "socks5_mapped") == "2");
  CHECK(value(r.out, "socks5_web") == "0:hello web web.test");
  CHECK(value(r.out, "socks4a_web") == "90:hello web web.test");
  CHECK(value(r.out, "socks4a_other") == "91");
  CHECK(value(r.out, "dns_web") == "0/1/198.18.0.1");
  CHECK(value(r.out, "dns_other") == "5/0/-");
  CHECK(value(r.out, "dns_local") == "5/0/-");
  CHECK(value(r.out, "dns_upper") == "0/1/198.18.0.1");
  CHECK(value(r.out, "resolver") == "127.0.0.1");
  CHECK(value(r.out, "getaddrinfo") == "198.18.0.1");

  // The report: one decision per request, with the rule and the address.
  const std::string report = read_file(w.dir / "report.json");
  CHECK_THAT(report, ContainsSubstring(R"("mode":"proxy")"));
  CHECK_THAT(report, ContainsSubstring(R"("host":"sub.test")"));
  CHECK_THAT(report, ContainsSubstring(R"("reason":"sni-mismatch")"));
  CHECK_THAT(report, ContainsSubstring(R"("reason":"host-mismatch")"));
  CHECK_THAT(report, ContainsSubstring(R"("rule":"internal-address")"));
  CHECK_THAT(report, ContainsSubstring(R"("address":"169.254.169.254")"));
  CHECK_THAT(report, ContainsSubstring(R"("rule":"bad.sub.test")"));
  CHECK_THAT(report, ContainsSubstring(R"("rule":"*.sub.test")"));
  CHECK_THAT(report, ContainsSubstring(R"("protocol":"socks4")"));
  CHECK_THAT(report, ContainsSubstring(R"("protocol":"dns")"));
  // The log has the same decisions, one JSON line each.
  const std::string log = read_file(w.dir / "net.log");
  const std::size_t decisions = count_lines(log);
  CHECK(decisions >= 30);
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  const std::size_t allowed = count(R"("decision":"allowed")"), denied = count(R"("decision":"denied")");
  CHECK(allowed + denied + count(R"("decision":"failed")") == decisions);
  CHECK_THAT(report, ContainsSubstring(R"("allowed":)" + std::to_string(allowed)));
  CHECK_THAT(report, ContainsSubstring(R"("denied":)" + std::to_string(denied)));
}

TEST_CASE("egress: nsrun connect tunnels ssh's ProxyCommand to allowed hosts only", "[egress]") {
  require_userns();
  have_tools();
  World w;
  // A copy beside the test's files: the sandbox's private /tmp would hide
  // a binary under /tmp, and GIT_SSH_COMMAND names nsrun's own path.
  const std::string self = w.dir / "nsrun";
  write_file(self, read_file(nsrun_path()), 0755);
  auto run_in = [&](const std::string& command) {
    return shell_quote(self) + " --network proxy --allow-host ssh.test:22 --resolve-host ssh.test=198.18.0.1 "
           "--resolve-host other.test=198.18.0.1 -- " + command;
  };
  auto r = w.run("echo allowed=$(echo hi | " + run_in(shell_quote(self) + " connect ssh.test 22") + "); " +
                 "echo denied=$(echo hi | " + run_in(shell_quote(self) + " connect other.test 22 2>&1; echo rc=$?") + "); " +
                 "echo git=$(" + run_in("/bin/sh -c 'echo \"$GIT_SSH_COMMAND\"'") + ")");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(value(r.out, "allowed") == "reached");
  CHECK_THAT(value(r.out, "denied"), ContainsSubstring("403") && ContainsSubstring("rc=1"));
  CHECK(value(r.out, "git") == "ssh -o ProxyCommand='" + self + " connect %h %p'");
}

TEST_CASE("egress: bad rules are usage errors", "[egress]") {
  // The Landlock rung keeps it from ABI 4 (egress_landlock_test.cpp); below,
  // it refuses (a unit test: connector_test.cpp).
  TempDir dir("egress");
  RunResult r;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--network", "proxy", "--allow-host", "*", "--", "/bin/true"},
           {"--network", "proxy", "--allow-host", "EX\xc3\x84MPLE.com", "--", "/bin/true"},
           {"--network", "proxy", "--", "/bin/true"},
           {"--network", "none", "--allow-host", "a.test", "--", "/bin/true"},
           {"--network", "proxy", "--allow-host", "a.test", "--resolve-host", "a.test", "--", "/bin/true"}}) {
    INFO(join(args));
    r = nsrun(args, at(dir));
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Matchers::StartsWith("nsrun: "));
  }
}

TEST_CASE("egress: no listener of nsrun's is reachable from the host while the command runs", "[egress]") {
  require_userns();
  have_tools();
  World w;
  const std::string f1 = shell_quote(w.dir / "f1"), f2 = shell_quote(w.dir / "f2");
  // While the sandboxed command waits on f2, the test's namespace (where
  // nsrun and its proxy run) is searched for listeners and connected to.
  const std::string probe =
      "/usr/bin/python3 -c \"\n"
      "import socket\n"
      "listening = [l.split()[1] for l in open('/proc/net/tcp').readlines()[1:] + open('/proc/net/tcp6').readlines()[1:] if l.split()[3] == '0A']\n"
      "ports = sorted({int(a.rsplit(':', 1)[1], 16) for a in listening})\n"
      "print('listening=' + ','.join(map(str, ports)))\n"
      "for port in (3128, 53):\n"
      "    try: socket.create_connection(('127.0.0.1', port), timeout=5); print('connect_%d=connected' % port)\n"
      "    except OSError as e: print('connect_%d=%s' % (port, e.strerror))\n"
      "\"";
  auto r = w.run("mkfifo " + f1 + " " + f2 + "; " +
                 w.nsrun_cmd("", "/bin/sh -c 'echo up > " + w.dir / "f1" + "; read x < " + w.dir / "f2" + "; echo inside=done'") +
                 " & ns=$!; read x < " + f1 + "; " + probe + "; echo > " + f2 + "; wait $ns");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(value(r.out, "inside") == "done");
  // Only the test's own servers (80, 443, 22) listen in nsrun's namespace.
  CHECK(value(r.out, "listening") == "22,80,443");
  CHECK(value(r.out, "connect_3128") == "Connection refused");
  CHECK(value(r.out, "connect_53") == "Connection refused");
}

namespace {

// An upstream on 198.18.0.1:8080 that reads its connection to the end and
// answers with every byte it received, so the client sees exactly what
// the proxy forwarded.
constexpr std::string_view echo_server_py = R"PY(
import socket, threading
def serve_echo(s):
    while True:
        c, _ = s.accept()
        data = b''
        while True:
            d = c.recv(65536)
            if not d: break
            data += d
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % len(data) + data)
        c.close()
e = socket.socket(); e.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); e.bind(('198.18.0.1', 8080)); e.listen(16)
threading.Thread(target=serve_echo, args=(e,), daemon=True).start()
)PY";

// Inside the sandbox: requests pipelined behind a first one, each printed
// as what reached the upstream (or the proxy's refusal).
constexpr std::string_view pipeline_py = R"PY(
import os, socket
P = int(os.environ['http_proxy'].rsplit(':', 1)[1])
def out(k, v): print('%s=%s' % (k, v), flush=True)
def exchange(*parts):
    s = socket.create_connection(('127.0.0.1', P), timeout=10)
    for p in parts: s.sendall(p)
    s.shutdown(socket.SHUT_WR)
    data = b''
    while True:
        d = s.recv(65536)
        if not d: break
        data += d
    head, _, body = data.partition(b'\r\n\r\n')
    status = head.split(b' ')[1].decode() if b' ' in head else 'none'
    err = [h.split(b':', 1)[1].strip().decode() for h in head.split(b'\r\n') if h.lower().startswith(b'x-proxy-error:')]
    return status + ('/' + err[0] if err else '') + ':' + repr(body)
second = b'GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n'
first = b'GET http://web.test:8080/first HTTP/1.1\r\nHost: web.test:8080\r\n\r\n'
out('pipelined', exchange(first + second))
out('pipelined_later', exchange(first, second, b'GET /x HTTP/1.1\r\nHost: web.test\r\n\r\n'))
post = b'POST http://web.test:8080/p HTTP/1.1\r\nHost: web.test:8080\r\nContent-Length: 10\r\n\r\n'
out('body', exchange(post + b'hello', b'world' + second))
out('chunked', exchange(b'POST http://web.test:8080/p HTTP/1.1\r\nHost: web.test:8080\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' + second))
out('smuggle', exchange(b'POST http://web.test:8080/p HTTP/1.1\r\nHost: web.test:8080\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' + second))
out('two_lengths', exchange(b'POST http://web.test:8080/p HTTP/1.1\r\nHost: web.test:8080\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello' + second))
out('signed_length', exchange(b'POST http://web.test:8080/p HTTP/1.1\r\nHost: web.test:8080\r\nContent-Length: +5\r\n\r\nhello' + second))
)PY";

struct PipelineWorld : egress::World {
  PipelineWorld() {
    write_file(dir / "server.py", std::string(http_hello_py) + std::string(echo_server_py) + std::string(egress::server_py));
    write_file(dir / "pipeline.py", pipeline_py);
  }
};

void check_one_request_per_connection(const std::string& extra) {
  PipelineWorld w;
  auto r = w.run(w.nsrun_cmd(extra + " --report " + shell_quote(w.dir / "report.json"),
                             "/usr/bin/python3 " + shell_quote(w.dir / "pipeline.py")));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string first = "GET /first HTTP/1.1\\r\\nHost: web.test:8080\\r\\nConnection: close\\r\\n\\r\\n";
  // The upstream received the first request and nothing after it.
  CHECK(value(r.out, "pipelined") == "200:b'" + first + "'");
  CHECK(value(r.out, "pipelined_later") == "200:b'" + first + "'");
  // The declared body, split over two sends, and not a byte more.
  CHECK(value(r.out, "body") ==
        "200:b'POST /p HTTP/1.1\\r\\nHost: web.test:8080\\r\\nContent-Length: 10\\r\\nConnection: close\\r\\n\\r\\nhelloworld'");
  CHECK_THAT(value(r.out, "chunked"), StartsWith("411/transfer-encoding:"));
  CHECK_THAT(value(r.out, "smuggle"), StartsWith("411/transfer-encoding:"));
  CHECK_THAT(value(r.out, "two_lengths"), StartsWith("400/bad-content-length:"));
  CHECK_THAT(value(r.out, "signed_length"), StartsWith("400/bad-content-length:"));
  // other.test was never judged: no request for it reached the proxy's rules.
  const std::string report = read_file(w.dir / "report.json");
  CHECK_THAT(report, !ContainsSubstring("other.test"));
  CHECK_THAT(report, ContainsSubstring(R"("reason":"transfer-encoding")"));
}

}  // namespace

TEST_CASE("egress: a plain-HTTP connection carries one request and its declared body, nothing pipelined after it",
          "[egress][egress-pipeline]") {
  require_userns();
  have_tools();
  check_one_request_per_connection("");
}

TEST_CASE("egress on the Landlock rung: one request per plain-HTTP connection too", "[egress][egress-pipeline][landlock]") {
  require_landlock();
  have_tools();
  check_one_request_per_connection("--backend landlock");
}
