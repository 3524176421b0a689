// quote() copies the bytes that need no escape a run at a time. It must
// give exactly what escaping byte by byte gives, wherever an escaped byte
// falls in a run: the report, `nsrun policy` and the bench's JSON are
// written through it.
#include "policy/json.hpp"

#include <cstdio>
#include <string>

#include <catch2/catch_test_macros.hpp>

namespace {

// The definition, one byte at a time (RFC 8259: '"', '\\' and the control
// characters below 0x20 are escaped; every other byte is copied).
std::string quoted_bytewise(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\b') out += "\\b";
    else if (c == '\f') out += "\\f";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

TEST_CASE("quote gives what escaping byte by byte gives, wherever the escape falls", "[json][report]") {
  using nsrun::json::quote;
  CHECK(quote("") == "\"\"");
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    for (const std::string& s : {std::string(1, c), "ab" + std::string(1, c), std::string(1, c) + "cd",
                                 "ab" + std::string(1, c) + "cd", std::string(2, c), std::string(1, c) + '"' + c}) {
      INFO("byte " << b);
      CHECK(quote(s) == quoted_bytewise(s));
    }
  }
  // Runs of every length between escapes, and quote_into() appending.
  std::string s;
  for (int n = 0; n < 40; ++n) s += std::string(static_cast<std::size_t>(n), 'x') + (n % 3 == 0 ? "\n" : n % 3 == 1 ? "\"" : "\x01");
  CHECK(quote(s) == quoted_bytewise(s));
  std::string out = "prefix";
  nsrun::json::quote_into(out, s);
  CHECK(out == "prefix" + quoted_bytewise(s));
}
