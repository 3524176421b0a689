// --watch-writes reads the paths of a hostile command's calls: garbage
// pointers, unterminated and control-byte paths, a path in a page a
// userfaultfd handler holds. nsrun neither crashes nor waits, and the
// command gets the kernel's own answers, on both rungs.
#include "harness.hpp"
#include "python3.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

// Hostile arguments to the watched calls: a pointer to nothing, a path
// with no NUL for 64 KiB, one that ends at the edge of its mapping, one
// that is terminal control bytes. nsrun neither crashes nor hangs, the
// command gets the kernel's own answers, and what nsrun prints on the
// caller's terminal carries no control byte of the command's.
TEST_CASE("--watch-writes on garbage pointers, unterminated and control-byte paths", "[watch-writes-input][watch-writes]") {
  require_python3();
  constexpr std::string_view script = R"PY(
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_openat, SYS_mkdirat, SYS_renameat2 = 257, 258, 316
AT_FDCWD = -100
def call(name, *args):
    rc = libc.syscall(*args)
    print('%s=%s' % (name, 'ok' if rc >= 0 else os.strerror(ctypes.get_errno())), flush=True)
call('null', SYS_openat, AT_FDCWD, ctypes.c_void_p(0), os.O_WRONLY | os.O_CREAT, 0o644)
call('wild', SYS_openat, AT_FDCWD, ctypes.c_void_p(0xdead0000000), os.O_WRONLY | os.O_CREAT, 0o644)
call('kernel', SYS_openat, AT_FDCWD, ctypes.c_void_p(0xffffffffff600000), os.O_WRONLY | os.O_CREAT, 0o644)
# 64 KiB of 'A' with no NUL, followed by an unmapped page.
m = mmap.mmap(-1, 65536 + 4096)
m.write(b'/' + b'A' * 65535)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
libc.munmap(ctypes.c_void_p(base + 65536), 4096)
call('unterminated', SYS_openat, AT_FDCWD, ctypes.c_void_p(base), os.O_WRONLY | os.O_CREAT, 0o644)
call('unterminated_mkdir', SYS_mkdirat, AT_FDCWD, ctypes.c_void_p(base), 0o755)
call('unterminated_rename', SYS_renameat2, AT_FDCWD, ctypes.c_void_p(base), AT_FDCWD, ctypes.c_void_p(base), 0)
# A bad dirfd and a relative name.
call('baddirfd', SYS_openat, 999, b'x', os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(300):
    try: open('/etc/\x1b]0;PWNED\x07\x1b[2J%d' % i, 'w')
    except OSError: pass
call('after', SYS_openat, AT_FDCWD, b'/etc/nsrun-atk3-after', os.O_WRONLY | os.O_CREAT, 0o644)
sys.exit(3)
)PY";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      TempDir ws("watch-writes-input-ww"), out("watch-writes-input-ww-out");
      write_file(ws / "w.py", script);
      std::vector<std::string> args = rung_options(rung);
      const std::string report = out / "r.json";
      args.insert(args.end(), {"--verdict", "--watch-writes", "--report", report, "--timeout", "60", "--", "/usr/bin/python3", "w.py"});
      RunResult r = nsrun_test::nsrun(args, at(ws));
      INFO(r.out << r.err);
      CHECK(r.exit_code == 3);
      CHECK_THAT(r.out, ContainsSubstring("null=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("wild=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("kernel=Bad address"));
      CHECK_THAT(r.out, ContainsSubstring("unterminated=File name too long"));
      CHECK_THAT(r.out, ContainsSubstring("baddirfd=Bad file descriptor"));
      CHECK_THAT(r.out, ContainsSubstring("after="));
      CHECK_FALSE(file_exists("/etc/nsrun-atk3-after"));
      // The verdict names the writes, with no control byte of the command's.
      CHECK_THAT(r.err, ContainsSubstring("outside the writable roots"));
      for (char c : r.err) {
        INFO(static_cast<int>(static_cast<unsigned char>(c)));
        CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
      }
      // The report is JSON and lists the attempts, capped.
      auto doc = ::nsrun::json::parse(read_file(report));
      REQUIRE(doc);
      const auto* w = doc->find("writes_outside");
      REQUIRE(w != nullptr);
      REQUIRE(w->is_array());
      CHECK(w->as_array().size() <= 256);
      // A relative name under a dirfd that is no file is nowhere: not "/x".
      for (const auto& item : w->as_array()) {
        const auto* path = item.find("path");
        REQUIRE(path != nullptr);
        CHECK(path->as_string() != "/x");
      }
    }
  }
}

// A path in a page registered with userfaultfd: nsrun's read of it (and
// the kernel's) must not wait on a fault handler the command controls,
// which would leave the call unanswered for ever. With --seccomp none the
// command may make a userfaultfd; without privilege only one for
// user-mode faults (UFFD_USER_MODE_ONLY), so the kernel's reads and
// nsrun's process_vm_readv fault plainly (EFAULT), nothing waits.
TEST_CASE("--watch-writes on a path in a userfaultfd page answers, never waits", "[watch-writes-input][watch-writes]") {
  require_python3();
  constexpr std::string_view script = R"PY(
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
fd = -1
for flags in (os.O_CLOEXEC, os.O_CLOEXEC | 1):  # then UFFD_USER_MODE_ONLY
    fd = libc.syscall(323, flags)
    if fd >= 0: break
if fd < 0: print('uffd=none'); sys.exit(0)
libc.ioctl(fd, 0xc018aa3f, ctypes.create_string_buffer(struct.pack('QQQ', 0xAA, 0, 0), 24))  # UFFDIO_API
page = libc.mmap(None, 4096, 3, 0x22, -1, 0)
rc = libc.ioctl(fd, 0xc020aa00, ctypes.create_string_buffer(struct.pack('QQQQ', page, 4096, 1, 0), 32))  # REGISTER
print('registered=%s' % (rc == 0), flush=True)
rc = libc.syscall(257, -100, ctypes.c_void_p(page), os.O_WRONLY | os.O_CREAT, 0o644)
print('open=%s' % ('ok' if rc >= 0 else os.strerror(ctypes.get_errno())), flush=True)
)PY";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::namespaces ? "namespaces" : "landlock")) {
      TempDir ws("watch-writes-input-uffd");
      write_file(ws / "u.py", script);
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--verdict", "--watch-writes", "--seccomp", "none", "--timeout", "30", "--",
                               "/usr/bin/python3", "u.py"});
      RunOptions o = at(ws);
      o.timeout = 60s;
      RunResult r = nsrun_test::nsrun(args, o);
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      if (r.out.find("uffd=none") == std::string::npos) CHECK_THAT(r.out, ContainsSubstring("open=Bad address"));
    }
  }
}
