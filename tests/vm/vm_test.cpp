// The bare microVM image: an initramfs holding only the static nsrun, a
// static busybox and a tiny init, booted with qemu. "/" is then the initial
// rootfs, where the kernel refuses pivot_root. Inside, the init runs nsrun
// in read-only and workspace-write modes and `nsrun bench`, and prints what
// happened on the serial console, which this test reads.
//
// Needs qemu-system-x86_64, a kernel image (/boot/vmlinuz-*, or
// $NSRUN_TEST_KERNEL), a static busybox and the static nsrun; skips loudly
// without them ("vm" in $NSRUN_TEST_REQUIRE turns the skip into a failure).
#include <unistd.h>

#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "vm_support.hpp"

using namespace nsrun_test;

namespace {

// After vm::make_image_root's preamble (busybox, proc, sysfs, devtmpfs).
constexpr std::string_view init_script = R"INIT(echo "NSRUN-VM: root fs $(stat -f -c %T /)"
cd /work/ws
echo "NSRUN-VM: host pidns $(readlink /proc/self/ns/pid)"
nsrun -- sh -c 'echo "NSRUN-VM: sandbox pidns $(readlink /proc/self/ns/pid) pid $$"'
nsrun --mode read-only -- sh -c 'echo x > /work/ws/ro-file' 2>/tmp/err; echo "NSRUN-VM: read-only write exit $? $(cat /tmp/err)"
[ -e /work/ws/ro-file ] && echo "NSRUN-VM: ro-file exists" || echo "NSRUN-VM: ro-file absent"
nsrun --mode workspace-write -- sh -c 'echo hello > /work/ws/ws-file'; echo "NSRUN-VM: workspace write exit $?"
echo "NSRUN-VM: ws-file on the host: $(cat /work/ws/ws-file 2>&1)"
nsrun -- sh -c 'echo x > /etc/outside' 2>/tmp/err; echo "NSRUN-VM: outside write exit $? $(cat /tmp/err)"
[ -e /etc/outside ] && echo "NSRUN-VM: outside-file exists" || echo "NSRUN-VM: outside-file absent"
echo marker > /tmp/host-marker
nsrun -- sh -c 'cd /; cd ../../..; [ -e tmp/host-marker ] && echo "NSRUN-VM: climbed out" || echo "NSRUN-VM: still inside"'
nsrun -- sh -c 'unshare -U true 2>/dev/null && echo "NSRUN-VM: nested userns made" || echo "NSRUN-VM: nested userns refused"'
echo "NSRUN-VM: bench start"
nsrun bench -n 30 --warmup 3 --rows bare,floor,read-only,workspace-write; echo "NSRUN-VM: bench exit $?"
echo "NSRUN-VM: done"
poweroff -f
)INIT";

}  // namespace

TEST_CASE("a bare microVM image: nsrun on an initramfs root, booted with qemu", "[vm]") {
  const vm::Tools t = vm::tools();
  const std::string nsrun_static = t.nsrun;
  TempDir dir("vm");
  const std::string root = dir / "root";
  vm::make_image_root(t, root, init_script);
  // The bench's floor rows (a static program that only execs the payload,
  // per C library): beside the static nsrun or in a build tree's tools/.
  // nsrun bench finds them beside itself in the image.
  std::vector<std::string> floors;
  for (const char* libc : {"glibc", "musl"}) {
    const std::string file = std::string("nsrun-floor-") + libc;
    const std::string nsrun_dir = nsrun_static.substr(0, nsrun_static.rfind('/') + 1);
    const std::string suite = read_link("/proc/self/exe");
    for (const std::string& c : {nsrun_dir + file, nsrun_dir + "tools/" + file,
                                 suite.substr(0, suite.rfind('/') + 1) + "../tools/" + file})
      if (::access(c.c_str(), X_OK) == 0 && vm::is_static(c)) {
        REQUIRE(run({"cp", c, root + "/bin/" + file}).exit_code == 0);
        floors.push_back(std::string("floor ") + libc);
        break;
      }
    if (floors.empty() || floors.back() != std::string("floor ") + libc)
      vm::say(file + " not found beside the static nsrun or in tools/: the image's bench shows that floor unavailable");
  }
  const RunResult booted = vm::boot(t, vm::pack(t, root), "NSRUN-VM: root fs");
  const std::string& out = booted.out;
  INFO("console:\n" << out << booted.err);
  REQUIRE(out.find("NSRUN-VM: done") != std::string::npos);

  // "/" really is the initial ramfs (tmpfs or ramfs), where pivot_root fails.
  CHECK((out.find("NSRUN-VM: root fs tmpfs") != std::string::npos ||
         out.find("NSRUN-VM: root fs ramfs") != std::string::npos));
  // A PID namespace of its own: another pid:[...] and the command is PID 2.
  const auto host = out.find("NSRUN-VM: host pidns pid:[");
  const auto inside = out.find("NSRUN-VM: sandbox pidns pid:[");
  REQUIRE(host != std::string::npos);
  REQUIRE(inside != std::string::npos);
  const std::string host_ns = out.substr(host + 22, out.find(']', host) - host - 22);
  const std::string inside_ns = out.substr(inside + 25, out.find(']', inside) - inside - 25);
  CHECK(host_ns != inside_ns);
  CHECK(out.find("] pid 2") != std::string::npos);
  // read-only: the write fails with EROFS and nothing appears.
  CHECK(out.find("NSRUN-VM: read-only write exit 1") != std::string::npos);
  CHECK(out.find("Read-only file system") != std::string::npos);
  CHECK(out.find("NSRUN-VM: ro-file absent") != std::string::npos);
  // workspace-write: the workspace file is on the host, a write outside fails.
  CHECK(out.find("NSRUN-VM: workspace write exit 0") != std::string::npos);
  CHECK(out.find("NSRUN-VM: ws-file on the host: hello") != std::string::npos);
  CHECK(out.find("NSRUN-VM: outside write exit 1") != std::string::npos);
  CHECK(out.find("NSRUN-VM: outside-file absent") != std::string::npos);
  // The rootfs is still underneath the sandbox's root (pivot_root cannot
  // move it): ".." stops at the root, and no user namespace can be made to
  // regain CAP_SYS_CHROOT (the kernel refuses one to a chrooted process;
  // on an ordinary host the same `unshare -U true` succeeds).
  CHECK(out.find("NSRUN-VM: still inside") != std::string::npos);
  CHECK(out.find("NSRUN-VM: nested userns refused") != std::string::npos);
  // The bench ran and printed its rows and the phases; its figures go to
  // the test's output too (they are figures, never asserted).
  CHECK(out.find("NSRUN-VM: bench exit 0") != std::string::npos);
  if (const auto from = out.find("NSRUN-VM: bench start"), to = out.find("NSRUN-VM: bench exit");
      from != std::string::npos && to != std::string::npos && to > from)
    vm::say("nsrun bench inside the image:\n" + out.substr(from, to - from));
  CHECK(out.find("nsrun workspace-write") != std::string::npos);
  CHECK(out.find("nsrun phases") != std::string::npos);
  CHECK(out.find("pivot_root") == std::string::npos);  // no launch failed on it
  // Every floor copied into the image was measured, and nsrun paired with it.
  if (!floors.empty()) CHECK(out.find("above the floor") != std::string::npos);
  for (const std::string& f : floors) {
    INFO(f);
    CHECK(out.find(f + "  unavailable") == std::string::npos);
    CHECK(out.find(f + ": ") != std::string::npos);  // a figure, whichever its sign
  }
}
