// nsrun-container-like: runs a command under a seccomp filter shaped like a
// container runtime's default profile (Docker, Podman), which is where
// coding agents often meet nsrun: namespace flags to unshare, clone and
// setns are refused with EPERM, clone3 answers ENOSYS (so that callers
// fall back to clone, whose flags a filter can see), mount, umount2 and
// pivot_root EPERM; Landlock and everything else allowed. nsrun then has
// only its Landlock rung.
//
//   nsrun-container-like COMMAND [ARG...]
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nsrun-container-like COMMAND [ARG...]\n");
    return 125;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return 125;
  const unsigned long flags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
                                 CLONE_NEWUTS, CLONE_NEWIPC,  CLONE_NEWCGROUP, CLONE_NEWTIME};
  int rc = 0;
  for (unsigned long f : flags) {
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
  }
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(umount2), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pivot_root), 0);
  if (rc != 0 || seccomp_load(ctx) != 0) {
    std::fprintf(stderr, "nsrun-container-like: could not load the filter\n");
    return 125;
  }
  seccomp_release(ctx);
  ::execvp(argv[1], argv + 1);
  std::fprintf(stderr, "nsrun-container-like: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
