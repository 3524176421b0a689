/* nsrun-floor-sandbox: the floor of the sandbox itself. The kernel work
 * of nsrun's workspace-write launch and nothing else:
 * no policy, no parsing beyond argv, no validation, no report, no error text
 * beyond one line. What it costs is what any launcher that keeps nsrun's
 * default promise pays in the kernel, plus one static process image and its
 * C library's start-up. `nsrun bench` runs it as its floor-sandbox rows, one
 * per C library the build offers (like nsrun-floor-exec.c), so a run shows
 * how much of nsrun's launch is this floor and how much is nsrun's own.
 *
 *   nsrun-floor-sandbox-glibc [--net] [--ro /DIR]... WORKSPACE /ABSOLUTE/PAYLOAD [ARGS...]
 *
 * The sequence is nsrun's (strace -f of `nsrun --mode workspace-write
 * --workspace W --home ro -- /bin/true`, and `nsrun explain`):
 *   launcher: clone3(NEWUSER|NEWPID|NEWNS|NEWIPC|NEWUTS|NEWCGROUP [|NEWNET]),
 *             then waits for PID 1;
 *   PID 1:    uid_map, setgroups deny, gid_map (the caller's ids mapped to
 *             themselves); [--net: loopback up over rtnetlink]; hostname;
 *             / private; a read-only recursive clone of / stacked on /;
 *             a tmpfs /dev with null, zero, full, random, urandom and tty
 *             bound from the host, its symlinks, a devpts and a tmpfs
 *             /dev/shm; a fresh /proc with sys, sysrq-trigger, irq and bus
 *             bound read-only over themselves; a tmpfs /tmp; WORKSPACE bound
 *             writable at its own path; pivot_root; the bounding set and
 *             the ambient set dropped, capabilities cleared, no_new_privs,
 *             RLIMIT_CORE 0, nsrun's own default seccomp program (the one
 *             nsrun loads for workspace-write, written out at build time by
 *             tools/gen-floor-filter.cpp);
 *             then the payload as PID 2 (vfork: CLONE_VM|CLONE_VFORK, in a
 *             session of its own), reaped; PID 1 exits with its status.
 * Left out: what nsrun does for its policy only (the protected-path binds
 * and lookups, the report, the signal forwarding, the checks before clone).
 *
 * C, not C++, and no linux/ headers: musl-gcc (Debian musl-tools) has
 * neither libstdc++ nor the kernel's headers, and the two builds must run
 * the same code. The few kernel ABI definitions below carry a FLOOR_ prefix
 * so that they never clash with a libc's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ kernel ABI */

/* System call numbers: the same on every architecture from 424 on. */
#define FLOOR_NR_open_tree 428
#define FLOOR_NR_move_mount 429
#define FLOOR_NR_fsopen 430
#define FLOOR_NR_fsconfig 431
#define FLOOR_NR_fsmount 432
#define FLOOR_NR_clone3 435
#define FLOOR_NR_mount_setattr 442
#define FLOOR_NR_open_tree_attr 467
#define FLOOR_NR_openat2 437

#define FLOOR_CLONE_NEWNS 0x00020000ULL
#define FLOOR_CLONE_NEWCGROUP 0x02000000ULL
#define FLOOR_CLONE_NEWUTS 0x04000000ULL
#define FLOOR_CLONE_NEWIPC 0x08000000ULL
#define FLOOR_CLONE_NEWUSER 0x10000000ULL
#define FLOOR_CLONE_NEWPID 0x20000000ULL
#define FLOOR_CLONE_NEWNET 0x40000000ULL

struct floor_clone_args {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

struct floor_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};
#define FLOOR_MOUNT_ATTR_RDONLY 0x1ULL
#define FLOOR_MOUNT_ATTR_NOSUID 0x2ULL
#define FLOOR_MOUNT_ATTR_NODEV 0x4ULL
#define FLOOR_MOUNT_ATTR_NOEXEC 0x8ULL
#define FLOOR_OPEN_TREE_CLONE 1u
#define FLOOR_AT_EMPTY_PATH 0x1000u
#define FLOOR_AT_RECURSIVE 0x8000u
#define FLOOR_MOVE_MOUNT_F_EMPTY_PATH 0x4u
#define FLOOR_MOVE_MOUNT_T_EMPTY_PATH 0x40u
#define FLOOR_FSOPEN_CLOEXEC 1u
#define FLOOR_FSMOUNT_CLOEXEC 1u
#define FLOOR_FSCONFIG_SET_FLAG 0u
#define FLOOR_FSCONFIG_SET_STRING 1u
#define FLOOR_FSCONFIG_CMD_CREATE 6u

