#include "seccomp/proxy_filter.hpp"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <cstdlib>

namespace nsrun {

namespace {

#if defined(__x86_64__)
constexpr uint32_t native_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t native_arch = AUDIT_ARCH_AARCH64;
#else
#error "the proxy filter knows x86_64 and aarch64"
#endif

// What the proxy's threads call, glibc's pthread and malloc included.
constexpr long allowed[] = {
    SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_close, SYS_ppoll,
#ifdef SYS_poll
    SYS_poll,
#endif
    SYS_recvfrom, SYS_recvmsg, SYS_sendto, SYS_sendmsg, SYS_shutdown, SYS_accept4, SYS_connect, SYS_getsockopt,
    SYS_setsockopt, SYS_getsockname, SYS_getpeername, SYS_fcntl,
    SYS_brk, SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap, SYS_madvise,
    SYS_futex, SYS_set_robust_list, SYS_rseq, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_sched_yield,
    SYS_sched_getaffinity, SYS_exit, SYS_exit_group, SYS_getpid, SYS_gettid, SYS_restart_syscall,
    SYS_clock_gettime, SYS_clock_nanosleep, SYS_gettimeofday, SYS_getrandom,
};

constexpr uint32_t allow = SECCOMP_RET_ALLOW;
constexpr uint32_t refuse = SECCOMP_RET_ERRNO | EPERM;

// The low 32 bits of argument `i` (the kernel reads int arguments so).
constexpr uint32_t arg_low(unsigned i) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i + (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4));
}

// A few instructions with symbolic jump targets, resolved at the end.
class Assembler {
 public:
  void stmt(uint16_t code, uint32_t k) { ins_.push_back({BPF_STMT(code, k), -1, -1}); }
  void ret(uint32_t k) { stmt(BPF_RET | BPF_K, k); }
  // if (A == k) goto yes else goto no (-1: the next instruction).
  void jeq(uint32_t k, int yes, int no = -1) { ins_.push_back({BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0), yes, no}); }
  void jset(uint32_t k, int yes, int no = -1) { ins_.push_back({BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, k, 0, 0), yes, no}); }
  void jge(uint32_t k, int yes, int no = -1) { ins_.push_back({BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, k, 0, 0), yes, no}); }
  int label() { return next_++; }
  void place(int l) { at_[l] = ins_.size(); }
  BpfProgram finish() const {
    BpfProgram out;
    for (std::size_t i = 0; i < ins_.size(); ++i) {
      sock_filter f = ins_[i].f;
      auto offset = [&](int l) -> uint8_t {
        if (l < 0) return 0;
        // A broken invariant of this file (the program is fixed), caught by
        // its unit test: a crash, not an error to handle.
        const auto it = at_.find(l);
        if (it == at_.end()) std::abort();
        const std::size_t to = it->second;
        if (to <= i || to - i - 1 > 255) std::abort();
        return static_cast<uint8_t>(to - i - 1);
      };
      f.jt = offset(ins_[i].yes);
      f.jf = offset(ins_[i].no);
      out.push_back(f);
    }
    return out;
  }

 private:
  struct Ins {
    sock_filter f;
    int yes, no;
  };
  std::vector<Ins> ins_;
  std::map<int, std::size_t> at_;
  int next_ = 0;
};

}  // namespace

BpfProgram proxy_filter() {
  Assembler a;
  const int ok = a.label(), no = a.label(), kill = a.label(), socket_call = a.label(), clone_call = a.label();
  a.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  a.jeq(native_arch, -1, kill);
  a.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  a.jge(__X32_SYSCALL_BIT, kill);  // x32 shares the architecture's tag
#endif
  for (long nr : allowed) a.jeq(static_cast<uint32_t>(nr), ok);
  a.jeq(SYS_socket, socket_call);
  a.jeq(SYS_clone, clone_call);
  const int enosys = a.label();
  a.jeq(SYS_clone3, enosys);
  a.ret(refuse);

  a.place(enosys);
  a.ret(SECCOMP_RET_ERRNO | ENOSYS);

  // socket(AF_INET or AF_INET6, SOCK_STREAM or SOCK_DGRAM [| flags], 0).
  a.place(socket_call);
  const int family_ok = a.label(), type_ok = a.label();
  a.stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0));
  a.jeq(AF_INET, family_ok);
  a.jeq(AF_INET6, family_ok, no);
  a.place(family_ok);
  a.stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(1));
  a.stmt(BPF_ALU | BPF_AND | BPF_K, ~static_cast<uint32_t>(SOCK_NONBLOCK | SOCK_CLOEXEC));
  a.jeq(SOCK_STREAM, type_ok);
  a.jeq(SOCK_DGRAM, type_ok, no);
  a.place(type_ok);
  a.stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(2));
  a.jeq(0, ok, no);

  // clone() makes threads only: without CLONE_THREAD it would be a new
  // process (fork), which nothing in the proxy needs.
  a.place(clone_call);
  a.stmt(BPF_LD | BPF_W | BPF_ABS, arg_low(0));
  a.jset(CLONE_THREAD, ok, no);

  a.place(ok);
  a.ret(allow);
  a.place(no);
  a.ret(refuse);
  a.place(kill);
  a.ret(SECCOMP_RET_KILL_PROCESS);
  return a.finish();
}

}  // namespace nsrun
