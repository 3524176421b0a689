// The bwrap dialect's differential tests: Debian's bwrap as the oracle, and
// a directory holding `bwrap` -> nsrun, the way harnesses find us.
#pragma once

#include <unistd.h>

#include <string>

#include <catch2/catch_test_macros.hpp>
#include <fmt/format.h>

#include "harness.hpp"

namespace nsrun_test {

inline constexpr const char* oracle = "/usr/bin/bwrap";

inline void require_oracle() {
  if (::access(oracle, X_OK) != 0)
    unavailable("bwrap-oracle", "/usr/bin/bwrap is missing (tools/install-deps.sh --test installs bubblewrap)");
}

inline bool is_root() { return ::getuid() == 0; }

struct BwrapShim {
  TempDir dir{"bin"};
  std::string path = dir / "bwrap";
  BwrapShim() { REQUIRE(::symlink(nsrun_path().c_str(), path.c_str()) == 0); }
};

// `<bwrap> ARGS` through sh, so a case can open fds (`3<file`).
inline RunResult run_bwrap(const std::string& bwrap, const std::string& args, const RunOptions& opts = {}) {
  return run({"/bin/sh", "-c", fmt::format("exec {} {}", shell_quote(bwrap), args)}, opts);
}

}  // namespace nsrun_test
