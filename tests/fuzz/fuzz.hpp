// Shared bits of the libFuzzer harnesses (tools/fuzz.sh builds and runs
// them; docs/hardening.md says what each covers). A harness calls nsrun's
// pure parsers on the fuzzer's bytes, never nsrun itself; what it checks
// besides "no crash, no sanitizer report" is a property the parser
// documents, and a broken one ends the run with abort() so libFuzzer keeps
// the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace nsrun_fuzz {

inline std::string_view bytes(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Arguments as the kernel hands them to main(): NUL-separated. A final
// argument without a NUL counts; an empty input is no arguments.
inline std::vector<std::string> split_args(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t nul = text.find('\0');
    out.emplace_back(text.substr(0, nul));
    if (nul == std::string_view::npos) break;
    text.remove_prefix(nul + 1);
  }
  return out;
}

[[noreturn]] inline void broken(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz: property broken: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace nsrun_fuzz
