/* nsrun-istep: user-space instructions of a command and of every process
 * it starts, counted by single-stepping each with ptrace. A count that
 * does not move with the machine's load (docs/bench.md, "Where nsrun's
 * own time goes"): valgrind 3.19 (Debian bookworm) knows neither openat2,
 * clone3 nor the mount API, so callgrind cannot follow a launch, and a VM
 * without hardware counters has no `perf stat -e instructions`.
 *
 *   gcc -O2 -o /tmp/nsrun-istep tools/nsrun-istep.c
 *   /tmp/nsrun-istep [-o DIR] CMD ARGS...
 *
 * Prints one line per segment (a process between two execs): pid.n, the
 * executable, its instruction count. With -o, each segment's instruction
 * addresses go to DIR/seg.<pid>.<n> (8 bytes each), for
 * tools/nsrun-istep-symbols.py. Spin loops on the clock (the vDSO's
 * seqlock retries while being stepped) vary between runs: compare counts
 * without the vDSO's (the script prints both). Slow (tens of seconds for
 * one launch); the command runs as it would, nothing is changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXP 64
struct seg { pid_t pid; int n; unsigned long count; FILE *out; char exe[256]; int done; };
static struct seg segs[1024];
static int nsegs;
static const char *dir;

static struct seg *cur(pid_t pid) {
  for (int i = nsegs - 1; i >= 0; --i)
    if (segs[i].pid == pid && !segs[i].done) return &segs[i];
  return NULL;
}

static struct seg *open_seg(pid_t pid, int n) {
  struct seg *s = &segs[nsegs++];
  memset(s, 0, sizeof *s);
  s->pid = pid;
  s->n = n;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/exe", pid);
  ssize_t l = readlink(path, s->exe, sizeof s->exe - 1);
  if (l < 0) strcpy(s->exe, "?");
  if (dir) {
    char f[512];
    snprintf(f, sizeof f, "%s/seg.%d.%d", dir, pid, n);
    s->out = fopen(f, "w");
  }
  return s;
}

static void close_seg(struct seg *s) {
  if (!s) return;
  s->done = 1;
  if (s->out) fclose(s->out);
  s->out = NULL;
}

int main(int argc, char **argv) {
  int a = 1;
  if (argc > 2 && strcmp(argv[1], "-o") == 0) { dir = argv[2]; a = 3; }
  pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    execvp(argv[a], argv + a);
    _exit(127);
  }
  int st;
  waitpid(child, &st, 0);
  ptrace(PTRACE_SETOPTIONS, child, 0,
         PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
  ptrace(PTRACE_CONT, child, 0, 0);  // to the exec
  int live = 1;
  int first_exit = -1;
  while (live > 0) {
    pid_t pid = waitpid(-1, &st, __WALL);
    if (pid < 0) { if (errno == EINTR) continue; break; }
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      close_seg(cur(pid));
      --live;
      if (pid == child) first_exit = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      continue;
    }
    if (!WIFSTOPPED(st)) continue;
    int sig = WSTOPSIG(st);
    int event = st >> 16;
    int deliver = 0;
    struct seg *s = cur(pid);
    if (sig == SIGTRAP && event != 0) {
      if (event == PTRACE_EVENT_EXEC) {
        int n = s ? s->n + 1 : 0;
        close_seg(s);
        open_seg(pid, n);
      }
      // fork/clone/vfork: the new task shows up with a SIGSTOP of its own.
    } else if (sig == SIGTRAP) {
      if (s) {
        s->count++;
        if (s->out) {
          long rip = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, rip), 0);
          fwrite(&rip, sizeof rip, 1, s->out);
        }
      }
    } else if (sig == SIGSTOP && !s) {
      // A new task (or the first one before exec: not yet a segment).
      if (pid != child) { ++live; open_seg(pid, 0); }
    } else {
      deliver = sig;
    }
    if (ptrace(PTRACE_SINGLESTEP, pid, 0, deliver) != 0 && errno == ESRCH) continue;
  }
  for (int i = 0; i < nsegs; ++i)
    fprintf(stderr, "istep %d.%d %s %lu\n", segs[i].pid, segs[i].n, segs[i].exe, segs[i].count);
  return first_exit;
}
