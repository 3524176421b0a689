// glob_match() against glibc's fnmatch(pattern, name, 0): the same answer
// for the documented forms and for generated ill-formed ones.
#include <fnmatch.h>

#include <random>
#include <string>

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include "policy/glob.hpp"

using nsrun::glob_match;

namespace {

bool libc_match(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// Patterns built from the pieces fnmatch treats specially, often cut short
// or malformed on purpose.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::string pattern() {
    std::string p;
    for (int k = pick(4) + 1; k > 0; --k) p.append(token());
    return p;
  }
  std::string name(const std::string& pattern) {
    if (pick(4) == 0) return pattern.substr(0, static_cast<std::size_t>(pick(static_cast<int>(pattern.size()) + 1)));
    static const std::string chars = "abz-]![^\\:=.AZ09_ \t\x7f\x80\xff";
    std::string n;
    for (int k = pick(6); k > 0; --k) n += chars[static_cast<std::size_t>(pick(static_cast<int>(chars.size())))];
    return n;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  std::string one() {
    static const std::string chars = "abz-]![^\\:=.AZ09_*?\x80\xff\x01 ";
    return std::string(1, chars[static_cast<std::size_t>(pick(static_cast<int>(chars.size())))]);
  }
  std::string item() {
    static const char* const classes[] = {"alpha", "digit", "upper", "lower", "alnum", "punct", "space", "xdigit",
                                          "print", "graph", "cntrl", "blank", "foo", "zz", "Alpha", ""};
    switch (pick(13)) {
      case 0: return one();
      case 1: return fmt::format("{}-{}", one(), one());
      case 2: return fmt::format("\\{}", one());
      case 3: return fmt::format("[:{}{}", classes[pick(16)], pick(5) != 0 ? ":]" : pick(2) != 0 ? ":" : "");
      case 4: return "[=" + one() + (pick(4) != 0 ? "=]" : pick(2) != 0 ? "=" : one() + "=]");
      case 5: return "[." + one() + (pick(3) != 0 ? "" : one()) + (pick(4) != 0 ? ".]" : ".");
      case 6: return "[.a.]-" + one();
      case 7: return one() + "-[." + one() + ".]";
      case 8: return one() + "-\\" + one();
      case 9: return "[";
      case 10: return "\\";
      default: return one() + one();
    }
  }
  std::string token() {
    switch (pick(8)) {
      case 0: return "*";
      case 1: return "?";
      case 2: return fmt::format("\\{}", one());
      case 3:
      case 4:
      case 5: {
        std::string b = "[";
        if (pick(3) == 0) b += pick(2) != 0 ? "!" : "^";
        if (pick(5) == 0) b += "]";
        for (int k = pick(4); k > 0; --k) b += item();
        if (pick(5) != 0) b += "]";
        return b;
      }
      case 6: return pick(10) != 0 ? one() : "\\";
      default: return one();
    }
  }
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("env globs: the documented forms", "[unit][policy]") {
  CHECK(glob_match("AWS_*", "AWS_SECRET_ACCESS_KEY"));
  CHECK_FALSE(glob_match("AWS_*", "XAWS_"));
  CHECK(glob_match("*", ""));
  CHECK(glob_match("LC_?", "LC_X"));
  CHECK_FALSE(glob_match("LC_?", "LC_"));
  CHECK(glob_match("[A-Z]*_TOKEN", "GH_TOKEN"));
  CHECK_FALSE(glob_match("[!A-Z]*", "PATH"));
  CHECK(glob_match("[^A-Z]*", "path"));
  CHECK(glob_match("X[[:digit:]]", "X7"));
  CHECK(glob_match("a\\*", "a*"));
  CHECK_FALSE(glob_match("a\\*", "ab"));
  CHECK(glob_match("[a", "[a"));          // unterminated: a plain '['
  CHECK(glob_match("[]x]", "]"));         // a leading ']' is in the list
  CHECK_FALSE(glob_match("[[:foo:]]", "f"));  // an unknown class never matches
  CHECK_FALSE(glob_match("a\\", "a\\"));  // a trailing backslash never matches
}

TEST_CASE("env globs answer as glibc's fnmatch does", "[unit][policy]") {
  Generator gen(6);
  for (int i = 0; i < 100'000; ++i) {
    const std::string p = gen.pattern();
    const std::string n = gen.name(p);
    INFO("pattern '" << p << "' name '" << n << "'");
    CHECK(glob_match(p, n) == libc_match(p, n));
  }
  // glibc gives up on a class name of 2048 characters or more.
  for (std::size_t k : {2046u, 2047u, 2048u, 2049u}) {
    const std::string a(k, 'a');
    for (const std::string& p : {"[[:" + a + "Z]", "[b[:" + a + ":]]"})
      for (const char* n : {"[", "b"}) CHECK(glob_match(p, n) == libc_match(p, n));
  }
}
