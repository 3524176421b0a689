// git's binary patch ("GIT binary patch", docs: gitformat-diff / apply.c's
// parse_binary): a file's whole contents as a "literal" hunk, a zlib stream
// written out in base85, 52 bytes a line. git apply takes one only with a
// full index line (both blob ids), and checks the file it patches against
// the old id and the result against the new one, so a binary patch applies
// exactly to the bytes it was made from or not at all.
//
// No compression library: the zlib stream is made of stored (uncompressed)
// deflate blocks (RFC 1950 / 1951 allow it; every inflater reads it), so a
// patch is about 1.25x the file. Pure functions, unit-tested.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace nsrun::layers {

// SHA-1 of `data` (FIPS 180-4): git's object ids (a repository with the
// default object format).
std::array<uint8_t, 20> sha1(std::string_view data);

// git's blob id of `data`: sha1("blob <size>\0<data>"), 40 hex digits.
std::string git_blob_id(std::string_view data);

// A zlib stream (RFC 1950) of `data` in stored deflate blocks.
std::string zlib_stored(std::string_view data);

// One "literal <size>" hunk of `data`, its lines and the empty line that
// ends it.
std::string git_binary_literal(std::string_view data);

}  // namespace nsrun::layers
