// nsrun's own resolver and the DNS stub's CNAMEs, against a
// DNS server of the test's: no --resolve-host, so every name goes through
// /etc/hosts and resolv.conf as nsrun reads them.
//
// The world: `unshare --user --map-root-user --net --mount`, so the test
// has a network namespace with only loopback (198.18.0.1 added to it),
// and a mount namespace where its own resolv.conf (nameserver
// 127.0.0.53) and hosts file are bound over /etc's. nsrun runs there; no
// packet leaves the test's namespace and the host's /etc is untouched.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <unistd.h>

#include <map>
#include <sstream>

#include "egress_py.hpp"
#include "harness.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

// DNS on 127.0.0.53:53 (UDP and TCP) and HTTP on 198.18.0.1:80 ("hello
// web <Host>", serve_http of tests/support/egress_py.hpp). The zone:
// CNAMEs (some to internal addresses, one loop, one given without its
// target's address), a name answered truncated over UDP, and one whose
// real answer follows a spoofed one from another source address and one
// with another id. Writes "ok" to argv[1] once bound.
constexpr std::string_view dns_server_py = R"PY(
import socket, struct, sys, threading
A = {'web.test': '198.18.0.1', 'big.test': '198.18.0.1', 'spoof.test': '198.18.0.1', 'inner.test': '127.0.0.1',
     'meta.test': '169.254.169.254', 'x.evil.test': '198.18.0.1', 'git.test': '198.18.0.1', 'xn--bcher-kva.test': '198.18.0.1'}
CNAME = {'alias.test': 'web.test', 'sneaky.test': 'inner.test', 'meta-alias.test': 'meta.test', 'onlycname.test': 'web.test',
         'denied-alias.test': 'x.evil.test', 'loop1.test': 'loop2.test', 'loop2.test': 'loop1.test', 'two.test': 'alias.test'}
def wire(n): return b''.join(bytes([len(l)]) + l.encode() for l in n.split('.')) + b'\0'
def answer(p, tcp, id_xor=0, address=None):
    i = 12; labels = []
    while p[i]: labels.append(p[i+1:i+1+p[i]].decode()); i += 1 + p[i]
    name = '.'.join(labels).lower(); qtype = struct.unpack('>H', p[i+1:i+3])[0]; question = p[12:i+5]
    rrs = []; cur = name
    for _ in range(20):
        if cur not in CNAME: break
        rrs.append(wire(cur) + struct.pack('>HHIH', 5, 1, 60, len(wire(CNAME[cur]))) + wire(CNAME[cur]))
        if cur == 'onlycname.test': cur = None; break
        cur = CNAME[cur]
    if cur in A and qtype == 1:
        rrs.append(wire(cur) + struct.pack('>HHIH', 1, 1, 60, 4) + socket.inet_aton(address or A[cur]))
    flags = 0x8180 | (0 if name in A or name in CNAME else 3)
    if name == 'big.test' and not tcp: flags |= 0x200; rrs = []
    ident = struct.unpack('>H', p[:2])[0] ^ id_xor
    return struct.pack('>HHHHHH', ident, flags, 1, len(rrs), 0, 0) + question + b''.join(rrs)
def bound(kind, addr, port):
    s = socket.socket(socket.AF_INET, kind); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((addr, port))
    if kind == socket.SOCK_STREAM: s.listen(64)
    return s
udp = bound(socket.SOCK_DGRAM, '127.0.0.53', 53); other = bound(socket.SOCK_DGRAM, '127.0.0.99', 53)
tcp = bound(socket.SOCK_STREAM, '127.0.0.53', 53); web = bound(socket.SOCK_STREAM, '198.18.0.1', 80)
def serve_udp():
    while True:
        p, peer = udp.recvfrom(4096)
        try:
            if b'\x05spoof\x04test' in p:
                other.sendto(answer(p, False, 0, '198.18.0.66'), peer)
                udp.sendto(answer(p, False, 1, '198.18.0.77'), peer)
            udp.sendto(answer(p, False), peer)
        except Exception as e: print('dns error', e, file=sys.stderr)
def serve_tcp():
    while True:
        c, _ = tcp.accept(); data = b''
        while len(data) < 2 or len(data) < 2 + struct.unpack('>H', data[:2])[0]:
            d = c.recv(4096)
            if not d: break
            data += d
        r = answer(data[2:], True); c.sendall(struct.pack('>H', len(r)) + r); c.close()
