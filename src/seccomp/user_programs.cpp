#include "seccomp/user_programs.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <seccomp.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sys/fd.hpp"

namespace nsrun {

Result<std::vector<BpfProgram>> read_user_programs(const std::vector<int>& fds) {
  std::vector<BpfProgram> out;
  for (int fd : fds) {
    std::string data;
    char buf[4096];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(sys_error("read seccomp data", std::to_string(fd)));
      if (n == 0) break;
      data.append(buf, static_cast<std::size_t>(n));
    }
    if (data.empty() || data.size() % sizeof(sock_filter) != 0)
      return fail(Error{"read seccomp data", EINVAL, std::to_string(fd),
                        "not a whole number of BPF instructions"});
    BpfProgram program(data.size() / sizeof(sock_filter));
    std::memcpy(program.data(), data.data(), data.size());
    out.push_back(std::move(program));
  }
  return out;
}

Result<BpfProgram> compile_no_userns_filter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return fail(Error{"seccomp_init", ENOMEM, {}, {}});
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  const uint64_t user = CLONE_NEWUSER;
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSPC), SCMP_SYS(unshare), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, user, user));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSPC), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, user, user));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, user, user));
  // setns with nstype 0 enters whatever namespace the fd names.
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 1, SCMP_A1(SCMP_CMP_EQ, 0));
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return fail(Error{"seccomp rule", -rc, {}, "user namespace filter"});

  // Exported through a memory file: libseccomp writes BPF to an fd.
  Fd mem(::memfd_create("nsrun-seccomp", MFD_CLOEXEC));
  if (!mem) return fail(sys_error("seccomp export"));
  rc = seccomp_export_bpf(ctx, mem.get());
  if (rc != 0) return fail(Error{"seccomp export", -rc, {}, {}});
  const off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || ::lseek(mem.get(), 0, SEEK_SET) != 0) return fail(sys_error("seccomp export"));
  BpfProgram program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  const ssize_t n = ::pread(mem.get(), program.data(), program.size() * sizeof(sock_filter), 0);
  if (n != static_cast<ssize_t>(program.size() * sizeof(sock_filter)))
    return fail(Error{"seccomp export", EIO, {}, "short read"});
  return program;
}

}  // namespace nsrun
