// The bwrap dialect's differential tests: Debian's bwrap as the oracle, and
// a directory holding `bwrap` -> nsrun, the way harnesses find us.
#pragma once

#include <unistd.h>

#include <string>

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

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

// `<bwrap> ARGS` through a shell, so a case can open fds (`3<file`); bash,
// since dash redirects only fds 0 to 9 and callers hand over more.
inline RunResult run_bwrap(const std::string& bwrap, const std::string& args, const RunOptions& opts = {}) {
  return run({"/bin/bash", "-c", fmt::format("exec {} {}", shell_quote(bwrap), args)}, opts);
}

// The same command line under the oracle and under `bwrap` (nsrun by that
// name): stdout and the status must agree. Returns nsrun's result.
inline RunResult same_as_oracle(const std::string& bwrap, const std::string& args, const RunOptions& opts = {}) {
  RunResult want = run_bwrap(oracle, args, opts);
  RunResult got = run_bwrap(bwrap, args, opts);
  INFO("args: " << args);
  INFO("bwrap stdout: " << want.out << "bwrap stderr: " << want.err);
  INFO("nsrun stdout: " << got.out << "nsrun stderr: " << got.err);
  CHECK(got.exit_code == want.exit_code);
  CHECK(got.out == want.out);
  return got;
}

}  // namespace nsrun_test