for f, a in ((serve_udp, ()), (serve_tcp, ()), (serve_http, (web, b'web'))): threading.Thread(target=f, args=a, daemon=True).start()
open(sys.argv[1], 'w').write('ok\n')
threading.Event().wait()
)PY";

// Inside the sandbox: DNS questions to the stub and HTTP requests through
// the proxy, one "key=result" line each.
constexpr std::string_view dns_client_py = R"PY(
import socket, struct, sys
def wire(n): return b''.join(bytes([len(l)]) + l.encode() for l in n.split('.')) + b'\0'
def name_at(p, i):
    labels = []; end = None
    while True:
        l = p[i]
        if l & 0xc0 == 0xc0:
            if end is None: end = i + 2
            i = ((l & 0x3f) << 8) | p[i + 1]; continue
        if l == 0: return '.'.join(labels), (end if end is not None else i + 1)
        labels.append(p[i+1:i+1+l].decode()); i += 1 + l
def dns(name, qtype=1):
    q = b'\x12\x34\1\0\0\1\0\0\0\0\0\0' + wire(name) + struct.pack('>HH', qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(30); s.sendto(q, ('127.0.0.1', 53)); r = s.recv(4096)
    rcode = r[3] & 15; count = struct.unpack('>H', r[6:8])[0]; i = name_at(r, 12)[1] + 4; out = []
    for _ in range(count):
        owner, i = name_at(r, i); t, c, ttl, l = struct.unpack('>HHIH', r[i:i+10]); i += 10
        out.append(('CNAME:' + name_at(r, i)[0]) if t == 5 else ('A:' + socket.inet_ntoa(r[i:i+4])) if t == 1 else 'type%d' % t)
        i += l
    return '%d/%s' % (rcode, ','.join(out))
def http(name):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=30)
    s.sendall(b'GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n' % (name.encode(), name.encode())); data = b''
    while True:
        d = s.recv(4096)
        if not d: break
        data += d
    head, _, body = data.partition(b'\r\n\r\n'); lines = head.split(b'\r\n')
    err = [l.split(b':', 1)[1].strip().decode() for l in lines[1:] if l.lower().startswith(b'x-proxy-error:')]
    return lines[0].split(b' ')[1].decode() + ('/' + err[0] if err else ':' + body.decode().strip())
for n in sys.argv[1:]:
    print('dns_%s=%s' % (n, dns(n)), flush=True)
for n in ['alias.test', 'sneaky.test', 'meta-alias.test', 'denied-alias.test', 'spoof.test', 'hosts-only.test', 'loop1.test',
          'xn--bcher-kva.test', 'b\u00fccher.test', 'B\u00dcCHER.test']:
    print('http_%s=%s' % (n, http(n)), flush=True)
try: print('getaddrinfo=' + socket.getaddrinfo('two.test', 80, socket.AF_INET)[0][4][0], flush=True)
except OSError as e: print('getaddrinfo=' + str(e), flush=True)
)PY";

struct DnsWorld {
  TempDir dir{"egress-dns"};
  DnsWorld() {
    write_file(dir / "server.py", std::string(http_hello_py) + std::string(dns_server_py));
    write_file(dir / "client.py", dns_client_py);
    // One try of one second: the loop and the spoofed answers must not
    // make the test slow.
    write_file(dir / "resolv.conf", "nameserver 127.0.0.53\noptions timeout:1 attempts:1\n");
    write_file(dir / "hosts", "127.0.0.1 localhost\n198.18.0.1 hosts-only.test\n");
  }
  // Runs `inner` (a shell command line) in the test's namespaces with the
  // servers up and the test's resolv.conf and hosts in /etc.
  // `setup` runs first, in the namespaces, with `set -e`.
  RunResult run(const std::string& inner, const std::string& setup = "") {
    const std::string script =
        "set -e; ip link set lo up; ip addr add 198.18.0.1/32 dev lo; "
        "mount --bind " + shell_quote(dir / "resolv.conf") + " /etc/resolv.conf; "
        "mount --bind " + shell_quote(dir / "hosts") + " /etc/hosts; " + setup +
        "mkfifo " + shell_quote(dir / "ready") + "; /usr/bin/python3 " + shell_quote(dir / "server.py") + " " +
        shell_quote(dir / "ready") + " & server=$!; read x < " + shell_quote(dir / "ready") + "; set +e; " + inner +
        "; rc=$?; kill $server; exit $rc";
    RunOptions opts = at(dir);
    opts.timeout = 180s;
    return nsrun_test::run({"unshare", "--user", "--map-root-user", "--net", "--mount", "--", "/bin/sh", "-c", script}, opts);
  }
};

