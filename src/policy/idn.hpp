// Internationalised host names for the egress rules: a name
// written in Unicode in a rule (`bücher.example`) and its ASCII form in a
// request (`xn--bcher-kva.example`) must match, and the other way round.
// Both are brought to the ASCII form: each non-ASCII label is encoded with
// Punycode (RFC 3492) behind `xn--`, and each `xn--` label is decoded and
// checked as if it had been written in Unicode.
//
// Full IDNA2008 (RFC 5891-5893) and UTS #46 need Unicode's tables: NFC,
// case folding beyond ASCII, the derived property of every code point,
// the bidi and joiner rules. nsrun carries none of them, so it accepts
// only code points for which no mapping or context rule can apply and
// which are already in NFC: the lower-case letters of Latin-1 (U+00DF to
// U+00FF but U+00F7), lower-case Greek (U+03AC to U+03CE), lower-case
// Cyrillic (U+0430 to U+045F), Hiragana (U+3041 to U+3096), Katakana
// (U+30A1 to U+30FA), CJK unified ideographs (U+4E00 to U+9FFF) and Hangul
// syllables (U+AC00 to U+D7A3). Anything else outside ASCII (upper case,
// combining marks, other scripts, symbols, full-width dots, invalid UTF-8)
// is refused: it would need a mapping nsrun cannot do, and a name matched
// without it could differ from the one the resolver and the server see.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace nsrun::idn {

// RFC 3492 with its parameters for IDNA (base 36, tmin 1, tmax 26, skew
// 38, damp 700, initial bias 72, initial n 128), digits in lower case.
// Encoding fails only on overflow; decoding fails on any malformed input.
std::optional<std::string> punycode_encode(std::u32string_view code_points);
std::optional<std::u32string> punycode_decode(std::string_view text);

// Whether nsrun can accept this non-ASCII code point (the list above).
bool accepted_code_point(char32_t c);

// `name` (ASCII letters already in lower case, no trailing dot) with every
// label in its ASCII form; fails, with why, on a label it cannot accept.
// The ASCII labels are left to the caller's checks.
std::expected<std::string, std::string> to_ascii(std::string_view name);

}  // namespace nsrun::idn
