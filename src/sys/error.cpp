#include "sys/error.hpp"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace nsrun {

namespace {

constexpr std::string_view ellipsis = "\u2026";

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

void escape_into(std::string& out, std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7F) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += fmt::format("\\x{:02x}", u);
    }
  }
}

// The first `n` bytes of `s`, not ending inside a UTF-8 sequence.
std::string_view head_of(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s;
  while (n > 0 && continuation(s[n])) --n;
  return s.substr(0, n);
}

// The last `n` bytes of `s`, not starting inside a UTF-8 sequence.
std::string_view tail_of(std::string_view s, std::size_t n) {
  if (n >= s.size()) return s;
  std::size_t from = s.size() - n;
  while (from < s.size() && continuation(s[from])) ++from;
  return s.substr(from);
}

std::string cut(std::string_view s, std::size_t max) {
  if (s.size() <= max) return std::string(s);
  const std::size_t keep = max > ellipsis.size() ? max - ellipsis.size() : 0;
  std::string out(head_of(s, keep));
  out += ellipsis;
  return out;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max) {
  std::string out;
  if (text.size() <= max) {
    escape_into(out, text);
    if (out.size() <= max) return out;
    out.clear();
  }
  // Escaping may grow a byte to four: cut first, on the raw text, so an
  // escape is never split.
  const std::size_t half = max / 8;
  escape_into(out, head_of(text, half));
  out += ellipsis;
  escape_into(out, tail_of(text, half));
  return out;
}

Error bounded(const Error& e, std::size_t max) {
  Error out = e;
  out.step = cut(e.step, max);
  out.path = cut(e.path, max);
  out.detail = cut(e.detail, max);
  return out;
}

std::string Error::message() const {
  std::string head = step;
  if (!path.empty()) {
    head += ' ';
    head += path;
  }
  if (!detail.empty() && err != 0) return printable(fmt::format("{}: {}: {}", head, detail, std::strerror(err)));
  if (!detail.empty()) return printable(fmt::format("{}: {}", head, detail));
  if (err != 0) return printable(fmt::format("{}: {}", head, std::strerror(err)));
  return printable(head);
}

int Error::exit_code() const {
  switch (kind) {
    case ErrorKind::not_found: return 127;
    case ErrorKind::not_exec: return 126;
    case ErrorKind::setup:
    case ErrorKind::usage: break;
  }
  return 125;
}

Error sys_error(std::string_view step, std::string_view path, int err) {
  return Error{std::string(step), err, std::string(path), {}, ErrorKind::setup};
}

Error usage_error(std::string_view what, std::string_view why) {
  return Error{std::string(what), 0, {}, std::string(why), ErrorKind::usage};
}

// Wire format: kind (1 byte), errno (4 bytes), then three length-prefixed
// strings. Fixed-width little-endian-as-host: both ends are the same binary.
namespace {
void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
bool get_u32(std::string_view& in, uint32_t& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}
bool get_str(std::string_view& in, std::string& s) {
  uint32_t n = 0;
  if (!get_u32(in, n) || in.size() < n) return false;
  s.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}
}  // namespace

std::string encode(const Error& e) {
  std::string out;
  out.push_back(static_cast<char>(e.kind));
  put_u32(out, static_cast<uint32_t>(e.err));
  put_str(out, e.step);
  put_str(out, e.path);
  put_str(out, e.detail);
  return out;
}

Result<Error> decode_error(std::string_view in) {
  Error e;
  uint32_t err = 0;
  if (in.empty()) return fail(Error{"channel", 0, {}, "empty error message"});
  e.kind = static_cast<ErrorKind>(in.front());
  in.remove_prefix(1);
  if (!get_u32(in, err) || !get_str(in, e.step) || !get_str(in, e.path) || !get_str(in, e.detail))
    return fail(Error{"channel", 0, {}, "truncated error message"});
  e.err = static_cast<int>(err);
  return e;
}

}  // namespace nsrun