struct floor_open_how {
  uint64_t flags, mode, resolve;
};
#define FLOOR_RESOLVE_NO_SYMLINKS 0x04ULL
#define FLOOR_RESOLVE_BENEATH 0x08ULL
#define FLOOR_RESOLVE_IN_ROOT 0x10ULL

/* The fields of struct statx a bind reads, at the kernel's offsets. */
struct floor_statx {
  uint32_t mask, blksize;
  uint64_t attributes;
  uint32_t nlink, uid, gid;
  uint16_t mode, pad0;
  uint64_t ino, size, blocks, attributes_mask;
  uint64_t times[8];
  uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
  uint64_t mnt_id;
  uint64_t spare[13];
};
#define FLOOR_STATX_TYPE 0x1u
#define FLOOR_STATX_INO 0x100u
#define FLOOR_STATX_MNT_ID 0x1000u

/* Capabilities and seccomp (prctl numbers are in both libcs' sys/prctl.h;
 * these are not everywhere). */
#define FLOOR_PR_CAP_AMBIENT 47
#define FLOOR_PR_CAP_AMBIENT_CLEAR_ALL 4
#define FLOOR_PR_SET_NO_NEW_PRIVS 38
#define FLOOR_PR_SET_SECCOMP 22
#define FLOOR_SECCOMP_MODE_FILTER 2
#define FLOOR_CAPABILITY_VERSION_3 0x20080522u

struct floor_cap_header {
  uint32_t version;
  int pid;
};
struct floor_cap_data {
  uint32_t effective, permitted, inheritable;
};

struct floor_sock_filter {
  uint16_t code;
  uint8_t jt, jf;
  uint32_t k;
};
struct floor_sock_fprog {
  unsigned short len;
  const struct floor_sock_filter *filter;
};

/* rtnetlink: RTM_NEWLINK on ifindex 1 (lo in a new network namespace). */
struct floor_nlmsghdr {
  uint32_t len;
  uint16_t type, flags;
  uint32_t seq, pid;
};
struct floor_ifinfomsg {
  unsigned char family, pad;
  unsigned short type;
  int index;
  unsigned flags, change;
};
struct floor_nlmsgerr {
  int error;
  struct floor_nlmsghdr msg;
};
#define FLOOR_NETLINK_ROUTE 0
#define FLOOR_RTM_NEWLINK 16
#define FLOOR_NLMSG_ERROR 2
#define FLOOR_NLM_F_REQUEST 1
#define FLOOR_NLM_F_ACK 4
#define FLOOR_IFF_UP 1u

/* nsrun's default seccomp program: floor_filter[], FLOOR_FILTER_LEN. */
#include "nsrun-floor-filter.h"

/* ------------------------------------------------------------ helpers */

static void say(const char *a, const char *b) {
  const char *parts[] = {"nsrun-floor-sandbox: ", a, ": ", b, "\n"};
  for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    ssize_t r = write(2, parts[i], strlen(parts[i]));
    (void)r;
  }
}

static void die(const char *step) {
  say(step, strerror(errno));
  _exit(125);
}

static int check(int fd, const char *step) {
  if (fd < 0) die(step);
  return fd;
}

static int fsopen_(const char *type) { return (int)syscall(FLOOR_NR_fsopen, type, FLOOR_FSOPEN_CLOEXEC); }

static void fsconfig_(int fs, unsigned cmd, const char *key, const char *value, const char *step) {
  if (syscall(FLOOR_NR_fsconfig, fs, cmd, key, value, 0) != 0) die(step);
}

