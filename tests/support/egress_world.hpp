// The world of the egress tests, shared by egress_test.cpp (the
// namespace rung) and egress_landlock_test.cpp: `unshare --user
// --map-root-user --net` gives a network namespace of the test's own (only
// loopback) where 198.18.0.1 and 169.254.169.254 are added to `lo` and small
// Python servers listen. nsrun runs inside that namespace, so its proxy
// reaches those servers and nothing else; names are mapped with
// --resolve-host. No packet leaves the test's namespace.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <unistd.h>

#include <string>
#include <string_view>

#include "egress_py.hpp"
#include "harness.hpp"

namespace nsrun_test::egress {

// HTTP on :80 answers "hello <tag> <Host>" (serve_http, egress_py.hpp); :443 and :22 answer "reached" to whatever
// arrives (a stand-in for a TLS server: the proxy checks the ClientHello,
// the server need not speak TLS). Writes "ok" to the fifo once bound.
inline constexpr std::string_view server_py = R"PY(
import socket, sys, threading
def http(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 80)); s.listen(64)
    return s
def raw(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 443)); s.listen(64)
    return s
def raw22(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 22)); s.listen(64)
    return s
def serve_raw(s):
    while True:
        c, _ = s.accept()
        if c.recv(65536): c.sendall(b'reached\n')
        c.close()
for s, f in [(http('198.18.0.1'), lambda s: serve_http(s, b'web')), (http('169.254.169.254'), lambda s: serve_http(s, b'metadata')),
             (http('127.0.0.1'), lambda s: serve_http(s, b'host-loopback')), (raw('198.18.0.1'), serve_raw), (raw22('198.18.0.1'), serve_raw)]:
    threading.Thread(target=f, args=(s,), daemon=True).start()
open(sys.argv[1], 'w').write('ok\n')
threading.Event().wait()
)PY";

struct World {
  TempDir dir{"egress"};
  World() { write_file(dir / "server.py", std::string(http_hello_py) + std::string(server_py)); }
  // Runs `inner` (a shell command line) in a network namespace of the
  // test's own, with the servers up.
  RunResult run(const std::string& inner) {
    const std::string script =
        "set -e; ip link set lo up; ip addr add 198.18.0.1/32 dev lo; ip addr add 169.254.169.254/32 dev lo; "
        "mkfifo " + shell_quote(dir / "ready") + "; /usr/bin/python3 " + shell_quote(dir / "server.py") + " " +
        shell_quote(dir / "ready") + " & server=$!; read x < " + shell_quote(dir / "ready") + "; set +e; " + inner +
        "; rc=$?; kill $server; exit $rc";
    RunOptions opts = at(dir);
    opts.timeout = 120s;
    return nsrun_test::run({"unshare", "--user", "--map-root-user", "--net", "--", "/bin/sh", "-c", script}, opts);
  }
  std::string nsrun_cmd(const std::string& extra, const std::string& command) {
    return shell_quote(nsrun_path()) +
           " --network proxy --allow-host web.test --allow-host tls.test:443 --allow-host '*.sub.test' "
           "--deny-host bad.sub.test --allow-host local.test --allow-host meta.test "
           "--resolve-host web.test=198.18.0.1 --resolve-host tls.test=198.18.0.1 --resolve-host a.sub.test=198.18.0.1 "
           "--resolve-host bad.sub.test=198.18.0.1 --resolve-host sub.test=198.18.0.1 --resolve-host other.test=198.18.0.1 "
           "--resolve-host local.test=127.0.0.1 --resolve-host meta.test=169.254.169.254 " +
           extra + " -- " + command;
  }
  // curl through the proxy (`extra`: more nsrun options, the rung): allowed
  // over HTTP_PROXY and over ALL_PROXY (socks5h); refused by the allow-list
  // (HTTP and SOCKS5) and by the deny-list. check_curl() reads the lines.
  std::string curl_script(const std::string& extra) {
    const std::string curl = "/usr/bin/curl -s -S --max-time 20";
    return "echo http=$(" + nsrun_cmd(extra, curl + " http://web.test/") + "); " +
           "echo socks=$(" + nsrun_cmd(extra, "/bin/sh -c '" + curl + " --proxy \"$ALL_PROXY\" http://a.sub.test/'") + "); " +
           "echo denied=$(" + nsrun_cmd(extra, curl + " -i http://other.test/ | tr -d '\\r' | grep -i -e ^x-proxy-error -e ^HTTP -e ^nsrun | tr '\\n' ' '") + "); " +
           "echo denylist=$(" + nsrun_cmd(extra, curl + " -i http://bad.sub.test/ | tr -d '\\r' | grep -i ^x-proxy-error") + "); " +
           "echo socks_denied=$(" + nsrun_cmd(extra, "/bin/sh -c '" + curl + " --proxy \"$ALL_PROXY\" http://other.test/; echo rc=$?'") + " 2>&1); ";
  }
};

inline bool have_tools() {
  for (const char* tool : {"/usr/bin/unshare", "/usr/sbin/ip", "/usr/bin/python3", "/usr/bin/curl"})
    if (::access(tool, X_OK) != 0) unavailable("egress", std::string(tool) + " is missing");
  return true;
}

// The value of `key=` in the output's lines.
inline std::string value(const std::string& out, const std::string& key) {
  const std::string k = key + "=";
  std::size_t at = out.rfind("\n" + k);
  if (at == std::string::npos) {
    if (!out.starts_with(k)) return "<missing " + key + ">";
    at = 0;
  } else {
    at += 1;
  }
  const std::size_t end = out.find('\n', at);
  return out.substr(at + k.size(), end == std::string::npos ? std::string::npos : end - at - k.size());
}

// What curl_script() must have printed.
inline void check_curl(const std::string& out) {
  using Catch::Matchers::ContainsSubstring;
  CHECK(value(out, "http") == "hello web web.test");
  CHECK(value(out, "socks") == "hello web a.sub.test");
  CHECK_THAT(value(out, "denied"), ContainsSubstring("HTTP/1.1 403") && ContainsSubstring("X-Proxy-Error: blocked-by-allowlist") &&
                                       ContainsSubstring("nsrun: other.test: blocked-by-allowlist"));
  CHECK(value(out, "denylist") == "X-Proxy-Error: blocked-by-denylist");
  // curl: "connection not allowed by ruleset" is SOCKS5 reply 0x02.
  CHECK_THAT(value(out, "socks_denied"), ContainsSubstring("rc=97"));
}

}  // namespace nsrun_test::egress
