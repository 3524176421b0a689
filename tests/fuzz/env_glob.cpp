// --env-allow / --env-deny globs: glob_match(pattern, name), the pattern
// before the first NUL, the name after it. Property: the same answer as
// glibc's fnmatch(pattern, name, 0) in the C locale, which glob.hpp
// promises, for every pattern fnmatch can answer quickly (its '*' handling
// backtracks: with many stars on a long name it is too slow to be an
// oracle, while glob_match stays linear per star).
#include <fnmatch.h>

#include <string>

#include "fuzz.hpp"
#include "policy/glob.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  const std::size_t nul = in.find('\0');
  const std::string_view pattern = in.substr(0, nul);
  const std::string_view name = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  const bool ours = nsrun::glob_match(pattern, name);

  // fnmatch reads C strings: the name ends at its own first NUL.
  const std::string p(pattern), n(name.substr(0, name.find('\0')));
  double work = 1;
  for (char c : p)
    if (c == '*' && (work *= static_cast<double>(n.size() + 1)) > 1e5) return 0;
  const bool theirs = ::fnmatch(p.c_str(), n.c_str(), 0) == 0;
  if (ours != theirs)
    nsrun_fuzz::broken("glob_match and fnmatch disagree",
                       "pattern '" + p + "' name '" + n + "': glob_match " + (ours ? "matches" : "does not match"));
  return 0;
}
