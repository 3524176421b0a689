// System calls that never touch errno or any other memory of the caller.
//
// PID 1's wait loop and nsrun's channel reader use these: each returns the
// kernel's answer, -errno on failure, and leaves libc's state alone, so
// they are safe in a process started with CLONE_VM|CLONE_VFORK.
#pragma once

#include <sys/syscall.h>

namespace nsrun::sys {

inline long raw_syscall(long nr, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  register long x5 asm("x5") = f;
  asm volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
#else
#error "raw_syscall: add this architecture's system call convention"
#endif
}

// Arguments are integers or pointers, passed as the kernel takes them.
template <typename... Args>
inline long raw(long nr, Args... args) {
  static_assert(sizeof...(Args) <= 6);
  long v[6] = {(long)args...};
  return raw_syscall(nr, v[0], v[1], v[2], v[3], v[4], v[5]);
}

}  // namespace nsrun::sys
