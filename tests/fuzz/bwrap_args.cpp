// The bwrap dialect: parse_bwrap with its whole command line read through
// `--args FD`, from a memfd this harness fills, with the real fd reader.
// The first byte picks the caller (bit 0: root, bit 1: cgroup namespaces,
// bit 2: SELinux); the rest is the --args data, NUL-separated as bwrap
// reads it. Property: what the policy JSON holds of the Policy survives
// to_json / from_json unchanged.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "cli/bwrap.hpp"
#include "fuzz.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"
#include "sys/io.hpp"

using namespace nsrun;

namespace {

int args_fd() {
  static const int fd = [] {
    const int f = ::memfd_create("nsrun-fuzz-args", MFD_CLOEXEC);
    if (f < 0) nsrun_fuzz::broken("memfd_create failed");
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned flags = data[0];
  const std::string_view payload = nsrun_fuzz::bytes(data + 1, size - 1);
  const int fd = args_fd();
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) nsrun_fuzz::broken("memfd reset failed");
  if (!payload.empty() && ::pwrite(fd, payload.data(), payload.size(), 0) != static_cast<ssize_t>(payload.size()))
    nsrun_fuzz::broken("memfd write failed");

  BwrapContext ctx;
  ctx.cwd = "/work/ws";
  ctx.uid = (flags & 1) ? 0 : 1000;
  ctx.cgroup_ns = (flags & 2) != 0;
  ctx.selinux = (flags & 4) != 0;
  // Only the harness's fd is open: any other number is a closed descriptor
  // (reading the fuzzer's own stdin would hang it).
  ctx.read_fd = [fd](int n) -> Result<std::string> {
    if (n != fd) return fail(Error{"read", EBADF, std::to_string(n), {}});
    return read_all(n, "read", std::to_string(n), max_input_bytes);
  };
  ctx.fd_open = [fd](int n) { return n == fd; };

  const std::vector<std::string> args{"--args", std::to_string(fd)};
  auto inv = parse_bwrap(args, ctx);
  if (!inv) {
    (void)bwrap_message(inv.error());
    return 0;
  }
  // The policy JSON has no fields for the dialect's run-time descriptors
  // and switches (status and namespace fds, --lock-file, --disable-userns,
  // --seccomp fds): what it does hold must read back the same.
  const std::string written = json::dump(to_json(inv->policy));
  auto doc = json::parse(written);
  if (!doc) nsrun_fuzz::broken("to_json wrote what parse refuses", written);
  auto back = from_json(*doc);
  if (!back) nsrun_fuzz::broken("from_json(to_json(p)) failed", back.error().message() + "\n" + written);
  const std::string again = json::dump(to_json(*back));
  if (again != written || back->mounts != inv->policy.mounts || back->env != inv->policy.env)
    nsrun_fuzz::broken("to_json(from_json(to_json(p))) != to_json(p)", written + "\nread back as\n" + again);
  return 0;
}
