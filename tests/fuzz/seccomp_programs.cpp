// The caller's compiled seccomp programs (bwrap's --seccomp and
// --add-seccomp-fd): read_user_programs on memfds this harness fills. The
// first byte says how many programs (1 to 4); the rest is cut into that
// many equal parts. Property: an accepted program is exactly the bytes of
// its fd, and a part that is empty or not a whole number of instructions
// is never accepted.
#include <linux/filter.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "seccomp/user_programs.hpp"
#include "sys/fd.hpp"

using namespace nsrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t count = 1 + data[0] % 4;
  const std::string_view rest = nsrun_fuzz::bytes(data + 1, size - 1);
  const std::size_t part = rest.size() / count;
  std::vector<Fd> owned;
  std::vector<int> fds;
  std::vector<std::string_view> parts;
  bool all_whole = true;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string_view bytes = i + 1 == count ? rest.substr(i * part) : rest.substr(i * part, part);
    Fd fd(::memfd_create("nsrun-fuzz-bpf", MFD_CLOEXEC));
    if (!fd) nsrun_fuzz::broken("memfd_create failed");
    if (!bytes.empty() && ::write(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      nsrun_fuzz::broken("memfd write failed");
    ::lseek(fd.get(), 0, SEEK_SET);
    all_whole = all_whole && !bytes.empty() && bytes.size() % sizeof(sock_filter) == 0;
    fds.push_back(fd.get());
    parts.push_back(bytes);
    owned.push_back(std::move(fd));
  }
  auto programs = read_user_programs(fds);
  if (!programs) {
    // Whole programs may be refused too (a size cap), never the reverse.
    (void)programs.error().message();
    return 0;
  }
  if (!all_whole) nsrun_fuzz::broken("a partial program was accepted");
  if (programs->size() != count) nsrun_fuzz::broken("wrong number of programs");
  for (std::size_t i = 0; i < count; ++i) {
    const auto& prog = (*programs)[i];
    if (prog.size() * sizeof(sock_filter) != parts[i].size() ||
        std::memcmp(prog.data(), parts[i].data(), parts[i].size()) != 0)
      nsrun_fuzz::broken("a program differs from its bytes");
  }
  return 0;
}
