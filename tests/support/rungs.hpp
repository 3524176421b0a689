// Helpers of the tests that run each case on both rungs. Header-only.
#pragma once

#include <string>
#include <vector>

#include "harness.hpp"

namespace nsrun_test {

// a then b: rung options before a case's own.
inline std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace nsrun_test

// One TEST_CASE per rung for `fn(Rung)`: `base` is the file's tag, the
// Landlock case adds [landlock].
#define NSRUN_BOTH_RUNGS(base, title, tags, fn)                                        \
  TEST_CASE(title " (namespace rung)", base tags) { fn(nsrun_test::Rung::namespaces); } \
  TEST_CASE(title " (landlock rung)", base "[landlock]" tags) { fn(nsrun_test::Rung::landlock); }
