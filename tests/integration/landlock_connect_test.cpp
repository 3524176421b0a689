// On the Landlock rung with --network proxy, connect() and its
// neighbours reach only the proxy, whatever the command does with odd
// fds, racing threads, vfork children or io_uring; an fd the caller left
// open is not the command's.
#include "harness.hpp"
#include "python3.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

// What connect() and its neighbours do with odd fds and racing threads on
// the Landlock rung (--network proxy): only the proxy is ever reached. The
// test's own listener on 127.0.0.1 stands for any other host; nothing may
// arrive there. And an fd the caller left open is not the command's.
TEST_CASE("Landlock rung connect() on odd fds, racing dup2, non-dumpable, vfork children, io_uring",
          "[landlock-connect][egress][landlock]") {
  require_python3();
  rung_options(Rung::landlock);
  constexpr std::string_view script = R"PY(
import ctypes, os, socket, struct, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
P = int(os.environ['http_proxy'].rsplit(':', 1)[1])
A = int(sys.argv[1])
def out(k, v): print('%s=%s' % (k, v), flush=True)
def res(rc): return 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())
def sin(a, p): return struct.pack('=H', socket.AF_INET) + struct.pack('!H', p) + socket.inet_aton(a) + bytes(8)
proxy = ctypes.create_string_buffer(sin('127.0.0.1', P), 16)
atk = ctypes.create_string_buffer(sin('127.0.0.1', A), 16)
out('fds', ','.join(sorted(os.listdir('/proc/self/fd'), key=int)))
out('io_uring', res(libc.syscall(425, 8, ctypes.create_string_buffer(120))))
r, w = os.pipe()
out('pipe', res(libc.connect(r, proxy, 16)))
out('closed', res(libc.connect(999, proxy, 16)))
s = socket.socket()
out('unspec', res(libc.connect(s.fileno(), ctypes.create_string_buffer(bytes(16), 16), 16)))
out('sendto', res(libc.sendto(s.fileno(), b'x', 1, 0x4000, atk, 16)))
f = os.open('/dev/null', os.O_RDONLY)
seen = {}
for _ in range(100):
    t = socket.socket(); fd = t.fileno(); stop = []
    def swap():
        while not stop:
            try: os.dup2(f, fd)
            except OSError: pass
    th = threading.Thread(target=swap); th.start()
    rc = libc.connect(fd, atk if _ % 2 else proxy, 16); e = ctypes.get_errno()
    stop.append(1); th.join()
    k = 'ok' if rc == 0 else os.strerror(e)
    seen[k] = seen.get(k, 0) + 1
    try: t.close()
    except OSError: pass
out('swap', ' '.join('%s:%d' % kv for kv in sorted(seen.items())))
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
n = socket.socket(); out('nondumpable_atk', res(libc.connect(n.fileno(), atk, 16)))
libc.prctl(4, 1, 0, 0, 0)
pid = os.posix_spawn(sys.executable, [sys.executable, '-c',
    'import socket\ntry:\n socket.create_connection(("127.0.0.1", %d), timeout=5); print("child_atk=connected")\n'
    'except OSError as e: print("child_atk=" + e.strerror)' % A], os.environ)
os.waitpid(pid, 0)
)PY";
  TempDir ws("landlock-connect-eg"), home("landlock-connect-eg-home");
  write_file(ws / "e.py", script);
  // The attacker's listener, and a connection to it left open (not
  // close-on-exec) as an fd the caller forgot.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  REQUIRE(listener >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(listener, 64) == 0);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int left_open = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(left_open >= 0);
  REQUIRE(::connect(left_open, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const int accepted = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(accepted >= 0);
  RunOptions o = at(ws);
  o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + home.path(), "XDG_RUNTIME_DIR="};
  o.timeout = 120s;
  RunResult r = nsrun_test::nsrun({"--backend", "landlock", "--network", "proxy", "--allow-host", "example.invalid", "--",
                                   "/usr/bin/python3", "e.py", std::to_string(ntohs(a.sin_port))},
                                  o);
  ::close(left_open);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("fds=0,1,2,3\n") != std::string::npos);  // 3: listdir's own
  CHECK_THAT(r.out, ContainsSubstring("io_uring=Operation not permitted"));
  CHECK_THAT(r.out, ContainsSubstring("pipe=Socket operation on non-socket"));
  CHECK_THAT(r.out, ContainsSubstring("closed=Bad file descriptor"));
  CHECK_THAT(r.out, ContainsSubstring("unspec=ok"));
  CHECK_THAT(r.out, ContainsSubstring("sendto=Broken pipe"));
  CHECK_THAT(r.out, ContainsSubstring("swap="));
  CHECK_THAT(r.out, ContainsSubstring("nondumpable_atk=Permission denied"));
  CHECK_THAT(r.out, ContainsSubstring("child_atk=Permission denied"));
  // Nothing of the command's reached the listener, and the connection the
  // caller left open got no byte.
  CHECK(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) < 0);
  CHECK(errno == EAGAIN);
  char buf[16];
  CHECK(::recv(accepted, buf, sizeof buf, MSG_DONTWAIT) <= 0);  // EOF (closed above): no byte came
  ::close(accepted);
  ::close(listener);
}
