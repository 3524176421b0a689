/* nsrun-floor-exec: the least a launcher that is a program of its own
 * costs. It execs its arguments and does nothing else: no sandbox, no
 * parsing, no allocation. `nsrun bench` runs it as its floor rows, one per
 * C library the build offers (the same source linked statically against
 * glibc, and against musl where Debian's musl-tools is installed), so every
 * run shows how much of a launch is one more process image and its C
 * library's start-up, and how far above that nsrun is (docs/bench.md).
 *
 * C, not C++, on purpose: musl-tools ships musl-gcc for C only, and the two
 * builds must run the same code.
 *
 *   nsrun-floor-glibc /ABSOLUTE/PATH [ARGS...]
 */
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) return 125;
  /* No PATH search: the bench resolves the payload beforehand. */
  execv(argv[1], argv + 1);
  return 127;
}
