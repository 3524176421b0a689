// Command lines that run nsrun-probe inside nsrun, shared by the tests that
// observe the sandbox from inside. Header-only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "harness.hpp"

namespace nsrun_test {

// `OPTIONS -- nsrun-probe PROBE_ARGS`, the arguments of nsrun.
inline std::vector<std::string> with_probe(std::vector<std::string> options,
                                           const std::vector<std::string>& probe_args) {
  options.push_back("--");
  options.push_back(probe_path());
  options.insert(options.end(), probe_args.begin(), probe_args.end());
  return options;
}

// The options of the two process models: under nsrun's PID 1, or the
// command as PID 1 (--as-pid-1).
inline std::vector<std::string> pid1_options(bool as_pid_1) {
  return as_pid_1 ? std::vector<std::string>{"--as-pid-1"} : std::vector<std::string>{};
}

// `nsrun OPTIONS -- nsrun-probe ARGS`, run from `cwd` (the workspace).
inline RunResult probe_under(const std::vector<std::string>& options, const std::vector<std::string>& probe_args,
                             const TempDir& cwd) {
  return nsrun(with_probe(options, probe_args), at(cwd));
}

// The probe as a word of a shell script: `'PROBE' ARGS`.
inline std::string probe_sh(const std::string& probe_args) { return shell_quote(probe_path()) + " " + probe_args; }

// Runs the probe under OPTIONS and checks how it ended and that it printed
// exactly `out`.
inline void check_probe(const std::vector<std::string>& options, const std::vector<std::string>& probe_args,
                        const TempDir& cwd, int exit_code, std::string_view out) {
  RunResult r = probe_under(options, probe_args, cwd);
  INFO(r.err);
  CHECK(r.exit_code == exit_code);
  CHECK(r.out == out);
}

}  // namespace nsrun_test