void need_tools() {
  for (const char* tool : {"/usr/bin/unshare", "/usr/sbin/ip", "/usr/bin/python3", "/usr/bin/mount"})
    if (::access(tool, X_OK) != 0) unavailable("egress-dns", std::string(tool) + " is missing");
}

// The output's "key=value" lines, the last one of each key winning.
std::map<std::string, std::string> results(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (const std::size_t eq = line.find('='); eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  return m;
}

}  // namespace

TEST_CASE("egress dns: nsrun resolves with its own resolver and the stub answers CNAME chains it checked", "[egress][egress-dns]") {
  require_userns();
  need_tools();
  DnsWorld w;
  const std::string nsrun =
      shell_quote(nsrun_path()) + " --report " + shell_quote(w.dir / "report.json") +
      " --network proxy --allow-host web.test --allow-host alias.test --allow-host two.test --allow-host onlycname.test"
      " --allow-host sneaky.test --allow-host meta-alias.test --allow-host denied-alias.test --deny-host '*.evil.test'"
      " --allow-host big.test --allow-host spoof.test --allow-host hosts-only.test --allow-host missing.test"
      " --allow-host loop1.test --allow-host 'b\xc3\xbc" "cher.test' -- /usr/bin/python3 " + shell_quote(w.dir / "client.py") +
      " alias.test two.test onlycname.test sneaky.test meta-alias.test denied-alias.test big.test spoof.test hosts-only.test"
      " missing.test loop1.test other.test xn--bcher-kva.test";
  auto r = w.run(nsrun);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto v = results(r.out);
  // The chain, then the address of its end; the stub asked again for a
  // target given without its address.
  CHECK(v["dns_alias.test"] == "0/CNAME:web.test,A:198.18.0.1");
  CHECK(v["dns_two.test"] == "0/CNAME:alias.test,CNAME:web.test,A:198.18.0.1");
  CHECK(v["dns_onlycname.test"] == "0/CNAME:web.test,A:198.18.0.1");
  // A CNAME to an internal address is refused like the address itself; a
  // deny rule naming a link of the chain refuses the whole name.
  CHECK(v["dns_sneaky.test"] == "5/");
  CHECK(v["dns_meta-alias.test"] == "5/");
  CHECK(v["dns_denied-alias.test"] == "5/");
  // Truncated over UDP: asked again over TCP. Spoofed answers (another
  // source address, another id) were dropped: the real one won.
  CHECK(v["dns_big.test"] == "0/A:198.18.0.1");
  CHECK(v["dns_spoof.test"] == "0/A:198.18.0.1");
  // /etc/hosts first (the server does not know this name).
  CHECK(v["dns_hosts-only.test"] == "0/A:198.18.0.1");
  CHECK(v["dns_missing.test"] == "3/");
  CHECK(v["dns_loop1.test"] == "2/");
  CHECK(v["dns_other.test"] == "5/");
  // The proxy judges the same way, and connects to the address it checked.
  CHECK(v["http_alias.test"] == "200:hello web alias.test");
  CHECK(v["http_sneaky.test"] == "403/blocked-by-allowlist");
  CHECK(v["http_meta-alias.test"] == "403/blocked-by-allowlist");
  CHECK(v["http_denied-alias.test"] == "403/blocked-by-denylist");
  CHECK(v["http_spoof.test"] == "200:hello web spoof.test");
  CHECK(v["http_hosts-only.test"] == "200:hello web hosts-only.test");
  CHECK_THAT(v["http_loop1.test"], Catch::Matchers::StartsWith("502"));
  // A rule written in Unicode allows the name's xn-- form, in DNS and
  // through the proxy, and the Unicode spelling too; an upper-case letter
  // outside ASCII would need IDNA mapping: refused as a bad host.
  CHECK(v["dns_xn--bcher-kva.test"] == "0/A:198.18.0.1");
  CHECK(v["http_xn--bcher-kva.test"] == "200:hello web xn--bcher-kva.test");
  CHECK(v["http_b\xc3\xbc" "cher.test"] == "200:hello web b\xc3\xbc" "cher.test");
  CHECK(v["http_B\xc3\x9c" "CHER.test"] == "400/bad-host");
  // glibc inside the sandbox follows the stub's chain.
  CHECK(v["getaddrinfo"] == "198.18.0.1");

  const std::string report = read_file(w.dir / "report.json");
  CHECK_THAT(report, ContainsSubstring(R"("cnames":["alias.test","web.test"])"));
  CHECK_THAT(report, ContainsSubstring(R"("address":"127.0.0.1")"));
  CHECK_THAT(report, ContainsSubstring(R"("address":"169.254.169.254")"));
  CHECK_THAT(report, ContainsSubstring(R"("rule":"*.evil.test")"));
  CHECK(report.find("198.18.0.66") == std::string::npos);
  CHECK(report.find("198.18.0.77") == std::string::npos);
}

