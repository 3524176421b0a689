#include "seccomp/user_programs.hpp"

#include <sched.h>
#include <unistd.h>

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

}  // namespace nsrun
