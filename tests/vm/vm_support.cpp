// The microVM tests' common half: finding qemu, a kernel, a static busybox
// and the static nsrun; packing an image; booting it with KVM when KVM runs
// a guest, else with software emulation (TCG).
#include "vm_support.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

namespace nsrun_test::vm {

namespace {

std::optional<std::string> in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    std::string candidate = std::string(rest.substr(0, colon)) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

}  // namespace

// The newest readable /boot/vmlinuz-*, by name.
std::optional<std::string> kernel_image() {
  if (const char* k = std::getenv("NSRUN_TEST_KERNEL")) return std::string(k);
  std::vector<std::string> found;
  if (DIR* d = ::opendir("/boot")) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.starts_with("vmlinuz-") && ::access(("/boot/" + name).c_str(), R_OK) == 0) found.push_back("/boot/" + name);
    }
    ::closedir(d);
  }
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end());
  return found.back();
}

// A 64-bit ELF with no PT_INTERP needs no dynamic loader in the image.
bool is_static(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < sizeof(Elf64_Ehdr) || bytes.compare(0, 4, ELFMAG) != 0) return false;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    const std::size_t at = eh.e_phoff + static_cast<std::size_t>(i) * eh.e_phentsize;
    if (at + sizeof(Elf64_Phdr) > bytes.size()) return false;
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + at, sizeof ph);
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}



// A /dev/kvm that exists need not run a guest: on a fresh machine qemu
// -enable-kvm hung at "Booting from ROM..." until the time limit, while
// software emulation passed. Before trusting KVM this runs a guest of three
// instructions (real mode: `mov al, 'k'; out 0x10, al; hlt`) in a child
// process bounded to a few seconds. Returns why KVM is not usable, or "".
std::string kvm_unusable() {
  if (::access("/dev/kvm", R_OK | W_OK) != 0) return "/dev/kvm is missing or not usable by this user";
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    ::close(pipefd[0]);
    ::alarm(5);  // a backstop: the parent also stops waiting after 5 s
    auto answer = [&](const char* what) {
      (void)!::write(pipefd[1], what, std::strlen(what));
      ::_exit(0);
    };
    const int kvm = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (kvm < 0) answer("open /dev/kvm failed");
    if (::ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) answer("KVM_GET_API_VERSION is not 12");
    const int vm = ::ioctl(kvm, KVM_CREATE_VM, 0);
    if (vm < 0) answer("KVM_CREATE_VM failed");
    void* mem = ::mmap(nullptr, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) answer("mmap failed");
    const unsigned char code[] = {0xb0, 'k', 0xe6, 0x10, 0xf4};
    std::memcpy(mem, code, sizeof code);
    kvm_userspace_memory_region region{};
    region.guest_phys_addr = 0x1000;
    region.memory_size = 0x1000;
    region.userspace_addr = reinterpret_cast<std::uintptr_t>(mem);
    if (::ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) != 0) answer("KVM_SET_USER_MEMORY_REGION failed");
    const int vcpu = ::ioctl(vm, KVM_CREATE_VCPU, 0);
    if (vcpu < 0) answer("KVM_CREATE_VCPU failed");
    const int run_size = ::ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (run_size <= 0) answer("KVM_GET_VCPU_MMAP_SIZE failed");
    auto* run = static_cast<kvm_run*>(::mmap(nullptr, static_cast<std::size_t>(run_size), PROT_READ | PROT_WRITE,
                                             MAP_SHARED, vcpu, 0));
    if (run == MAP_FAILED) answer("mmap of the vcpu failed");
    kvm_sregs sregs{};
    if (::ioctl(vcpu, KVM_GET_SREGS, &sregs) != 0) answer("KVM_GET_SREGS failed");
    sregs.cs.base = 0;
    sregs.cs.selector = 0;
    if (::ioctl(vcpu, KVM_SET_SREGS, &sregs) != 0) answer("KVM_SET_SREGS failed");
    kvm_regs regs{};
    regs.rip = 0x1000;
    regs.rflags = 2;
    if (::ioctl(vcpu, KVM_SET_REGS, &regs) != 0) answer("KVM_SET_REGS failed");
    if (::ioctl(vcpu, KVM_RUN, 0) != 0) answer("KVM_RUN failed");
    if (run->exit_reason != KVM_EXIT_IO || run->io.port != 0x10 ||
        reinterpret_cast<const char*>(run)[run->io.data_offset] != 'k')
      answer("the guest did not write to port 0x10");
    if (::ioctl(vcpu, KVM_RUN, 0) != 0) answer("KVM_RUN failed");
    if (run->exit_reason != KVM_EXIT_HLT) answer("the guest did not halt");
    answer("ok");
  }
  ::close(pipefd[1]);
  pollfd p{pipefd[0], POLLIN, 0};
  std::string got;
  if (::poll(&p, 1, 5000) == 1) {
    char buf[128];
    const ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n > 0) got.assign(buf, static_cast<std::size_t>(n));
  }
  ::close(pipefd[0]);
  ::kill(child, SIGKILL);
  // A vcpu stuck in the kernel may not die at once: do not wait forever.
  eventually([&] { return ::waitpid(child, nullptr, WNOHANG) != 0; }, 2s);
  if (got == "ok") return "";
  return got.empty() ? "a three-instruction guest did not finish within 5 s" : got;
}

