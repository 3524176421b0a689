#include "policy/glob.hpp"

#include <cstdlib>
#include <string>

namespace nsrun {

namespace {

// Where glibc 2.36 gives up on a [:name:] (2048 characters, measured).
constexpr std::size_t class_name_max = 2048;

// The pattern as fnmatch reads it: NUL past the end.
class Pattern {
 public:
  explicit Pattern(std::string_view s) : s_(s) {}
  std::size_t size() const { return s_.size(); }
  unsigned char at(std::size_t i) const { return i < s_.size() ? static_cast<unsigned char>(s_[i]) : 0; }

 private:
  std::string_view s_;
};

// The C locale's character classes; `known` is false for a name that is
// none of them.
bool in_class(std::string_view name, unsigned char c, bool& known) {
  const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
  const bool graph = c > ' ' && c < 127;
  known = true;
  if (name == "alnum") return upper || lower || digit;
  if (name == "alpha") return upper || lower;
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return c < ' ' || c == 127;
  if (name == "digit") return digit;
  if (name == "graph") return graph;
  if (name == "lower") return lower;
  if (name == "print") return graph || c == ' ';
  if (name == "punct") return graph && !upper && !lower && !digit;
  if (name == "space") return c == ' ' || (c >= '\t' && c <= '\r');
  if (name == "upper") return upper;
  if (name == "xdigit") return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  known = false;
  return false;
}

enum class Outcome { match, no_match, literal };

// A collating symbol "[.x.]" whose '.' is at `dot`: its character, and
// `next` after its ']'. Without collation rules (the C locale) glibc knows
// only one-character symbols; `ok` is false for any other or an
// unterminated one, and the whole bracket then fails.
unsigned char collating_symbol(const Pattern& p, std::size_t dot, std::size_t& next, bool& ok) {
  std::size_t j = dot, length = 0;
  while (true) {
    const unsigned char d = p.at(++j);
    if (d == '.' && p.at(j + 1) == ']') break;
    if (d == 0) return ok = false, 0;
    ++length;
  }
  next = j + 2;
  ok = length == 1;
  return p.at(dot + 1);
}

// After an item matched: glibc skips to the bracket's end with its own,
// looser reading of the rest, and fails on what it cannot skip.
Outcome skip_rest(const Pattern& p, std::size_t& i) {
  while (true) {
    const unsigned char c = p.at(i++);
    if (c == ']') return Outcome::match;
    if (c == 0) return Outcome::literal;
    if (c == '\\') {
      if (p.at(i) == 0) return Outcome::no_match;
      ++i;
    } else if (c == '[' && p.at(i) == ':') {
      std::size_t j = i, length = 0;
      while (true) {
        const unsigned char d = p.at(++j);
        if (++length == class_name_max) return Outcome::no_match;
        if (d == ':' && p.at(j + 1) == ']') {
          i = j + 2;
          break;
        }
        if (d < 'a' || d >= 'z') break;  // not a class: go on after the '['
      }
    } else if (c == '[' && p.at(i) == '=') {
      if (p.at(i + 1) == 0 || p.at(i + 2) != '=' || p.at(i + 3) != ']') return Outcome::no_match;
      i += 4;
    } else if (c == '[' && p.at(i) == '.') {
      std::size_t j = i;
      while (true) {
        const unsigned char d = p.at(++j);
        if (d == 0) return Outcome::no_match;
        if (d == '.' && p.at(j + 1) == ']') break;
      }
      i = j + 2;
    }
  }
}

// The bracket expression after the '[' at `open`, against `ch`; on a match
// `next` is the index after it. `literal`: unterminated, so the '[' is an
// ordinary character.
Outcome bracket(const Pattern& p, std::size_t open, unsigned char ch, std::size_t& next) {
  std::size_t i = open + 1;
  // glibc takes '^' like '!' unless POSIXLY_CORRECT is set.
  const bool negate = p.at(i) == '!' || (p.at(i) == '^' && std::getenv("POSIXLY_CORRECT") == nullptr);
  if (negate) ++i;
  auto matched = [&] {
    const Outcome rest = skip_rest(p, i);
    if (rest != Outcome::match) return rest;
    if (negate) return Outcome::no_match;
    next = i;
    return Outcome::match;
  };
  unsigned char c = p.at(i++);
  while (true) {
    bool plain = true;      // c is an ordinary character of the list
    bool may_range = false;  // `low` may start a range "low-high"
    unsigned char low = 0;
    if (c == '\\') {
      if (p.at(i) == 0) return Outcome::no_match;
      c = p.at(i++);
    } else if (c == '[' && p.at(i) == ':') {
      std::string name;
      std::size_t j = i;
      bool is_class = true;
      while (true) {
        if (name.size() == class_name_max) return Outcome::no_match;
        const unsigned char d = p.at(++j);
        if (d == ':' && p.at(j + 1) == ']') break;
        if (d < 'a' || d >= 'z') {  // glibc's test, 'z' included
          is_class = false;
          break;
        }
        name += static_cast<char>(d);
      }
      if (is_class) {
        i = j + 2;
        bool known = false;
        if (in_class(name, ch, known)) return matched();
        if (!known) return Outcome::no_match;
        c = p.at(i++);
        plain = false;
      }
    } else if (c == '[' && p.at(i) == '=') {
      const unsigned char sym = p.at(i + 1);
      if (sym != 0 && p.at(i + 2) == '=' && p.at(i + 3) == ']') {
        i += 4;
        if (ch == sym) return matched();
        c = p.at(i++);
        plain = false;
      }
    } else if (c == 0) {
      return Outcome::literal;
    } else if (c == '[' && p.at(i) == '.') {
      bool ok = false;
      const unsigned char sym = collating_symbol(p, i, i, ok);
      if (!ok) return Outcome::no_match;
      if (!(p.at(i) == '-' && p.at(i + 1) != 0) && ch == sym) return matched();
      low = sym;
      c = p.at(i++);
      plain = false;
      may_range = true;
    }
    if (plain) {
      if (!(p.at(i) == '-' && p.at(i + 1) != 0 && p.at(i + 1) != ']') && ch == c) return matched();
      low = c;
      c = p.at(i++);
      may_range = true;
    }
    if (may_range && c == '-' && p.at(i) != ']') {
      unsigned char high = p.at(i++);
      if (high == '[' && p.at(i) == '.') {
        bool ok = false;
        high = collating_symbol(p, i, i, ok);
        if (!ok) return Outcome::no_match;
      } else {
        if (high == '\\') high = p.at(i++);
        if (high == 0) return Outcome::no_match;
      }
      if (low <= ch && ch <= high) return matched();
      c = p.at(i++);
    }
    if (c == ']') break;
  }
  if (!negate) return Outcome::no_match;
  next = i;
  return Outcome::match;
}

}  // namespace

bool glob_match(std::string_view pattern_text, std::string_view name) {
  // fnmatch reads C strings: both end at the first NUL.
  const Pattern p(pattern_text.substr(0, pattern_text.find('\0')));
  name = name.substr(0, name.find('\0'));
  // Every item but '*' matches exactly one character, so on a mismatch it
  // is enough to let the last '*' take one more character.
  constexpr std::size_t none = std::string_view::npos;
  std::size_t i = 0, n = 0, star_i = none, star_n = 0;
  while (true) {
    if (i < p.size() && p.at(i) == '*') {
      star_i = ++i;
      star_n = n;
      continue;
    }
    if (i == p.size() && n == name.size()) return true;
    if (i < p.size() && n < name.size()) {
      const auto ch = static_cast<unsigned char>(name[n]);
      const unsigned char c = p.at(i);
      std::size_t next = i + 1;
      bool ok = false;
      if (c == '?') {
        ok = true;
      } else if (c == '\\') {
        ok = i + 1 < p.size() && p.at(i + 1) == ch;
        next = i + 2;
      } else if (c == '[') {
        switch (bracket(p, i, ch, next)) {
          case Outcome::match: ok = true; break;
          case Outcome::no_match: ok = false; break;
          case Outcome::literal: ok = ch == '['; next = i + 1; break;
        }
      } else {
        ok = c == ch;
      }
      if (ok) {
        i = next;
        ++n;
        continue;
      }
    }
    if (star_i == none || star_n >= name.size()) return false;
    i = star_i;
    n = ++star_n;
  }
}

}  // namespace nsrun
