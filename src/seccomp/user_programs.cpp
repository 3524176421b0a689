#include "seccomp/user_programs.hpp"

#include <linux/filter.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

Result<std::vector<BpfProgram>> read_user_programs(const std::vector<int>& fds) {
  std::vector<BpfProgram> out;
  // bwrap reads every program (and checks its length) before it loads the
  // first: a later program's bad length is the error, not an earlier one's
  // refusal by the kernel.
  std::optional<int> empty;
  for (int fd : fds) {
    // The kernel loads at most BPF_MAXINSNS instructions per program: more
    // is refused before it is read into memory.
    auto read = read_all(fd, "read seccomp data", std::to_string(fd), BPF_MAXINSNS * sizeof(sock_filter));
    if (!read) {
      Error e = read.error();
      e.op = Operation::seccomp_read;
      e.phase = phase_of(e.op);
      return fail(e);
    }
    const std::string& data = *read;
    // What the kernel would answer to loading it, found before anything runs.
    if (data.empty() && !empty) empty = fd;
    if (data.size() % sizeof(sock_filter) != 0)
      return fail(sys_error(Operation::seccomp_read, std::to_string(fd), EINVAL,
                            "not a whole number of BPF instructions"));
    BpfProgram program(data.size() / sizeof(sock_filter));
    // An empty program's data() may be null, which memcpy may not be given.
    if (!data.empty()) std::memcpy(program.data(), data.data(), data.size());
    out.push_back(std::move(program));
  }
  if (empty) return fail(sys_error(Operation::seccomp_load, std::to_string(*empty), EINVAL, "an empty program"));
  return out;
}

}  // namespace nsrun
