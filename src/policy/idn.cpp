#include "policy/idn.hpp"

#include <cstdint>
#include <limits>

namespace nsrun::idn {

namespace {

constexpr uint32_t base = 36, tmin = 1, tmax = 26, skew = 38, damp = 700, initial_bias = 72, initial_n = 128;
constexpr uint32_t max_int = std::numeric_limits<uint32_t>::max();
constexpr std::string_view ace_prefix = "xn--";

// RFC 3492 section 6.1.
uint32_t adapt(uint32_t delta, uint32_t points, bool first) {
  delta = first ? delta / damp : delta / 2;
  delta += delta / points;
  uint32_t k = 0;
  while (delta > ((base - tmin) * tmax) / 2) {
    delta /= base - tmin;
    k += base;
  }
  return k + (base - tmin + 1) * delta / (delta + skew);
}

uint32_t threshold(uint32_t k, uint32_t bias) { return k <= bias ? tmin : k >= bias + tmax ? tmax : k - bias; }

char digit_char(uint32_t d) { return static_cast<char>(d < 26 ? 'a' + d : '0' + (d - 26)); }

std::optional<uint32_t> digit_value(char c) {
  if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a');
  if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
  if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 26);
  return std::nullopt;
}

// Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF.
std::optional<std::u32string> decode_utf8(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    char32_t c = 0, min = 0;
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    if ((b0 & 0xe0) == 0xc0) n = 1, c = b0 & 0x1f, min = 0x80;
    else if ((b0 & 0xf0) == 0xe0) n = 2, c = b0 & 0x0f, min = 0x800;
    else if ((b0 & 0xf8) == 0xf0) n = 3, c = b0 & 0x07, min = 0x10000;
    else return std::nullopt;
    if (i + n >= s.size()) return std::nullopt;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return std::nullopt;
      c = (c << 6) | (b & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return std::nullopt;
    out.push_back(c);
    i += n + 1;
  }
  return out;
}

}  // namespace

std::optional<std::string> punycode_encode(std::u32string_view input) {
  std::string out;
  for (char32_t c : input)
    if (c < 0x80) out.push_back(static_cast<char>(c));
  const uint32_t b = static_cast<uint32_t>(out.size());
  uint32_t h = b;
  if (b > 0) out.push_back('-');
  uint32_t n = initial_n, delta = 0, bias = initial_bias;
  while (h < input.size()) {
    uint32_t m = max_int;
    for (char32_t c : input)
      if (c >= n && c < m) m = c;
    if ((m - n) > (max_int - delta) / (h + 1)) return std::nullopt;
    delta += (m - n) * (h + 1);
    n = m;
    for (char32_t c : input) {
      if (c < n && ++delta == 0) return std::nullopt;
      if (c == n) {
        uint32_t q = delta;
        for (uint32_t k = base;; k += base) {
          const uint32_t t = threshold(k, bias);
          if (q < t) break;
          out.push_back(digit_char(t + (q - t) % (base - t)));
          q = (q - t) / (base - t);
        }
        out.push_back(digit_char(q));
        bias = adapt(delta, h + 1, h == b);
        delta = 0;
        ++h;
      }
    }
    ++delta;
    ++n;
  }
  return out;
}

std::optional<std::u32string> punycode_decode(std::string_view input) {
  std::u32string out;
  const std::size_t delim = input.rfind('-');
  std::size_t in = 0;
  if (delim != std::string_view::npos && delim > 0) {
    for (std::size_t j = 0; j < delim; ++j) {
      if (static_cast<unsigned char>(input[j]) >= 0x80) return std::nullopt;
      out.push_back(static_cast<unsigned char>(input[j]));
    }
    in = delim + 1;
  }
  uint32_t n = initial_n, i = 0, bias = initial_bias;
  while (in < input.size()) {
    const uint32_t old_i = i;
    uint32_t w = 1;
    for (uint32_t k = base;; k += base) {
      if (in >= input.size()) return std::nullopt;
      const auto digit = digit_value(input[in++]);
      if (!digit) return std::nullopt;
      if (*digit > (max_int - i) / w) return std::nullopt;
      i += *digit * w;
      const uint32_t t = threshold(k, bias);
      if (*digit < t) break;
      if (w > max_int / (base - t)) return std::nullopt;
      w *= base - t;
    }
    const auto length = static_cast<uint32_t>(out.size() + 1);
    bias = adapt(i - old_i, length, old_i == 0);
    if (i / length > max_int - n) return std::nullopt;
    n += i / length;
    i %= length;
    if (n < 0x80 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return std::nullopt;
    // A label is at most 63 bytes: far fewer code points than this.
    if (out.size() >= 256) return std::nullopt;
    out.insert(out.begin() + i, static_cast<char32_t>(n));
    ++i;
  }
  return out;
}

bool accepted_code_point(char32_t c) {
  return (c >= 0xdf && c <= 0xff && c != 0xf7) || (c >= 0x3ac && c <= 0x3ce) || (c >= 0x430 && c <= 0x45f) ||
         (c >= 0x3041 && c <= 0x3096) || (c >= 0x30a1 && c <= 0x30fa) || (c >= 0x4e00 && c <= 0x9fff) ||
         (c >= 0xac00 && c <= 0xd7a3);
}

std::expected<std::string, std::string> to_ascii(std::string_view name) {
  std::string out;
  while (true) {
    const std::size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    bool ascii = true;
    for (char c : label) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii && label.starts_with(ace_prefix)) {
      // An ASCII-compatible label is taken only when it is what nsrun
      // would write for a name it accepts: decoded, every code point
      // accepted, at least one outside ASCII, and encoded back the same.
      auto points = punycode_decode(label.substr(ace_prefix.size()));
      if (!points) return std::unexpected("'" + std::string(label) + "' is not valid Punycode");
      bool wide = false;
      for (char32_t c : *points) {
        if (c >= 0x80 && !accepted_code_point(c))
          return std::unexpected("'" + std::string(label) + "' stands for a character nsrun cannot check without IDNA tables");
        if (c < 0x80 && c >= 'A' && c <= 'Z') return std::unexpected("'" + std::string(label) + "' hides an upper-case letter");
        wide = wide || c >= 0x80;
      }
      auto again = punycode_encode(*points);
      if (!wide || !again || *again != label.substr(ace_prefix.size()))
        return std::unexpected("'" + std::string(label) + "' is not in the form nsrun writes");
      out += label;
    } else if (ascii) {
      out += label;
    } else {
      auto points = decode_utf8(label);
      if (!points) return std::unexpected("not valid UTF-8");
      for (char32_t c : *points)
        if (c >= 0x80 && !accepted_code_point(c))
          return std::unexpected("a character that needs IDNA mapping nsrun cannot do (upper case, another script, a "
                                 "combining mark or a symbol): write the xn-- form");
      auto encoded = punycode_encode(*points);
      if (!encoded) return std::unexpected("label too long");
      out += ace_prefix;
      out += *encoded;
    }
    if (dot == std::string_view::npos) break;
    out.push_back('.');
    name.remove_prefix(dot + 1);
  }
  return out;
}

}  // namespace nsrun::idn
