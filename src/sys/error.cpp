#include "sys/error.hpp"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace nsrun {

std::string Error::message() const {
  std::string head = step;
  if (!path.empty()) {
    head += ' ';
    head += path;
  }
  if (!detail.empty() && err != 0) return fmt::format("{}: {}: {}", head, detail, std::strerror(err));
  if (!detail.empty()) return fmt::format("{}: {}", head, detail);
  if (err != 0) return fmt::format("{}: {}", head, std::strerror(err));
  return head;
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