/* A new superblock of `type`, as a detached mount with `attrs`. */
static int new_fs(const char *type, const char *mode, uint64_t attrs) {
  int fs = check(fsopen_(type), type);
  fsconfig_(fs, FLOOR_FSCONFIG_SET_STRING, "source", type, type);
  if (strcmp(type, "devpts") == 0) {
    fsconfig_(fs, FLOOR_FSCONFIG_SET_FLAG, "newinstance", NULL, "devpts newinstance");
    fsconfig_(fs, FLOOR_FSCONFIG_SET_STRING, "ptmxmode", "0666", "devpts ptmxmode");
  }
  if (mode) fsconfig_(fs, FLOOR_FSCONFIG_SET_STRING, "mode", mode, type);
  fsconfig_(fs, FLOOR_FSCONFIG_CMD_CREATE, NULL, NULL, type);
  int mnt = check((int)syscall(FLOOR_NR_fsmount, fs, FLOOR_FSMOUNT_CLOEXEC, (unsigned)attrs), type);
  close(fs);
  return mnt;
}

/* A clone of the tree at dfd/path with `attrs` set: open_tree_attr (Linux
 * 6.15), else open_tree and mount_setattr. -1 with errno when it fails. */
static int clone_tree(int dfd, const char *path, int recursive, uint64_t attrs) {
  const unsigned flags = FLOOR_OPEN_TREE_CLONE | O_CLOEXEC | (recursive ? FLOOR_AT_RECURSIVE : 0) |
                         (path[0] == 0 ? FLOOR_AT_EMPTY_PATH : 0);
  struct floor_mount_attr attr = {attrs, 0, 0, 0};
  int fd = (int)syscall(FLOOR_NR_open_tree_attr, dfd, path, flags, &attr, sizeof attr);
  if (fd >= 0 || errno != ENOSYS) return fd;
  fd = (int)syscall(FLOOR_NR_open_tree, dfd, path, flags);
  if (fd < 0) return fd;
  if (syscall(FLOOR_NR_mount_setattr, fd, "", FLOOR_AT_EMPTY_PATH | (recursive ? FLOOR_AT_RECURSIVE : 0), &attr,
              sizeof attr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void attach(int mnt, int dfd, const char *path) {
  if (syscall(FLOOR_NR_move_mount, mnt, "", dfd, path, FLOOR_MOVE_MOUNT_F_EMPTY_PATH) != 0) die(path);
  close(mnt);
}

static void write_file(const char *path, const char *text) {
  int fd = check(open(path, O_WRONLY | O_CLOEXEC), path);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) die(path);
  close(fd);
}

/* "ID ID 1\n": the caller's id mapped to itself. */
static void id_map(char *out, unsigned id) {
  char digits[16];
  int n = 0;
  do digits[n++] = (char)('0' + id % 10), id /= 10;
  while (id);
  char *p = out;
  for (int copy = 0; copy < 2; ++copy) {
    for (int i = n; i-- > 0;) *p++ = digits[i];
    *p++ = ' ';
  }
  memcpy(p, "1\n", 3);
}

static void loopback_up(void) {
  int s = check(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, FLOOR_NETLINK_ROUTE), "netlink socket");
  struct {
    struct floor_nlmsghdr h;
    struct floor_ifinfomsg i;
  } req;
  memset(&req, 0, sizeof req);
  req.h.len = sizeof req;
  req.h.type = FLOOR_RTM_NEWLINK;
  req.h.flags = FLOOR_NLM_F_REQUEST | FLOOR_NLM_F_ACK;
  req.h.seq = 1;
  req.i.index = 1;
  req.i.flags = FLOOR_IFF_UP;
  req.i.change = FLOOR_IFF_UP;
  if (send(s, &req, sizeof req, 0) != (ssize_t)sizeof req) die("netlink send");
  union {
    struct floor_nlmsghdr h;
    char bytes[512];
  } ack;
  ssize_t n = recv(s, &ack, sizeof ack, 0);
  if (n < (ssize_t)(sizeof(struct floor_nlmsghdr) + sizeof(int))) die("netlink recv");
  struct floor_nlmsgerr err;
  memcpy(&err, ack.bytes + sizeof(struct floor_nlmsghdr), sizeof err.error);
  if (ack.h.type != FLOOR_NLMSG_ERROR || err.error != 0) {
    errno = err.error < 0 ? -err.error : EPROTO;
    die("loopback up");
  }
  close(s);
}

static int openat2_(int dfd, const char *path, uint64_t flags, uint64_t resolve) {
  struct floor_open_how how = {flags | O_CLOEXEC, 0, resolve};
  return (int)syscall(FLOOR_NR_openat2, dfd, path, &how, sizeof how);
}

/* Opens root/path as a directory, making the components missing (in a
 * tmpfs of the new root: elsewhere it is read-only and mkdirat fails), one
 * component at a time through no symlink, as nsrun's create_in_root(). */
static int make_path(int root, const char *path) {
  char buf[4096];
  size_t len = strlen(path);
  if (len >= sizeof buf) {
    errno = ENAMETOOLONG;
    die(path);
  }
  memcpy(buf, path, len + 1);
  const uint64_t strict = FLOOR_RESOLVE_NO_SYMLINKS | FLOOR_RESOLVE_BENEATH;
  int at = root;
  for (char *name = strtok(buf, "/"); name; name = strtok(NULL, "/")) {
    int fd = openat2_(at, name, O_PATH | O_DIRECTORY, strict);
    if (fd < 0 && errno == ENOENT) {
      if (mkdirat(at, name, 0755) != 0) die(path);
      fd = openat2_(at, name, O_PATH | O_DIRECTORY, strict);
    }
    if (fd < 0) die(path);
    if (at != root) close(at);
    at = fd;
  }
  if (at == root) at = check(fcntl(root, F_DUPFD_CLOEXEC, 3), "dup");
  return at;
}

/* Fds a bind is done with, closed 48 at a time, one close_range() per run
 * of consecutive numbers: nsrun's ClosedLater. */
struct closed_later {
  int fd[48];
  unsigned n;
};

static void flush_closed(struct closed_later *c) {
  for (unsigned i = 1; i < c->n; ++i)
    for (unsigned j = i; j > 0 && c->fd[j - 1] > c->fd[j]; --j) {
      int t = c->fd[j];
      c->fd[j] = c->fd[j - 1];
      c->fd[j - 1] = t;
    }
  for (unsigned i = 0; i < c->n;) {
    unsigned j = i;
    while (j + 1 < c->n && c->fd[j + 1] == c->fd[j] + 1) ++j;
    if (syscall(SYS_close_range, (unsigned)c->fd[i], (unsigned)c->fd[j], 0) != 0) die("close_range");
    i = j + 1;
  }
  c->n = 0;
}

static void close_later(struct closed_later *c, int fd) {
  c->fd[c->n++] = fd;
  if (c->n == sizeof c->fd / sizeof c->fd[0]) flush_closed(c);
}

static void statx_(int fd, struct floor_statx *st, const char *path) {
  if (syscall(SYS_statx, fd, "", FLOOR_AT_EMPTY_PATH, FLOOR_STATX_TYPE | FLOOR_STATX_INO | FLOOR_STATX_MNT_ID, st) != 0)
    die(path);
}

/* `--ro DIR`: DIR bound read-only over itself, with the system calls
 * nsrun's PID 1 makes for it (strace -f of `nsrun --ro DIR ...`), no more
 * and no fewer: the source looked up on the host through no symlink, its
 * recursive clone with the flags set, the destination looked up in the new
 * root; where it exists (the host's view) both ends' identities compared,
 * so the mount lands on the object cloned; where it does not (under the
 * private /tmp) the source's type asked and the path made; the clone
 * attached, the three fds closed in batches. */
static void bind_ro(int host, int root, const char *path, struct closed_later *later) {
  const uint64_t in_root = FLOOR_RESOLVE_IN_ROOT | FLOOR_RESOLVE_NO_SYMLINKS;
  const char *rel = path;
  while (*rel == '/') ++rel;
  int src = check(openat2_(host, rel, O_PATH, in_root), path);
  int tree = check(clone_tree(src, "", 1, FLOOR_MOUNT_ATTR_RDONLY | FLOOR_MOUNT_ATTR_NOSUID | FLOOR_MOUNT_ATTR_NODEV), path);
  int dst = openat2_(root, rel, O_PATH, in_root);
  struct floor_statx a, b;
  if (dst < 0 && errno != ENOENT) die(path);
  statx_(src, &a, path);
  if (dst >= 0) {
    statx_(dst, &b, path);
    if (a.ino != b.ino || a.dev_major != b.dev_major || a.dev_minor != b.dev_minor) {
      errno = ESTALE;
      die(path);
    }
  } else {
    if (!S_ISDIR(a.mode)) {
      errno = ENOTDIR;
      die(path);
    }
    dst = make_path(root, path);
  }
  if (syscall(FLOOR_NR_move_mount, tree, "", dst, "", FLOOR_MOVE_MOUNT_F_EMPTY_PATH | FLOOR_MOVE_MOUNT_T_EMPTY_PATH) != 0)
    die(path);
  close_later(later, src);
  close_later(later, tree);
  close_later(later, dst);
}

/* ------------------------------------------------------------ PID 1 */

static int pid1(const char *ws, char **ro, int binds, char **payload, int net, unsigned uid, unsigned gid) {
  char map[48];
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("pdeathsig");
  id_map(map, uid);
  write_file("/proc/self/uid_map", map);
  write_file("/proc/self/setgroups", "deny\n");
  id_map(map, gid);
  write_file("/proc/self/gid_map", map);
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die("dumpable");
  if (net) loopback_up();
  if (sethostname("nsrun", 5) != 0) die("sethostname");

  /* The root: the host's, read-only, recursively, stacked on /. The
   * binds' sources are looked up from the host's root, which a lookup that
   * starts there still sees (it never enters a mount stacked on it). */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("make / private");
  const int host = binds ? check(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), "/") : -1;
  const uint64_t nosuid = FLOOR_MOUNT_ATTR_NOSUID, nodev = FLOOR_MOUNT_ATTR_NODEV, noexec = FLOOR_MOUNT_ATTR_NOEXEC;
  int tree = check(clone_tree(AT_FDCWD, "/", 1, FLOOR_MOUNT_ATTR_RDONLY | nosuid | nodev), "clone /");
  if (syscall(FLOOR_NR_move_mount, tree, "", AT_FDCWD, "/", FLOOR_MOVE_MOUNT_F_EMPTY_PATH) != 0) die("mount / on /");
  const int root = tree; /* the new root, attached */

  /* /dev: a tmpfs, the host's harmless device nodes bound in. */
  int dev = new_fs("tmpfs", "755", nosuid | noexec);
  int dev_dup = check(fcntl(dev, F_DUPFD_CLOEXEC, 0), "dup");
  attach(dev_dup, root, "dev");
  static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  for (unsigned i = 0; i < sizeof nodes / sizeof nodes[0]; ++i) {
    char host[32] = "/dev/";
    strcat(host, nodes[i]);
    int node = clone_tree(AT_FDCWD, host, 1, nosuid | noexec);
    if (node < 0 && errno == ENOENT) continue;
    check(node, host);
    close(check(openat(dev, nodes[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444), host));
    attach(node, dev, nodes[i]);
  }
  static const char *const links[][2] = {{"/proc/self/fd", "fd"},     {"/proc/self/fd/0", "stdin"},
                                         {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
                                         {"/proc/kcore", "core"}};
  for (unsigned i = 0; i < sizeof links / sizeof links[0]; ++i)
    if (symlinkat(links[i][0], dev, links[i][1]) != 0) die(links[i][1]);
  int pts = new_fs("devpts", "620", nosuid | noexec);
  if (mkdirat(dev, "pts", 0755) != 0) die("mkdir /dev/pts");
  attach(pts, dev, "pts");
  if (symlinkat("pts/ptmx", dev, "ptmx") != 0) die("ptmx");
  int shm = new_fs("tmpfs", "1777", nosuid | nodev);
  if (mkdirat(dev, "shm", 0755) != 0) die("mkdir /dev/shm");
  attach(shm, dev, "shm");
  close(dev);

  /* /proc: this PID namespace's, its host-wide knobs read-only. */
  attach(new_fs("proc", NULL, nosuid | nodev | noexec), root, "proc");
  static const char *const knobs[] = {"proc/sys", "proc/sysrq-trigger", "proc/irq", "proc/bus"};
  for (unsigned i = 0; i < sizeof knobs / sizeof knobs[0]; ++i) {
    int t = clone_tree(root, knobs[i], 1, FLOOR_MOUNT_ATTR_RDONLY | nosuid | nodev | noexec);
    if (t < 0 && errno == ENOENT) continue;
    attach(check(t, knobs[i]), root, knobs[i]);
  }

  /* /tmp, then the workspace, writable, at its own path. */
  attach(new_fs("tmpfs", "1777", nosuid | nodev), root, "tmp");
  int work = check(clone_tree(AT_FDCWD, ws, 1, nosuid | nodev), ws);
  int at = make_path(root, ws);
  if (syscall(FLOOR_NR_move_mount, work, "", at, "", FLOOR_MOVE_MOUNT_F_EMPTY_PATH | FLOOR_MOVE_MOUNT_T_EMPTY_PATH) != 0)
    die("mount the workspace");
  close(work);
  close(at);
  struct closed_later later = {{0}, 0};
  for (int i = 0; i < binds; ++i) bind_ro(host, root, ro[2 * i + 1], &later);
  flush_closed(&later);
  if (binds) close(host);

  if (fchdir(root) != 0) die("fchdir new root");
  if (syscall(SYS_pivot_root, ".", ".") != 0) die("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) die("detach the old root");
  if (chdir("/") != 0 || chdir(ws) != 0) die("chdir");
  close(root);

  /* Privileges: none left, and nsrun's filter. */
  for (int cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; ++cap) {
  }
  if (errno != EINVAL) die("drop the bounding set");
  if (prctl(FLOOR_PR_CAP_AMBIENT, FLOOR_PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die("clear the ambient set");
  struct floor_cap_header h = {FLOOR_CAPABILITY_VERSION_3, 0};
  struct floor_cap_data d[2];
  memset(d, 0, sizeof d);
  if (syscall(SYS_capset, &h, d) != 0) die("capset");
  const struct rlimit no_core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &no_core) != 0) die("RLIMIT_CORE");
  if (prctl(FLOOR_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
  const struct floor_sock_fprog prog = {FLOOR_FILTER_LEN, floor_filter};
  if (prctl(FLOOR_PR_SET_SECCOMP, FLOOR_SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) die("seccomp");

  /* The payload as PID 2; PID 1 reaps until it has ended. */
  pid_t child = vfork();
  if (child == 0) {
    setsid();
    execv(payload[0], payload);
    _exit(127);
  }
  if (child < 0) die("vfork");
  int status = 0;
  pid_t got;
  while ((got = waitpid(-1, &status, 0)) != child)
    if (got < 0 && errno != EINTR) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ------------------------------------------------------------ launcher */

int main(int argc, char **argv) {
  /* Setuid or setgid (someone's chmod u+s, an install it was never meant
   * for), it would map the owner's id into its namespace and bind any
   * directory the caller names writable as the workspace: refused, as
   * nsrun refuses. */
  if (getuid() != geteuid() || getgid() != getegid() || getauxval(AT_SECURE) != 0) {
    say("refusing to run", "setuid or setgid");
    return 125;
  }
  int net = argc > 1 && strcmp(argv[1], "--net") == 0;
  char **ro = argv + 1 + net;
  int binds = 0;
  while (1 + net + 2 * binds + 1 < argc && strcmp(ro[2 * binds], "--ro") == 0 && ro[2 * binds + 1][0] == '/') ++binds;
  const int first = 1 + net + 2 * binds;
  if (argc < first + 2 || argv[first][0] != '/' || argv[first + 1][0] != '/') {
    say("usage", "nsrun-floor-sandbox [--net] [--ro /DIR]... /WORKSPACE /ABSOLUTE/PAYLOAD [ARGS...]");
    return 125;
  }
  const char *ws = argv[first];
  char **payload = argv + first + 1;
  const unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();
  struct floor_clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = FLOOR_CLONE_NEWUSER | FLOOR_CLONE_NEWPID | FLOOR_CLONE_NEWNS | FLOOR_CLONE_NEWIPC |
               FLOOR_CLONE_NEWUTS | FLOOR_CLONE_NEWCGROUP | (net ? FLOOR_CLONE_NEWNET : 0);
  args.exit_signal = SIGCHLD;
  long pid = syscall(FLOOR_NR_clone3, &args, sizeof args);
  if (pid < 0) die("clone3");
  if (pid == 0) _exit(pid1(ws, ro, binds, payload, net, uid, gid));
  int status = 0;
  while (waitpid((pid_t)pid, &status, 0) < 0)
    if (errno != EINTR) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
