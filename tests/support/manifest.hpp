// A record of a host tree, for the tests that hold it byte-identical across
// a sandboxed run (the real home under a cow home). Header-only.
#pragma once

#include <ftw.h>
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace nsrun_test {

// Every path below `root` (relative to it, "" for root itself), with its
// mode, owner and contents (a symlink's target). FTW_PHYS: links are
// recorded, never followed. Whole contents, so keep it to small trees.
inline std::map<std::string, std::string> manifest(const std::string& root) {
  // nftw takes a plain function: the walk's state goes through these.
  static thread_local std::map<std::string, std::string>* out;
  static thread_local std::size_t skip;
  std::map<std::string, std::string> m;
  out = &m;
  skip = root.size();
  nftw(
      root.c_str(),
      [](const char* p, const struct stat* st, int, FTW*) {
        std::string what = S_ISREG(st->st_mode) ? read_file(p) : S_ISLNK(st->st_mode) ? read_link(p) : std::string();
        (*out)[std::string(p).substr(skip)] =
            std::to_string(st->st_mode) + " " + std::to_string(st->st_uid) + " " + what;
        return 0;
      },
      16, FTW_PHYS);
  return m;
}

// The names below `root`, relative to it.
inline std::vector<std::string> names_below(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& [k, v] : manifest(root))
    if (!k.empty()) out.push_back(k.substr(1));
  return out;
}

}  // namespace nsrun_test
