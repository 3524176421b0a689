// Helpers of the copy-on-write tests (cow_test.cpp, cow_commit_test.cpp):
// a manifest of a tree (what "byte-identical" compares), the run id a
// launch printed, and the environment that keeps the layers in the test's
// own directories.
#pragma once

#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nsrun_test::cow {

// path -> "type mode size hash-or-target": what "byte-identical" compares.
inline std::map<std::string, std::string> manifest(const std::string& root, const std::string& skip = {}) {
  static std::map<std::string, std::string>* out;
  static std::string base, skipped;
  std::map<std::string, std::string> m;
  out = &m;
  base = root;
  skipped = skip;
  nftw(
      root.c_str(),
      [](const char* p, const struct stat* st, int, FTW*) {
        std::string rel = std::string(p).substr(base.size());
        if (!skipped.empty() && (std::string(p) == skipped || std::string(p).starts_with(skipped + "/"))) return 0;
        std::string what;
        if (S_ISLNK(st->st_mode)) what = "link " + read_link(p);
        else if (S_ISREG(st->st_mode))
          what = "file " + std::to_string(std::hash<std::string>{}(read_file(p)));
        else if (S_ISDIR(st->st_mode)) what = "dir";
        else what = "other";
        (*out)[rel] = what + " " + std::to_string(st->st_mode & 07777) + " " +
                      (S_ISDIR(st->st_mode) ? std::string() : std::to_string(st->st_size));
        return 0;
      },
      16, FTW_PHYS);
  return m;
}

// The 12 hex digits of "nsrun: run ID:" on the launch's stderr.
inline std::string run_id_of(const std::string& err) {
  constexpr std::string_view head = "nsrun: run ";
  for (auto at = err.find(head); at != std::string::npos; at = err.find(head, at + 1)) {
    const std::string id = err.substr(at + head.size(), 13);
    if (id.size() == 13 && id[12] == ':' &&
        id.find_first_not_of("0123456789abcdef") == 12)
      return id.substr(0, 12);
  }
  FAIL("no run id on stderr: " << err);
  return {};
}

// The environment for the layer commands and the runs: a cow dir and a
// state home of the test's own, so nothing lands in the real ones.
inline std::vector<std::string> layer_env(const TempDir& state, const std::string& home) {
  return {"XDG_STATE_HOME=" + state.path(), "HOME=" + home, "XDG_RUNTIME_DIR="};
}

// Waits (with a deadline) until the coarse clock file times come from has
// moved past `path`'s ctime.
inline void wait_for_next_tick(const std::string& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  CHECK(eventually([&] {
    struct timespec now{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    return now.tv_sec > st.st_ctim.tv_sec || (now.tv_sec == st.st_ctim.tv_sec && now.tv_nsec > st.st_ctim.tv_nsec);
  }));
}

// Waits (with a deadline) until the coarse clock is past now: every file
// the test just wrote is older than a run started after it, so commit sees
// none of them as changed by the host.
inline void settle_clock() {
  struct timespec made{};
  ::clock_gettime(CLOCK_REALTIME, &made);
  CHECK(eventually([&] {
    struct timespec coarse{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &coarse);
    return coarse.tv_sec > made.tv_sec || (coarse.tv_sec == made.tv_sec && coarse.tv_nsec > made.tv_nsec);
  }));
}

inline nsrun_test::RunOptions in(const TempDir& dir, std::vector<std::string> env) {
  RunOptions o = at(dir);
  o.env = std::move(env);
  return o;
}

// Runs `script` with `sh -c` in the copy-on-write workspace `ws` (`extra`
// options before the `--`), REQUIREs that it ran, and returns its run id.
inline std::string cow_run(const TempDir& ws, const std::vector<std::string>& env, const std::string& script,
                           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--workspace-mode", "cow"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  RunResult r = nsrun(args, in(ws, env));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return run_id_of(r.err);
}

}  // namespace nsrun_test::cow
