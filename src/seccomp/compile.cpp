#include "seccomp/compile.hpp"

#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include <fmt/core.h>

#include "sys/fd.hpp"

namespace nsrun {

namespace {

struct ContextDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

Error library_error(std::string_view step, std::string_view what, int rc) {
  // libseccomp returns negative errno values.
  Error e = sys_error(step, what, -rc);
  return e;
}

// libseccomp 2.5 exports only to a file descriptor: write the program to an
// anonymous memory file and read the sock_filter array back.
Result<BpfProgram> export_program(scmp_filter_ctx ctx) {
  Fd mem(::memfd_create("nsrun-seccomp", MFD_CLOEXEC));
  if (!mem) return fail(sys_error("seccomp export", "memfd"));
  if (int rc = seccomp_export_bpf(ctx, mem.get()); rc != 0) return fail(library_error("seccomp export", "", rc));
  const off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size < 0) return fail(sys_error("seccomp export", "lseek"));
  if (size == 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    Error e = sys_error("seccomp export", "", EINVAL);
    e.detail = fmt::format("exported {} bytes, not a whole number of BPF instructions", size);
    return fail(e);
  }
  BpfProgram program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  auto* bytes = reinterpret_cast<char*>(program.data());
  std::size_t done = 0;
  while (done < static_cast<std::size_t>(size)) {
    ssize_t n = ::pread(mem.get(), bytes + done, static_cast<std::size_t>(size) - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(sys_error("seccomp export", "read back", n < 0 ? errno : EIO));
    done += static_cast<std::size_t>(n);
  }
  return program;
}

// System calls newer than some libseccomp releases (2.5.4 knows none of
// these). Since Linux 5.1 (io_uring, 424 and up) a new call has the same
// number on every architecture but alpha, so the number is sound wherever
// nsrun builds; a name missing here and in libseccomp is still an error.
#if defined(__alpha__)
#error "the fallback system call numbers below are not alpha's"
#endif
int fallback_number(std::string_view name) {
  static constexpr std::pair<std::string_view, int> known[] = {
      {"fchmodat2", 452}, {"setxattrat", 463}, {"removexattrat", 466}, {"open_tree_attr", 467},
      {"file_setattr", 469},
  };
  for (const auto& [n, nr] : known)
    if (n == name) return nr;
  return __NR_SCMP_ERROR;
}

}  // namespace

int syscall_number(const std::string& name) {
  const int nr = seccomp_syscall_resolve_name(name.c_str());
  return nr != __NR_SCMP_ERROR ? nr : fallback_number(name);
}

Result<BpfProgram> compile_spec(const FilterSpec& spec) {
  if (!spec.enabled) return BpfProgram{};
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail(sys_error("seccomp init", "", ENOMEM));

  // On x86_64 libseccomp treats an x32 call (the 0x40000000 bit) as a
  // foreign architecture too, so this one action covers i386 and x32.
  const uint32_t foreign = spec.foreign_abi_allowed                    ? SCMP_ACT_ALLOW
                           : spec.log && !spec.foreign_abi_always
                               ? SCMP_ACT_LOG
                               : SCMP_ACT_ERRNO(static_cast<uint32_t>(spec.foreign_abi_err));
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, foreign); rc != 0)
    return fail(library_error("seccomp init", "bad-arch action", rc));
  // nsrun sets no_new_privs itself, in its own step; the program is only
  // exported here, never loaded by libseccomp.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0); rc != 0)
    return fail(library_error("seccomp init", "no_new_privs attribute", rc));
  // A binary tree of syscall numbers instead of a linear scan: every
  // allowed call of the command pays for the filter's length.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc != 0)
    return fail(library_error("seccomp init", "optimize attribute", rc));

  for (const Rule& rule : spec.rules) {
    const std::string name(rule.syscall);
    const int nr = syscall_number(name);
    if (nr == __NR_SCMP_ERROR) {
      Error e = sys_error("seccomp rule", name, ENOSYS);
      e.detail = fmt::format("libseccomp does not know the system call {}", name);
      return fail(e);
    }
    const uint32_t action = rule.notify                  ? SCMP_ACT_NOTIFY
                            : spec.log && !rule.always ? SCMP_ACT_LOG
                                                       : SCMP_ACT_ERRNO(static_cast<uint32_t>(rule.err));
    std::vector<scmp_arg_cmp> cmp;
    for (const auto& arg : {rule.arg, rule.arg2}) {
      if (!arg) continue;
      if (arg->greater)
        cmp.push_back(SCMP_CMP(arg->index, SCMP_CMP_GT, arg->value));
      else
        cmp.push_back(SCMP_CMP(arg->index, SCMP_CMP_MASKED_EQ, arg->mask, arg->value));
    }
    // _exact: fail rather than let libseccomp rewrite a rule it cannot
    // express as given.
    const int rc = seccomp_rule_add_exact_array(ctx.get(), action, nr, static_cast<unsigned>(cmp.size()),
                                                cmp.empty() ? nullptr : cmp.data());
    if (rc != 0) return fail(library_error("seccomp rule", name, rc));
  }
  return export_program(ctx.get());
}

}  // namespace nsrun
