// The default seccomp filter without loading it: the rule table (pure), and
// the compiled BPF program run through a small classic-BPF interpreter, so
// the program the child would load is checked against the table for the
// cases that matter (high bits of ioctl requests, other ABIs).
#include <catch2/catch_test_macros.hpp>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/fs.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "seccomp/compile.hpp"
#include "seccomp/filter.hpp"
#include "seccomp/precompiled.hpp"
#include "seccomp/rules.hpp"
#include "seccomp/writes.hpp"
#include "unit_support.hpp"

using namespace nsrun;

namespace {

using Args = std::array<uint64_t, 6>;

// Classic BPF as the kernel runs it for seccomp, for the instructions
// libseccomp emits. Anything else throws, so a new construct is noticed.
uint32_t run_bpf(const BpfProgram& prog, const seccomp_data& data) {
  uint32_t a = 0, x = 0;
  uint32_t mem[BPF_MEMWORDS] = {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(&data);
  for (std::size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& in = prog[pc];
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (in.k + 4 > sizeof data) throw std::runtime_error("load out of range");
        std::memcpy(&a, bytes + in.k, 4);
        break;
      case BPF_LD | BPF_MEM: a = mem[in.k]; break;
      case BPF_LDX | BPF_MEM: x = mem[in.k]; break;
      case BPF_LD | BPF_IMM: a = in.k; break;
      case BPF_ST: mem[in.k] = a; break;
      case BPF_STX: mem[in.k] = x; break;
      case BPF_ALU | BPF_AND | BPF_K: a &= in.k; break;
      case BPF_ALU | BPF_OR | BPF_K: a |= in.k; break;
      case BPF_MISC | BPF_TAX: x = a; break;
      case BPF_MISC | BPF_TXA: a = x; break;
      case BPF_JMP | BPF_JA: pc += in.k; break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += a > in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & in.k) ? in.jt : in.jf; break;
      case BPF_RET | BPF_K: return in.k;
      case BPF_RET | BPF_A: return a;
      default: throw std::runtime_error("unexpected BPF opcode " + std::to_string(in.code));
    }
  }
  throw std::runtime_error("fell off the end of the program");
}

int nr_of(const char* name) {
  int nr = syscall_number(name);
  REQUIRE(nr != __NR_SCMP_ERROR);
  return nr;
}

seccomp_data call(const char* name, Args args = {}, uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data d{};
  d.nr = nr_of(name);
  d.arch = arch;
  for (std::size_t i = 0; i < 6; ++i) d.args[i] = args[i];
  return d;
}

constexpr uint32_t errno_action(int err) { return SECCOMP_RET_ERRNO | static_cast<uint32_t>(err); }

Policy standard() { return Policy{}; }

const char* const kAlwaysRefused[] = {
    "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "acct", "swapon", "swapoff", "reboot", "open_by_handle_at",
    "quotactl", "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
    "fsconfig", "fspick", "mount_setattr",
};

}  // namespace

TEST_CASE("the default rule table refuses the listed calls with EPERM", "[seccomp][unit]") {
  FilterSpec spec = filter_spec(standard(), FilterRung::namespaces);
  REQUIRE(spec.enabled);
  CHECK_FALSE(spec.log);
  for (const char* name : kAlwaysRefused) {
    INFO(name);
    CHECK(decide(spec, name, {}) == EPERM);
  }
  CHECK(decide(spec, "read", {}) == std::nullopt);
  CHECK(decide(spec, "openat", {}) == std::nullopt);
}

TEST_CASE("ioctl: TIOCSTI and TIOCLINUX are caught on the low 32 bits only", "[seccomp][unit]") {
  FilterSpec spec = filter_spec(standard(), FilterRung::namespaces);
  CHECK(decide(spec, "ioctl", {0, TIOCSTI}) == EPERM);
  CHECK(decide(spec, "ioctl", {0, TIOCLINUX}) == EPERM);
  // CVE-2019-10063: the kernel drops the high half of the request.
  CHECK(decide(spec, "ioctl", {0, (1ULL << 32) | TIOCSTI}) == EPERM);
  CHECK(decide(spec, "ioctl", {0, 0xdeadbeef00000000ULL | TIOCLINUX}) == EPERM);
  CHECK(decide(spec, "ioctl", {0, TIOCGWINSZ}) == std::nullopt);
  CHECK(decide(spec, "ioctl", {0, FIONREAD}) == std::nullopt);
}

