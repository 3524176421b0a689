#include "layers/gitbin.hpp"

#include <fmt/core.h>

namespace nsrun::layers {

namespace {

uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void sha1_block(std::array<uint32_t, 5>& h, const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5a827999;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ed9eba1;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
    else f = b ^ c ^ d, k = 0xca62c1d6;
    const uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rotl(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

// git's base85 alphabet (base85.c), not Ascii85's.
constexpr std::string_view alphabet =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

}  // namespace

std::array<uint8_t, 20> sha1(std::string_view data) {
  std::array<uint32_t, 5> h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  std::size_t n = data.size();
  for (; n >= 64; n -= 64, p += 64) sha1_block(h, p);
  // The tail, a 1 bit, zeros, and the length in bits (big-endian).
  uint8_t last[128] = {};
  for (std::size_t i = 0; i < n; ++i) last[i] = p[i];
  last[n] = 0x80;
  const std::size_t blocks = n + 9 > 64 ? 2 : 1;
  const uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) last[blocks * 64 - 1 - i] = uint8_t(bits >> (8 * i));
  for (std::size_t b = 0; b < blocks; ++b) sha1_block(h, last + 64 * b);
  std::array<uint8_t, 20> out{};
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h[i] >> (24 - 8 * j));
  return out;
}

std::string git_blob_id(std::string_view data) {
  std::string object = fmt::format("blob {}", data.size());
  object += '\0';
  object += data;
  std::string hex;
  for (uint8_t b : sha1(object)) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string zlib_stored(std::string_view data) {
  // CMF 0x78 (deflate, 32K window), FLG 0x01: 0x7801 is a multiple of 31.
  std::string out = "\x78\x01";
  std::size_t at = 0;
  do {
    const std::size_t len = std::min<std::size_t>(data.size() - at, 65535);
    const bool final = at + len == data.size();
    // A stored block: BFINAL, BTYPE 00, then LEN and ~LEN (little-endian).
    out += static_cast<char>(final ? 1 : 0);
    out += static_cast<char>(len & 0xff);
    out += static_cast<char>(len >> 8);
    out += static_cast<char>(~len & 0xff);
    out += static_cast<char>((~len >> 8) & 0xff);
    out.append(data.substr(at, len));
    at += len;
  } while (at < data.size());
  // Adler-32 of the data, big-endian.
  uint32_t a = 1, b = 0;
  for (unsigned char c : data) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  const uint32_t sum = b << 16 | a;
  for (int i = 3; i >= 0; --i) out += static_cast<char>((sum >> (8 * i)) & 0xff);
  return out;
}

std::string git_binary_literal(std::string_view data) {
  const std::string z = zlib_stored(data);
  std::string out = fmt::format("literal {}\n", data.size());
  for (std::size_t at = 0; at < z.size(); at += 52) {
    const std::size_t n = std::min<std::size_t>(z.size() - at, 52);
    // The line's byte count: A-Z for 1-26, a-z for 27-52.
    out += static_cast<char>(n <= 26 ? 'A' + n - 1 : 'a' + n - 27);
    for (std::size_t g = 0; g < n; g += 4) {
      uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i)
        v = v << 8 | (g + i < n ? static_cast<unsigned char>(z[at + g + i]) : 0u);
      char digits[5];
      for (int i = 4; i >= 0; --i) digits[i] = alphabet[v % 85], v /= 85;
      out.append(digits, 5);
    }
    out += '\n';
  }
  return out + "\n";
}

}  // namespace nsrun::layers
