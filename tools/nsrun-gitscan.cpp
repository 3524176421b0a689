// Times scan_git_armed() (policy/gitdirs.hpp), the walk nsrun makes of each
// writable root after a direct-mode run, over one directory: R rounds,
// each round's milliseconds, then the median and the least. Nothing is
// renamed (the scan only looks; the launch's "since" is now, so nothing in
// a tree made before counts as made during a run).
//
//   nsrun-gitscan DIR [ROUNDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "policy/gitdirs.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: nsrun-gitscan DIR [ROUNDS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int rounds = argc == 3 ? std::atoi(argv[2]) : 21;
  if (rounds < 1) return 2;
  struct timespec since{};
  ::clock_gettime(CLOCK_REALTIME, &since);
  since.tv_sec += 1;
  std::vector<double> ms;
  std::size_t findings = 0;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto found = nsrun::scan_git_armed({dir}, since, [](const std::string&) { return std::vector<std::string>(); }, "");
    const auto t1 = std::chrono::steady_clock::now();
    findings = found.size();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("round %d: %.2f ms\n", i + 1, ms.back());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  std::printf("scan of %s: median %.2f ms, least %.2f ms over %d rounds (%zu findings)\n", dir.c_str(), median,
              ms.front(), rounds, findings);
  return 0;
}
