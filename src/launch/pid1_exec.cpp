#include "launch/pid1_exec.hpp"

#include <link.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "ns/outcome.hpp"
#include "ns/reaper.hpp"
#include "sys/raw.hpp"

namespace nsrun {

Pid1Exec pid1_exec_moment(const Pid1ExecCase& c) {
  if (!c.reaper || !c.new_pid_namespace || !c.new_user_namespace || c.inner_user_namespace || !c.pid_published ||
      c.command_may_ptrace)
    return Pid1Exec::stays;
  if (!c.self_has_interpreter) return Pid1Exec::after_root;
  // A chroot moves no other process: PID 1 would keep the host's root.
  if (c.root_by_chroot) return Pid1Exec::stays;
  return Pid1Exec::before_root;
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

void kill_pid_namespace() { sys::raw(SYS_kill, -1, SIGKILL); }

void exec_pid1_reaper(int self, const Pid1Handover& h) {
  std::vector<int> kept{h.words_fd, h.last_pid_fd, h.release_fd};
  kept.insert(kept.end(), h.held.begin(), h.held.end());
  for (int fd : kept)
    if (fd >= 0) ::fcntl(fd, F_SETFD, 0);
  // After execveat(fd, "") the kernel names the process after the fd's
  // number; ps should go on showing what the caller ran.
  char name[17] = {};
  ::prctl(PR_GET_NAME, name, 0, 0, 0);
  std::string args[] = {std::string(pid1_reaper_flag), std::to_string(h.command),
                        std::to_string(h.words_fd),    std::to_string(h.last_pid_fd),
                        std::to_string(h.release_fd),  std::to_string(h.locks_to_take),
                        name};
  char* argv[] = {const_cast<char*>("nsrun"), args[0].data(), args[1].data(), args[2].data(), args[3].data(),
                  args[4].data(), args[5].data(), args[6].data(), nullptr};
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

// Lock fds per message on the set-up process's socket.
constexpr int locks_per_message = 32;

// PID 1's answer to one message of lock fds.
struct LockAnswer {
  int32_t failed;  // index in the message of the fd whose lock was refused; -1: none
  int32_t err;
};

}  // namespace

void take_handed_locks(int sock, int count) {
  int taken = 0;
  while (taken < count) {
    char byte;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * locks_per_message)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    while ((n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return;  // the set-up process is gone: it said why, or was killed
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
    LockAnswer answer{-1, 0};
    if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.empty() || taken + static_cast<int>(fds.size()) > count) {
      answer = {0, EPROTO};
    } else {
      for (std::size_t i = 0; i < fds.size() && answer.failed < 0; ++i) {
        struct flock lock{};
        lock.l_type = F_RDLCK;
        lock.l_whence = SEEK_SET;
        if (::fcntl(fds[i], F_SETLK, &lock) != 0) answer = {static_cast<int32_t>(i), errno};
      }
    }
    if (answer.failed >= 0)
      for (int fd : fds) ::close(fd);
    taken += static_cast<int>(fds.size());
    while (::send(sock, &answer, sizeof answer, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    if (answer.failed >= 0) return;
  }
}

namespace {

// PID 1 closes its end only when done or dead, and its death ends the PID
// namespace: the kernel is killing this process too. Nothing to report, so
// that nsrun reports PID 1's end, not a lock error.
[[noreturn]] void pid1_gone() { ::_exit(125); }

}  // namespace

bool wait_for_pid1(int sock) {
  char go = 0;
  ssize_t n;
  while ((n = ::read(sock, &go, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

Result<void> hand_locks_to_pid1(int sock, const std::vector<Fd>& locks, const std::vector<std::string>& paths) {
  for (std::size_t from = 0; from < locks.size(); from += locks_per_message) {
    const std::size_t k = std::min<std::size_t>(locks_per_message, locks.size() - from);
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * locks_per_message)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * k);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * k);
    for (std::size_t i = 0; i < k; ++i) {
      const int fd = locks[from + i].get();
      std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof fd);
    }
    const std::string& first = paths[from];
    ssize_t n;
    while ((n = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) pid1_gone();
    if (n != 1) return fail(sys_error(Operation::lock_lock, first, n < 0 ? errno : EPROTO, "handing the lock to PID 1"));
    LockAnswer answer{};
    while ((n = ::recv(sock, &answer, sizeof answer, 0)) < 0 && errno == EINTR) {
    }
    if (n == 0 || (n < 0 && errno == ECONNRESET)) pid1_gone();
    if (n != static_cast<ssize_t>(sizeof answer))
      return fail(sys_error(Operation::lock_lock, first, n < 0 ? errno : EPROTO, "PID 1 did not answer"));
    if (answer.failed >= 0) {
      const std::size_t at = from + std::min<std::size_t>(static_cast<std::size_t>(answer.failed), k - 1);
      return fail(sys_error(Operation::lock_lock, paths[at], answer.err));
    }
  }
  return {};
}

int pid1_reaper_main(int argc, char** argv) {
  // First of all: until this call the exec'd image is dumpable, and the
  // command is held until it is not.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int command = -1, words = -1, last = -1, release = -1, locks = 0;
  if (argc != 8 || ::getpid() != 1 || !parse_int(argv[2], command) || !parse_int(argv[3], words) ||
      !parse_int(argv[4], last) || !parse_int(argv[5], release) || !parse_int(argv[6], locks) || command <= 1 ||
      locks < 0 || !open_fd(release) || (words >= 0 && !open_fd(words)) || (last >= 0 && !open_fd(last))) {
    std::fputs("nsrun: internal PID 1 entry: only nsrun's sandbox starts it\n", stderr);
    return 125;
  }
  ::prctl(PR_SET_NAME, argv[7], 0, 0, 0);
  // Inherited blocked across the exec, so none was lost; the handlers were
  // reset to SIG_DFL by it, which PID 1 must not keep.
  const sigset_t launch = launch_signals();
  ::sigprocmask(SIG_BLOCK, &launch, nullptr);
  install_forwarding_handlers();
  for (int fd : {words, last, release})
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  // A command (or set-up process) already dead cannot read it (PID 1
  // ignores SIGPIPE): its status is reaped below all the same.
  const char go = 1;
  if (::write(release, &go, 1) == 1) take_handed_locks(release, locks);
  ::close(release);
  int raw = 0;
  const int code = wait_command(command, WaitOptions{0, end_pid_namespace, kill_pid_namespace}, &raw);
  const int64_t processes = last_pid(last);
  // Minus PID 1: the command's processes and threads.
  send_final_status(words, raw, processes > 0 ? processes - 1 : -1);
  ::_exit(code);
}

}  // namespace nsrun