namespace {

// The files of the ssh world, made on the host in the test's directory:
// a host key and a client key, the client's ~/.ssh (key, known_hosts),
// an authorized_keys, a passwd line for the user sshd runs as, sshd's
// config and a bare repository with one commit.
bool make_ssh_files(const DnsWorld& w) {
  const std::string d = w.dir.path();
  write_file(d + "/sshd_config",
             "ListenAddress 198.18.0.1:22\nHostKey " + d + "/hostkey\nPidFile " + d + "/sshd.pid\nAuthorizedKeysFile " + d +
                 "/authorized_keys\n"
                 // sshd runs unprivileged, on files the test owns: no
                 // privilege separation chroot, no PAM, keys only.
                 "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                 "PubkeyAuthentication yes\nAllowUsers git\n");
  write_file(d + "/passwd", "git:x:1000:1000::" + d + ":/bin/sh\n");
  const std::string q = shell_quote(d);
  auto r = run({"/bin/sh", "-c",
                "set -e; cd " + q + "; mkdir -p home/.ssh; ssh-keygen -q -t ed25519 -N '' -f hostkey; "
                "ssh-keygen -q -t ed25519 -N '' -f home/.ssh/id_ed25519; cp home/.ssh/id_ed25519.pub authorized_keys; "
                "echo \"git.test $(cut -d' ' -f1,2 hostkey.pub)\" > home/.ssh/known_hosts; "
                "git init -q --bare repo.git; git -C repo.git symbolic-ref HEAD refs/heads/main; git init -q work; "
                "git -C work -c user.email=t@t.test -c user.name=t commit -q --allow-empty -m 'served over ssh'; "
                "git -C work push -q " + q + "/repo.git HEAD:refs/heads/main"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return true;
}

// In the namespaces: ports below 1024 for the test's uid (so sshd needs
// no privilege for port 22), the client's ~/.ssh where ssh looks for it
// (uid 0's home, /root, in the test's mount namespace only), then sshd
// as uid 1000 of a user namespace of its own with the passwd line bound
// over /etc/passwd in a mount namespace of its own. "sshd=ready" or
// "sshd=failed" once it listens or died.
std::string start_sshd(const DnsWorld& w) {
  const std::string d = w.dir.path(), q = shell_quote(w.dir.path());
  return "echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start; mount --bind " + q + "/home /root; mkfifo " + q +
         "/sshd-ready; set +e; "
         "unshare --mount -- /bin/sh -c 'mount --bind " + d + "/passwd /etc/passwd && exec unshare --user --map-user=1000 "
         "--map-group=1000 -- /usr/sbin/sshd -D -e -f " + d + "/sshd_config' 2>&1 | "
         "(seen=; while read -r l; do echo \"$l\" >> " + q + "/sshd.log; case \"$l\" in *'Server listening'*) seen=1; echo ready > " +
         q + "/sshd-ready;; esac; done; [ -n \"$seen\" ] || echo failed > " + q + "/sshd-ready) & "
         "read sshd < " + q + "/sshd-ready; echo sshd=$sshd; set -e; ";
}

}  // namespace

TEST_CASE("egress dns: git clone over ssh through nsrun connect, allowed and refused", "[egress][egress-dns][egress-ssh]") {
  require_userns();
  need_tools();
  for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen", "/usr/bin/git"})
    if (::access(tool, X_OK) != 0) unavailable("egress-ssh", std::string(tool) + " is missing (tools/install-deps.sh --test)");
  DnsWorld w;
  make_ssh_files(w);
  // GIT_SSH_COMMAND names nsrun's own path: a copy outside /tmp (the
  // sandbox's /tmp is its own).
  const std::string self = w.dir / "nsrun";
  write_file(self, read_file(nsrun_path()), 0755);
  auto clone = [&](const std::string& rule, const std::string& tag) {
    return "HOME=/root " + shell_quote(self) + " --network proxy --allow-host " + rule + " --allow-read /root/.ssh --report " +
           shell_quote(w.dir / (tag + ".json")) + " -- git clone -q git@git.test:" + w.dir / "repo.git" + " clone-" + tag +
           " 2> " + shell_quote(w.dir / (tag + ".err")) + "; echo " + tag + "_rc=$?; ";
  };
  auto r = w.run("if [ \"$sshd\" = ready ]; then " + clone("git.test:22", "allowed") + clone("other.test:22", "refused") +
                     "echo log=$(git -C clone-allowed log --format=%s); kill $(cat " + shell_quote(w.dir / "sshd.pid") + "); fi",
                 start_sshd(w));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto v = results(r.out);
  if (v["sshd"] != "ready") unavailable("egress-ssh", "sshd did not start: " + read_file(w.dir / "sshd.log"));
  const std::string sshd_log = read_file(w.dir / "sshd.log");
  INFO("sshd: " << sshd_log);
  INFO("allowed: " << read_file(w.dir / "allowed.err") << "refused: " << read_file(w.dir / "refused.err"));
  // Allowed: the clone is on the host, with the served commit, and sshd
  // saw one login, from the proxy's address.
  CHECK(v["allowed_rc"] == "0");
  CHECK(v["log"] == "served over ssh");
  CHECK_THAT(sshd_log, ContainsSubstring("Accepted publickey for git from 198.18.0.1"));
  CHECK_THAT(read_file(w.dir / "allowed.json"),
             ContainsSubstring(R"("protocol":"http-connect","host":"git.test","port":22,"address":"198.18.0.1","decision":"allowed")") &&
                 ContainsSubstring(R"("rule":"git.test:22")"));
  // Refused: git fails, nsrun connect says why, nothing reached sshd and
  // the report has the decision.
  CHECK(v["refused_rc"] != "0");
  CHECK_THAT(read_file(w.dir / "refused.err"), ContainsSubstring("nsrun: connect: git.test:22: HTTP/1.1 403"));
  CHECK(!file_exists(w.dir / "clone-refused"));
  std::size_t logins = 0;
  for (std::size_t at = sshd_log.find("Accepted publickey"); at != std::string::npos; at = sshd_log.find("Accepted publickey", at + 1))
    ++logins;
  CHECK(logins == 1);
  CHECK_THAT(read_file(w.dir / "refused.json"),
             ContainsSubstring(R"("host":"git.test","port":22,"address":null,"decision":"denied","reason":"blocked-by-allowlist")"));
}

TEST_CASE("egress dns: the static nsrun carries no NSS resolver", "[egress][egress-dns][static]") {
  // getaddrinfo in a static glibc binary loads NSS modules of the same
  // glibc at run time; a one-binary image has none. nsrun resolves itself.
  auto path = nsrun_static_path();
  if (!path) unavailable("static", "nsrun-static was not built (meson -Dstatic=true); nothing to check");
  if (::access("/usr/bin/nm", X_OK) != 0) unavailable("static", "/usr/bin/nm is missing");
  auto r = run({"/usr/bin/nm", *path});
  if (r.exit_code != 0) unavailable("static", "nm cannot read the symbols (stripped?): " + r.err);
  for (const char* symbol : {" getaddrinfo", " gethostbyname", " __nss_"}) {
    INFO(symbol);
    CHECK(r.out.find(symbol) == std::string::npos);
  }
}