namespace {

// qemu's command line for the image, with KVM or software emulation.
// no_timer_check: under software emulation on a loaded host the guest's
// IO-APIC timer check can miss its ticks and the kernel panics ("IO-APIC +
// timer doesn't work!") before the init runs; the check guards against
// broken hardware, which an emulated PC is not.
std::vector<std::string> qemu_argv(const std::string& qemu, const std::string& kernel, const std::string& initrd,
                                   bool kvm, const Boot& how) {
  std::vector<std::string> argv{qemu, "-m", std::to_string(how.memory_mib), "-smp", "2", "-nographic", "-no-reboot",
                                "-kernel", kernel, "-initrd", initrd, "-append",
                                "console=ttyS0 panic=-1 quiet no_timer_check" + how.append};
  if (kvm) argv.insert(argv.end(), {"-enable-kvm", "-cpu", "host"});
  else argv.insert(argv.end(), {"-accel", "tcg", "-cpu", "max"});
  return argv;
}

}  // namespace

void say(const std::string& text) {
  std::cerr << "vm_test: " << text << std::endl;
  WARN(text);
}


Tools tools() {
  Tools t;
  auto qemu = in_path("qemu-system-x86_64");
  if (!qemu) unavailable("vm", "qemu-system-x86_64 not found (tools/install-deps.sh --test installs qemu-system-x86)");
  auto kernel = kernel_image();
  if (!kernel) unavailable("vm", "no readable /boot/vmlinuz-* (tools/install-deps.sh --test installs linux-image-amd64)");
  auto nsrun_static = nsrun_static_path();
  if (!nsrun_static) unavailable("vm", "no static nsrun beside the suite (tools/run-tests.sh without --quick builds it)");
  for (const char* b : {"/bin/busybox", "/usr/bin/busybox"})
    if (::access(b, X_OK) == 0 && is_static(b)) t.busybox = b;
  if (t.busybox.empty()) unavailable("vm", "no static busybox (Debian busybox-static)");
  t.qemu = *qemu;
  t.kernel = *kernel;
  t.nsrun = *nsrun_static;
  return t;
}

void make_image_root(const Tools& t, const std::string& root, std::string_view init) {
  for (const char* d : {"", "/bin", "/proc", "/sys", "/dev", "/tmp", "/etc", "/work", "/work/ws"}) make_dir(root + d);
  REQUIRE(run({"cp", t.busybox, root + "/bin/busybox"}).exit_code == 0);
  REQUIRE(run({"cp", t.nsrun, root + "/bin/nsrun"}).exit_code == 0);
  // Every init starts the same: busybox's applets on PATH, the kernel's
  // file systems mounted.
  constexpr std::string_view preamble = R"INIT(#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
)INIT";
  write_file(root + "/init", std::string(preamble) + std::string(init), 0755);
}

std::string pack(const Tools& t, const std::string& root) {
  const std::string initrd = root + ".cpio";
  // Owned by root in the image whoever packs it: the sandboxed root has no
  // CAP_DAC_OVERRIDE, so a workspace owned by the packing user would be
  // read-only to it.
  RunResult packed = run({"sh", "-c", "cd " + shell_quote(root) + " && find . | " + shell_quote(t.busybox) +
                                          " cpio -o -H newc -R 0:0 > " + shell_quote(initrd)});
  REQUIRE(packed.exit_code == 0);
  return initrd;
}

RunResult boot(const Tools& t, const std::string& initrd, std::string_view first_line, const Boot& how) {
  // KVM when it runs a guest, else software emulation (slower, still well
  // under the limit). Even a KVM that passes the probe may hang while
  // booting the kernel: the init's first line must come within 60 s (a KVM
  // boot takes a few), or the run starts over with emulation.
  RunOptions limited;
  limited.timeout = how.limit;
  if (const std::string why = kvm_unusable(); !why.empty()) {
    say("KVM not used (" + why + "): software emulation (TCG)");
  } else {
    Process vm(qemu_argv(t.qemu, t.kernel, initrd, true, how), limited);
    if (vm.poll_line(first_line, 60s)) return vm.wait(how.limit);
    say("KVM did not boot the image within 60 s (console: " + std::to_string(vm.out().size()) +
        " bytes); starting over with software emulation (TCG)");
  }
  return run(qemu_argv(t.qemu, t.kernel, initrd, false, how), limited);
}

}  // namespace nsrun_test::vm
