// A small JSON reader and writer for policy files. Only what a policy needs:
// integers (no floating point, so a size or a mode never silently rounds),
// objects that keep their order (so `nsrun explain` and a dumped policy read
// in the order the user wrote them), and error messages with a line and a
// column. Bad input never throws: parse() returns an Error.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sys/error.hpp"

namespace nsrun::json {

struct Value {
  using Array = std::vector<Value>;
  using Object = std::vector<std::pair<std::string, Value>>;

  Value() = default;
  Value(std::nullptr_t) {}
  // A template so that nothing converts to bool on the way in: a pointer, a
  // double or a char does not compile instead of becoming `true`.
  template <std::same_as<bool> B>
  Value(B b) : data_(b) {}
  // Any integer type but the character types (a char is almost always meant
  // as a one-character string). Unsigned values above INT64_MAX wrap.
  template <std::integral T>
    requires(!std::same_as<T, bool> && !std::same_as<T, char> && !std::same_as<T, wchar_t> &&
             !std::same_as<T, char8_t> && !std::same_as<T, char16_t> && !std::same_as<T, char32_t>)
  Value(T n) : data_(static_cast<int64_t>(n)) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(const char* s) : data_(std::string(s)) {}

  static Value array(Array items = {});
  static Value object(Object members = {});

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_array() const { return std::holds_alternative<Array>(data_); }
  bool is_object() const { return std::holds_alternative<Object>(data_); }

  // "null", "boolean", "integer", "string", "array" or "object", for messages
  // such as "expected string, got integer".
  std::string_view type_name() const;

  // Asking for the wrong type is a bug in the caller, not bad input: check
  // is_*() first. std::get throws std::bad_variant_access on a mismatch.
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  std::string& as_string() { return std::get<std::string>(data_); }
  const Array& as_array() const { return std::get<Array>(data_); }
  Array& as_array() { return std::get<Array>(data_); }
  const Object& as_object() const { return std::get<Object>(data_); }
  Object& as_object() { return std::get<Object>(data_); }

  // Arrays only.
  void push_back(Value v) { as_array().push_back(std::move(v)); }
  // Objects only: replaces the value of an existing key in place (keeping its
  // position) or appends a new member. Returns the stored value.
  Value& set(std::string_view key, Value v);
  // Objects only: the value of `key`, or nullptr.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);

  // Structural equality; object members compare in order, since order is
  // part of what a Value records.
  friend bool operator==(const Value& a, const Value& b);

 private:
  std::variant<std::nullptr_t, bool, int64_t, std::string, Array, Object> data_;
};

// Maximum nesting of arrays and objects accepted by parse(); a policy needs a
// handful, and the limit keeps the recursive parser's stack use bounded.
inline constexpr int max_depth = 64;

// RFC 8259 JSON, except that numbers must be integers that fit in int64.
// Strings are byte strings: \u escapes (with surrogate pairs) become UTF-8,
// other bytes pass through unchanged, so a non-UTF-8 path survives a round
// trip. Errors are usage_error("policy", "line L column C: reason"); columns
// count characters, from 1. The caller may fill Error::path with the file.
Result<Value> parse(std::string_view text);

// pretty: two-space indent, one element per line, "key": value, and [] / {}
// for empty containers. Otherwise the most compact form. No trailing newline.
// parse(dump(v)) == v for every Value.
std::string dump(const Value& v, bool pretty = true);

// One string as a JSON string literal, quotes included (for writers that
// build documents by hand, e.g. with fractional numbers).
std::string quote(std::string_view s);
// The same, appended to `out`.
void quote_into(std::string& out, std::string_view s);

}  // namespace nsrun::json
