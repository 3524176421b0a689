// `nsrun bench [OPTIONS]`: the command-line side of src/bench.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "sys/error.hpp"

namespace nsrun {

struct BenchArgs {
  bench::Options options;
  std::vector<std::string> peers;  // --vs values, in order
  std::vector<std::string> rows;   // --rows: which of nsrun's own rows (empty: all)
  std::vector<std::string> payload;
  std::string nsrun;               // the nsrun binary measured (default: this one)
  std::size_t binds = 0;
  std::string json_path, plot_path;
  bool baseline_given = false;
  bool help = false;
};

Result<BenchArgs> parse_bench(std::span<const std::string> args);
std::string bench_usage();
// Splits a --vs command line as a shell would split plain words: blanks
// separate, '...' and "..." quote, a backslash escapes one character.
Result<std::vector<std::string>> split_command_line(std::string_view text);
int bench_main(std::span<const std::string> args);

// `nsrun --bench-noop` exits 0 at once: the bench's payload where there is
// no /bin/true (a bare microVM image).
inline constexpr std::string_view bench_noop_flag = "--bench-noop";

}  // namespace nsrun