TEST_CASE("personality: only PER_LINUX and the query pass", "[seccomp][unit]") {
  FilterSpec spec = filter_spec(standard(), FilterRung::namespaces);
  CHECK(decide(spec, "personality", {0}) == std::nullopt);
  CHECK(decide(spec, "personality", {0xffffffffULL}) == std::nullopt);
  for (uint64_t persona : {0x8ULL, 0x0040000ULL, 0x0400000ULL, 0x80000000ULL, 0xfffffffeULL, 0x7fffffffULL,
                           0x100000000ULL, 0x1ffffffffULL, ~0ULL, 1ULL}) {
    INFO(std::hex << persona);
    CHECK(decide(spec, "personality", {persona}) == EPERM);
  }
}

TEST_CASE("nested user namespaces: unshare/clone EPERM, clone3 ENOSYS, unless allowed", "[seccomp][unit]") {
  Policy p = standard();
  FilterSpec spec = filter_spec(p, FilterRung::namespaces);
  CHECK(decide(spec, "unshare", {CLONE_NEWUSER}) == EPERM);
  CHECK(decide(spec, "unshare", {CLONE_NEWUSER | CLONE_NEWNS}) == EPERM);
  CHECK(decide(spec, "unshare", {CLONE_NEWNS}) == std::nullopt);
  CHECK(decide(spec, "clone", {CLONE_NEWUSER | SIGCHLD}) == EPERM);
  CHECK(decide(spec, "clone", {SIGCHLD}) == std::nullopt);
  CHECK(decide(spec, "clone", {CLONE_VM | CLONE_THREAD | CLONE_SIGHAND}) == std::nullopt);
  CHECK(decide(spec, "clone3", {}) == ENOSYS);

  p.allow_nested_userns = true;
  FilterSpec allowed = filter_spec(p, FilterRung::namespaces);
  CHECK(decide(allowed, "unshare", {CLONE_NEWUSER}) == std::nullopt);
  CHECK(decide(allowed, "clone", {CLONE_NEWUSER | SIGCHLD}) == std::nullopt);
  CHECK(decide(allowed, "clone3", {}) == std::nullopt);
  // A nested sandbox builds its root with the mount calls.
  for (auto name : {"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "mount_setattr"}) {
    INFO(name);
    CHECK(decide(allowed, name, {}) == std::nullopt);
  }
  // Everything else stays.
  CHECK(decide(allowed, "keyctl", {}) == EPERM);
  CHECK(decide(allowed, "open_by_handle_at", {}) == EPERM);
  // On the Landlock rung the mount calls stay refused (the host's mounts).
  CHECK(decide(filter_spec(p, FilterRung::landlock), "mount", {}) == EPERM);
}

TEST_CASE("sockets: AF_VSOCK always; inet families only for network none on the Landlock rung",
          "[seccomp][unit]") {
  Policy p = standard();
  CHECK(decide(filter_spec(p, FilterRung::namespaces), "socket", {AF_VSOCK}) == EPERM);
  CHECK(decide(filter_spec(p, FilterRung::namespaces), "socket", {(1ULL << 40) | AF_VSOCK}) == EPERM);
  CHECK(decide(filter_spec(p, FilterRung::landlock), "socket", {AF_INET}) == std::nullopt);

  p.network = Network::none;
  // The namespace rung has its own network namespace for that.
  CHECK(decide(filter_spec(p, FilterRung::namespaces), "socket", {AF_INET}) == std::nullopt);
  FilterSpec landlock = filter_spec(p, FilterRung::landlock);
  for (uint64_t family : {AF_INET, AF_INET6, AF_PACKET}) CHECK(decide(landlock, "socket", {family}) == EPERM);
  CHECK(decide(landlock, "socket", {AF_UNIX}) == std::nullopt);
  CHECK(decide(landlock, "socket", {AF_NETLINK}) == std::nullopt);
}

TEST_CASE("--seccomp none has no program; log keeps the rules but logs", "[seccomp][unit]") {
  Policy p = standard();
  p.seccomp = SeccompMode::none;
  FilterSpec none = filter_spec(p, FilterRung::namespaces);
  CHECK_FALSE(none.enabled);
  CHECK(decide(none, "bpf", {}) == std::nullopt);
  auto program = compile_spec(none);
  REQUIRE(program);
  CHECK(program->empty());

  p.seccomp = SeccompMode::log;
  FilterSpec log = filter_spec(p, FilterRung::namespaces);
  CHECK(log.enabled);
  CHECK(log.log);
  CHECK(log.rules == filter_spec(standard(), FilterRung::namespaces).rules);
}

TEST_CASE("the compiled program agrees with the table", "[seccomp][unit][bpf]") {
  Policy p = standard();
  p.network = Network::none;
  FilterSpec spec = filter_spec(p, FilterRung::landlock);
  auto program = compile_spec(spec);
  REQUIRE(program);
  REQUIRE_FALSE(program->empty());
  CHECK(program->size() < BPF_MAXINSNS);

  const uint64_t samples[] = {0,          1,          2,          8,          10,         17,
                              40,         TIOCSTI,    TIOCLINUX,  TIOCGWINSZ, 0x0040000,  0xfffffffe,
                              0xffffffff, 1ULL << 32, (1ULL << 32) | TIOCSTI, (1ULL << 63) | AF_INET,
                              CLONE_NEWUSER, CLONE_NEWUSER | SIGCHLD, SIGCHLD};
  for (const Rule& rule : spec.rules) {
    const std::string name(rule.syscall);
    for (unsigned index = 0; index < 2; ++index) {
      for (uint64_t v : samples) {
        Args args{};
        args[index] = v;
        const uint32_t got = run_bpf(*program, call(name.c_str(), args));
        const auto want = decide(spec, rule.syscall, args);
        INFO(name << " arg" << index << " = 0x" << std::hex << v);
        CHECK(got == (want ? errno_action(*want) : SECCOMP_RET_ALLOW));
      }
    }
  }
  CHECK(run_bpf(*program, call("read")) == SECCOMP_RET_ALLOW);
  CHECK(run_bpf(*program, call("ioctl", {0, (7ULL << 32) | TIOCSTI})) == errno_action(EPERM));
}

TEST_CASE("the compiled program refuses other ABIs: i386 and x32", "[seccomp][unit][bpf]") {
  auto program = compile_spec(filter_spec(standard(), FilterRung::namespaces));
  REQUIRE(program);
  // i386 getpid is 20; an i386 mount (21) must not slip past the native rules.
  for (int nr : {20, 21, 26 /* ptrace */}) {
    seccomp_data d{};
    d.nr = nr;
    d.arch = AUDIT_ARCH_I386;
    CHECK(run_bpf(*program, d) == errno_action(EPERM));
  }
  // x32 calls arrive with the x86_64 arch and bit 30 set in the number.
  seccomp_data x32 = call("getpid");
  x32.nr |= 0x40000000;
  CHECK(run_bpf(*program, x32) == errno_action(EPERM));
  seccomp_data x32_mount = call("mount");
  x32_mount.nr |= 0x40000000;
  CHECK(run_bpf(*program, x32_mount) == errno_action(EPERM));
}

TEST_CASE("log mode compiles to SECCOMP_RET_LOG, other ABIs too", "[seccomp][unit][bpf]") {
  Policy p = standard();
  p.seccomp = SeccompMode::log;
  auto program = compile_filter(p);
  REQUIRE(program);
  CHECK(run_bpf(*program, call("bpf")) == SECCOMP_RET_LOG);
  CHECK(run_bpf(*program, call("ioctl", {0, TIOCSTI})) == SECCOMP_RET_LOG);
  CHECK(run_bpf(*program, call("read")) == SECCOMP_RET_ALLOW);
  seccomp_data d{};
  d.nr = 20;
  d.arch = AUDIT_ARCH_I386;
  CHECK(run_bpf(*program, d) == SECCOMP_RET_LOG);
}

TEST_CASE("describe_filter names the filter and the nested-userns choice", "[seccomp][unit]") {
  Policy p = standard();
  auto spec = filter_spec(p, FilterRung::namespaces);
  auto program = compile_spec(spec);
  REQUIRE(program);
  std::string text = describe_filter(spec, *program);
  CHECK(text.starts_with("default ("));
  CHECK(text.find("nested user namespaces refused") != std::string::npos);
  CHECK(text.find("io_uring_setup") != std::string::npos);
  p.seccomp = SeccompMode::none;
  CHECK(describe_filter(filter_spec(p, FilterRung::namespaces), {}).starts_with("none"));
}

namespace {
bool same_program(const Result<BpfProgram>& a, const BpfProgram& b) { return a && nsrun_unit::same_program(*a, b); }
}  // namespace

// The programs are stored packed (seccomp/packed.hpp): every one nsrun can
// install is unpacked here and compared byte for byte with what libseccomp
// compiles from the table now.
TEST_CASE("the programs compiled at build time are what the table compiles to now", "[seccomp][unit]") {
  for (unsigned i = 0; i < FilterKey::variants; ++i) {
    const FilterKey key = FilterKey::from_index(i);
    INFO("key " << i);
    CHECK(key.index() == i);
    const FilterSpec spec = filter_spec(key);
    auto fresh = compile_spec(spec);
    REQUIRE(fresh);
    CHECK(same_program(precompiled_filter(key), *fresh));
    const FilterSpec notify = notify_spec(spec);
    auto fresh_notify = compile_spec(notify);
    REQUIRE(fresh_notify);
    CHECK(same_program(precompiled_notify_filter(key), *fresh_notify));
    auto fresh_watch = compile_spec(notify_watch_spec(notify));
    REQUIRE(fresh_watch);
    CHECK(same_program(precompiled_notify_watch_filter(key), *fresh_watch));
    auto fresh_guard = compile_spec(notify_guard_spec(notify));
    REQUIRE(fresh_guard);
    CHECK(same_program(precompiled_notify_guard_filter(key), *fresh_guard));
  }
  auto fresh = compile_spec(no_userns_spec());
  REQUIRE(fresh);
  CHECK(same_program(precompiled_no_userns_filter(), *fresh));
  auto watch = compile_spec(watch_writes_spec());
  REQUIRE(watch);
  CHECK(same_program(precompiled_watch_writes_filter(), *watch));
}

TEST_CASE("the filter key captures every policy field the filter reads") {
  Policy p;
  CHECK(filter_key(p, FilterRung::namespaces).index() == 0);
  p.seccomp = SeccompMode::log;
  p.allow_nested_userns = true;
  p.network = Network::none;
  CHECK(filter_key(p, FilterRung::namespaces).index() == 3);
  CHECK(filter_key(p, FilterRung::landlock).index() == 15);
  CHECK(filter_spec(p, FilterRung::landlock).rules == filter_spec(FilterKey::from_index(15)).rules);
  p.seccomp = SeccompMode::none;
  CHECK_FALSE(filter_key(p, FilterRung::namespaces).enabled);
  CHECK(filter_key(p, FilterRung::landlock).index() == 16 + 8 + 4 + 2);
}

// What Landlock cannot confine to the writable
// roots (file metadata) or does not isolate (host IPC) is refused on the
// Landlock rung, and only there.
namespace {
constexpr const char* landlock_refused_calls[] = {
    "chmod",      "fchmod",       "fchmodat",     "fchmodat2",     "chown",        "fchown",
    "lchown",     "fchownat",     "utime",        "utimes",        "futimesat",    "utimensat",
    "setxattr",   "lsetxattr",    "fsetxattr",    "setxattrat",    "removexattr",  "lremovexattr",
    "fremovexattr", "removexattrat", "file_setattr", "shmget",      "shmat",        "shmctl",
    "msgget",     "msgsnd",       "msgrcv",       "msgctl",        "semget",       "semop",
    "semtimedop", "semctl",       "mq_open",      "mq_unlink",     "mq_timedsend", "mq_timedreceive",
    "mq_notify",  "mq_getsetattr", "io_uring_setup", "io_uring_enter", "io_uring_register",
};
constexpr uint64_t landlock_refused_ioctls[] = {FS_IOC_SETFLAGS,   FS_IOC32_SETFLAGS,  FS_IOC_FSSETXATTR,
                                                FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FIDEDUPERANGE,
                                                _IOW('f', 4, long) /* EXT4_IOC_SETVERSION */};
}  // namespace

TEST_CASE("the Landlock rung refuses metadata changes and host IPC; the namespace rung allows them",
          "[seccomp][unit][landlock]") {
  for (SeccompMode mode : {SeccompMode::standard, SeccompMode::log, SeccompMode::none}) {
    Policy p = standard();
    p.seccomp = mode;
    for (Mode m : {Mode::read_only, Mode::workspace_write}) {
      p.mode = m;
      const FilterSpec ll = filter_spec(p, FilterRung::landlock);
      const FilterSpec ns = filter_spec(p, FilterRung::namespaces);
      for (const char* name : landlock_refused_calls) {
        INFO(name << " seccomp " << static_cast<int>(mode));
        CHECK(decide(ll, name, {}) == EPERM);
        // io_uring is in the namespace rung's default filter already.
        if (!std::string_view(name).starts_with("io_uring") || mode == SeccompMode::none)
          CHECK(decide(ns, name, {}) == std::nullopt);
      }
      for (uint64_t cmd : landlock_refused_ioctls) {
        INFO("ioctl 0x" << std::hex << cmd);
        CHECK(decide(ll, "ioctl", {3, cmd}) == EPERM);
        // Bit 32 set: the kernel truncates `cmd` to 32 bits, so must the filter.
        CHECK(decide(ll, "ioctl", {3, (1ULL << 32) | cmd}) == EPERM);
        CHECK(decide(ns, "ioctl", {3, cmd}) == std::nullopt);
      }
      // shmdt only unmaps; reading metadata stays allowed.
      for (const char* name : {"shmdt", "stat", "statx", "getxattr", "listxattr", "fstat"})
        CHECK(decide(ll, name, {}) == std::nullopt);
      CHECK(decide(ll, "ioctl", {3, FS_IOC_GETFLAGS}) == std::nullopt);
      CHECK(decide(ll, "ioctl", {3, FICLONE}) == std::nullopt);
    }
  }
}

TEST_CASE("the Landlock rung's rules refuse in log mode and with --seccomp none, other ABIs too",
          "[seccomp][unit][bpf][landlock]") {
  for (SeccompMode mode : {SeccompMode::log, SeccompMode::none}) {
    Policy p = standard();
    p.seccomp = mode;
    p.network = Network::none;
    auto program = compile_filter(p, FilterRung::landlock);
    REQUIRE(program);
    REQUIRE_FALSE(program->empty());
    for (const char* name : landlock_refused_calls) {
      INFO(name);
      CHECK(run_bpf(*program, call(name)) == errno_action(EPERM));
    }
    CHECK(run_bpf(*program, call("ioctl", {3, (5ULL << 32) | FS_IOC_SETFLAGS})) == errno_action(EPERM));
    CHECK(run_bpf(*program, call("socket", {AF_INET})) == errno_action(EPERM));
    CHECK(run_bpf(*program, call("read")) == SECCOMP_RET_ALLOW);
    // The hardening rules follow --seccomp: logged, or not there at all.
    CHECK(run_bpf(*program, call("bpf")) == (mode == SeccompMode::log ? SECCOMP_RET_LOG : SECCOMP_RET_ALLOW));
    seccomp_data i386_chmod{};
    i386_chmod.nr = 15;
    i386_chmod.arch = AUDIT_ARCH_I386;
    CHECK(run_bpf(*program, i386_chmod) == errno_action(EPERM));
  }
}

// AF_UNIX sockets refused for --unix-sockets none on both
// rungs, and on the Landlock rung whenever a host socket is to be hidden
// (Landlock cannot stop connect() to a path); socketpair always stays.
TEST_CASE("--unix-sockets none and hidden sockets on the Landlock rung refuse AF_UNIX, not socketpair",
          "[seccomp][unit][bpf]") {
  Policy p = standard();
  CHECK_FALSE(filter_key(p, FilterRung::namespaces).deny_unix);
  CHECK_FALSE(filter_key(p, FilterRung::landlock).deny_unix);
  p.hidden_sockets = {"/run/docker.sock"};
  CHECK_FALSE(filter_key(p, FilterRung::namespaces).deny_unix);  // covered by a mount there
  CHECK(filter_key(p, FilterRung::landlock).deny_unix);
  p.hidden_sockets.clear();
  p.unix_sockets = UnixSockets::none;
  for (FilterRung rung : {FilterRung::namespaces, FilterRung::landlock}) {
    CHECK(filter_key(p, rung).deny_unix);
    FilterSpec spec = filter_spec(p, rung);
    CHECK(decide(spec, "socket", {AF_UNIX, SOCK_STREAM}) == EACCES);
    CHECK(decide(spec, "socket", {(1ULL << 32) | AF_UNIX, SOCK_STREAM}) == EACCES);  // the kernel reads an int
    CHECK(decide(spec, "socketpair", {AF_UNIX, SOCK_STREAM}) == std::nullopt);
    auto program = compile_filter(p, rung);
    REQUIRE(program);
    CHECK(run_bpf(*program, call("socket", {AF_UNIX, SOCK_DGRAM})) == errno_action(EACCES));
    CHECK(run_bpf(*program, call("socketpair", {AF_UNIX, SOCK_STREAM})) == SECCOMP_RET_ALLOW);
  }
  CHECK(decide(filter_spec(p, FilterRung::namespaces), "socket", {AF_INET, SOCK_STREAM}) == std::nullopt);
  // Every variant of the key has its own precompiled program.
  CHECK(FilterKey::from_index(filter_key(p, FilterRung::landlock).index()) == filter_key(p, FilterRung::landlock));
}
