// nsrun-floor: the least a sandbox launcher must do, as a yardstick for
// `nsrun bench --vs`. No policy, no validation, no error reporting beyond a
// line on stderr, no reaper, no seccomp, no capability drop: what is left
// is the kernel work and one more process image, which no launcher avoids.
//
//   nsrun-floor landlock WORKSPACE CMD...    Landlock (ABI 1 rights: read
//       everywhere, write WORKSPACE), no_new_privs, exec in place.
//   nsrun-floor namespaces WORKSPACE CMD...  clone(NEWUSER|NEWPID|NEWNS),
//       id maps, a read-only bind of / as the new root, a fresh /proc,
//       WORKSPACE bound writable, pivot_root, and the command as PID 1.
//
// Static and free of C++ run-time start-up on purpose: its own start costs
// what a minimal static program's does.
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

[[noreturn]] void die(const char* what) {
  std::perror(what);
  _exit(125);
}

void landlock_and_exec(const char* workspace, char** cmd) {
  constexpr __u64 read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  constexpr __u64 all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // the 13 rights of ABI 1
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = all;
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) die("landlock_create_ruleset");
  const struct {
    const char* path;
    __u64 access;
  } rules[] = {{"/", read}, {"/dev/null", LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE},
               {workspace, all}};
  for (const auto& r : rules) {
    landlock_path_beneath_attr rule{};
    rule.allowed_access = r.access;
    rule.parent_fd = open(r.path, O_PATH | O_CLOEXEC);
    if (rule.parent_fd < 0) die(r.path);
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) die("landlock_add_rule");
    close(rule.parent_fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die("landlock_restrict_self");
  execvp(cmd[0], cmd);
  die(cmd[0]);
}

struct Child {
  const char* workspace;
  char** cmd;
  uid_t uid;
  gid_t gid;
};

void write_file(const char* path, const char* text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, std::strlen(text)) < 0) die(path);
  close(fd);
}

int sandbox(void* arg) {
  const Child* c = static_cast<Child*>(arg);
  char map[64];
  std::snprintf(map, sizeof map, "0 %u 1\n", c->uid);
  write_file("/proc/self/uid_map", map);
  write_file("/proc/self/setgroups", "deny");
  std::snprintf(map, sizeof map, "0 %u 1\n", c->gid);
  write_file("/proc/self/gid_map", map);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make private");
  // The new root: the host's /, bound read-only and stacked on itself.
  const int root = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (root < 0) die("open_tree /");
  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY;
  if (mount_setattr(root, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof ro) != 0) die("mount_setattr");
  const int ws = open_tree(AT_FDCWD, c->workspace, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (ws < 0) die("open_tree workspace");
  if (move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) != 0) die("move_mount /");
  const int fs = fsopen("proc", FSOPEN_CLOEXEC);
  if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) die("proc");
  const int proc = fsmount(fs, FSMOUNT_CLOEXEC, 0);
  if (proc < 0 || move_mount(proc, "", root, "proc", MOVE_MOUNT_F_EMPTY_PATH) != 0) die("mount proc");
  if (move_mount(ws, "", root, c->workspace + 1, MOVE_MOUNT_F_EMPTY_PATH) != 0) die("mount workspace");
  if (fchdir(root) != 0 || syscall(SYS_pivot_root, ".", ".") != 0 || umount2(".", MNT_DETACH) != 0) die("pivot_root");
  if (chdir(c->workspace) != 0) die("chdir");
  execvp(c->cmd[0], c->cmd);
  die(c->cmd[0]);
}

int namespaces_and_exec(const char* workspace, char** cmd) {
  constexpr std::size_t stack_size = 256 * 1024;
  void* stack = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) die("mmap");
  Child c{workspace, cmd, getuid(), getgid()};
  // CLONE_VM|CLONE_VFORK: no page tables copied; we sleep until the exec.
  const pid_t pid = clone(sandbox, static_cast<char*>(stack) + stack_size,
                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
  if (pid < 0) die("clone");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argv[2][0] != '/') {
    std::fputs("usage: nsrun-floor landlock|namespaces /WORKSPACE CMD...\n", stderr);
    return 125;
  }
  if (std::strcmp(argv[1], "landlock") == 0) landlock_and_exec(argv[2], argv + 3);
  if (std::strcmp(argv[1], "namespaces") == 0) return namespaces_and_exec(argv[2], argv + 3);
  std::fputs("nsrun-floor: mode is landlock or namespaces\n", stderr);
  return 125;
}
