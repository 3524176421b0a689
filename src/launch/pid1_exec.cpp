#include "launch/pid1_exec.hpp"

#include <link.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>

#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "sys/raw.hpp"

namespace nsrun {

bool pid1_execs_in_sandbox(const Pid1ExecCase& c) {
  return c.reaper && c.new_pid_namespace && c.new_user_namespace && !c.inner_user_namespace && c.pid_published && !c.command_may_ptrace &&
         !c.self_has_interpreter;
}

bool self_has_interpreter() {
  const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(::getauxval(AT_PHDR));
  const unsigned long count = ::getauxval(AT_PHNUM);
  // Unknown: assume the loader is needed (the exec would then fail inside).
  if (phdr == nullptr || count == 0) return true;
  for (unsigned long i = 0; i < count; ++i)
    if (phdr[i].p_type == PT_INTERP) return true;
  return false;
}

void end_pid_namespace() { sys::raw(SYS_kill, -1, SIGTERM); }

void exec_pid1_reaper(int self, const Pid1Handover& h) {
  std::vector<int> kept{h.words_fd, h.last_pid_fd, h.release_fd};
  kept.insert(kept.end(), h.held.begin(), h.held.end());
  for (int fd : kept)
    if (fd >= 0) ::fcntl(fd, F_SETFD, 0);
  // After execveat(fd, "") the kernel names the process after the fd's
  // number; ps should go on showing what the caller ran.
  char name[17] = {};
  ::prctl(PR_GET_NAME, name, 0, 0, 0);
  std::string args[] = {std::string(pid1_reaper_flag), std::to_string(h.command), std::to_string(h.words_fd),
                        std::to_string(h.last_pid_fd), std::to_string(h.release_fd), name};
  char* argv[] = {const_cast<char*>("nsrun"), args[0].data(), args[1].data(), args[2].data(), args[3].data(),
                  args[4].data(), args[5].data(), nullptr};
  char* envp[] = {nullptr};
  sys::raw(SYS_execveat, self, "", argv, envp, AT_EMPTY_PATH);
  for (int fd : kept)
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

namespace {

bool parse_int(const char* text, int& out) {
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, out);
  return ec == std::errc{} && ptr == end && *text != '\0';
}

bool open_fd(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

}  // namespace

int pid1_reaper_main(int argc, char** argv) {
  // First of all: until this call the exec'd image is dumpable, and the
  // command is held until it is not.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int command = -1, words = -1, last = -1, release = -1;
  if (argc != 7 || ::getpid() != 1 || !parse_int(argv[2], command) || !parse_int(argv[3], words) ||
      !parse_int(argv[4], last) || !parse_int(argv[5], release) || command <= 1 || !open_fd(release) ||
      (words >= 0 && !open_fd(words)) || (last >= 0 && !open_fd(last))) {
    std::fputs("nsrun: internal PID 1 entry: only nsrun's sandbox starts it\n", stderr);
    return 125;
  }
  ::prctl(PR_SET_NAME, argv[6], 0, 0, 0);
  // Inherited blocked across the exec, so none was lost; the handlers were
  // reset to SIG_DFL by it, which PID 1 must not keep.
  const sigset_t launch = launch_signals();
  ::sigprocmask(SIG_BLOCK, &launch, nullptr);
  install_forwarding_handlers();
  for (int fd : {words, last, release})
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  const char go = 1;
  if (::write(release, &go, 1) != 1) return 125;
  ::close(release);
  int raw = 0;
  const int code = wait_command(command, WaitOptions{0, end_pid_namespace}, &raw);
  const int64_t processes = last_pid(last);
  // Minus PID 1: the command's processes and threads.
  send_final_status(words, raw, processes > 0 ? processes - 1 : -1);
  ::_exit(code);
}

}  // namespace nsrun
