// git on the host, for the tests that plant git material and then do what
// the user would do next (protect tests).
#pragma once

#include "harness.hpp"

#include <string>
#include <vector>

namespace nsrun_test {

inline bool git_installed() { return run({"sh", "-c", "command -v git"}).exit_code == 0; }

// git -C dir ARGS..., with an identity for commits.
inline RunResult git_in(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

}  // namespace nsrun_test
