// git's binary patch pieces (src/layers/gitbin.hpp): SHA-1 against the
// FIPS 180 examples, blob ids against git's well-known ones, the zlib
// stream's framing and checksum by hand, the base85 lines decoded back.
#include "layers/gitbin.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>

using namespace nsrun::layers;

namespace {

std::string hex(const std::array<uint8_t, 20>& d) {
  std::string out;
  for (uint8_t b : d) {
    out += "0123456789abcdef"[b >> 4];
    out += "0123456789abcdef"[b & 15];
  }
  return out;
}

// The bytes of one literal hunk's lines, decoded as git's base85.c does.
std::string decode_lines(const std::string& hunk) {
  constexpr std::string_view alphabet =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
  std::string out;
  std::size_t at = hunk.find('\n') + 1;  // past "literal N"
  while (at < hunk.size() && hunk[at] != '\n') {
    const std::size_t end = hunk.find('\n', at);
    const char c = hunk[at];
    const std::size_t n = c <= 'Z' ? std::size_t(c - 'A' + 1) : std::size_t(c - 'a' + 27);
    REQUIRE(end - at - 1 == (n + 3) / 4 * 5);
    std::string bytes;
    for (std::size_t g = at + 1; g < end; g += 5) {
      uint64_t v = 0;
      for (std::size_t i = 0; i < 5; ++i) v = v * 85 + alphabet.find(hunk[g + i]);
      for (int i = 3; i >= 0; --i) bytes += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    out += bytes.substr(0, n);
    at = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("gitbin: SHA-1 and git blob ids", "[gitbin]") {
  CHECK(hex(sha1("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(hex(sha1(std::string(1000000, 'a'))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // 55 and 56 bytes: the length fits in the last block, or needs another.
  CHECK(hex(sha1(std::string(55, 'a'))) == "c1c8bbdc22796e28c0e15163d20899b65621d65a");
  CHECK(hex(sha1(std::string(56, 'a'))) == "c2db330f6083854c99d4b5bfb6e8f29f201be699");
  CHECK(git_blob_id("") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  CHECK(git_blob_id("hello world\n") == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
}

TEST_CASE("gitbin: zlib streams of stored blocks", "[gitbin]") {
  CHECK(zlib_stored("") == std::string("\x78\x01\x01\x00\x00\xff\xff\x00\x00\x00\x01", 11));
  // "abc": one final block, adler32 0x024d0127.
  CHECK(zlib_stored("abc") == std::string("\x78\x01\x01\x03\x00\xfc\xff" "abc" "\x02\x4d\x01\x27", 14));
  // 65535 bytes to a block: 65536 take two, the first not final.
  const std::string z = zlib_stored(std::string(65536, '\0'));
  REQUIRE(z.size() == 2 + 5 + 65535 + 5 + 1 + 4);
  CHECK(z.substr(2, 5) == std::string("\x00\xff\xff\x00\x00", 5));
  CHECK(z.substr(2 + 5 + 65535, 5) == std::string("\x01\x01\x00\xfe\xff", 5));
}

TEST_CASE("gitbin: literal hunks decode back to the zlib stream", "[gitbin]") {
  for (std::size_t size : {0, 1, 5, 41, 47, 48, 100, 70000}) {
    std::string data;
    for (std::size_t i = 0; i < size; ++i) data += static_cast<char>(i * 7 + 3);
    const std::string hunk = git_binary_literal(data);
    CHECK(hunk.starts_with("literal " + std::to_string(size) + "\n"));
    CHECK(hunk.ends_with("\n\n"));
    CHECK(decode_lines(hunk) == zlib_stored(data));
  }
}
