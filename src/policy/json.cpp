#include "policy/json.hpp"

#include <array>
#include <charconv>
#include <iterator>
#include <optional>

#include <fmt/format.h>

namespace nsrun::json {

Value Value::array(Array items) {
  Value v;
  v.data_ = std::move(items);
  return v;
}

Value Value::object(Object members) {
  Value v;
  v.data_ = std::move(members);
  return v;
}

std::string_view Value::type_name() const {
  static constexpr std::string_view names[] = {"null", "boolean", "integer", "string", "array", "object"};
  return names[data_.index()];
}

Value& Value::set(std::string_view key, Value v) {
  if (Value* old = find(key)) return *old = std::move(v);
  return as_object().emplace_back(std::string(key), std::move(v)).second;
}

const Value* Value::find(std::string_view key) const {
  // A linear scan: policy objects have a handful of keys, and keeping them in
  // a vector is what preserves the order the user wrote.
  for (const auto& [k, v] : as_object())
    if (k == key) return &v;
  return nullptr;
}

Value* Value::find(std::string_view key) {
  return const_cast<Value*>(std::as_const(*this).find(key));
}

bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<Value> document() {
    // RFC 8259 lets a parser ignore a byte order mark; some editors write one.
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
    skip_space();
    auto v = value(0);
    if (!v) return v;
    skip_space();
    if (!at_end()) return error_at(pos_, fmt::format("unexpected {} after the value", got()));
    return v;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool next_is(char c) const { return !at_end() && peek() == c; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  // What sits at the current position, for "expected X, got Y".
  std::string got() const {
    if (at_end()) return "end of input";
    auto c = static_cast<unsigned char>(peek());
    if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02x}", c);
  }

  std::unexpected<Error> error_at(size_t pos, std::string_view why) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++column;  // UTF-8 continuation bytes do not start a new character
      }
    }
    return fail(usage_error("policy", fmt::format("line {} column {}: {}", line, column, why)));
  }

  std::unexpected<Error> expected(std::string_view what) const {
    return error_at(pos_, fmt::format("expected {}, got {}", what, got()));
  }

  Result<Value> value(int depth) {
    if (at_end()) return expected("a value");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': {
        auto s = string();
        if (!s) return fail(std::move(s.error()));
        return Value(std::move(*s));
      }
      case 't': return literal("true", Value(true));
      case 'f': return literal("false", Value(false));
      case 'n': return literal("null", Value(nullptr));
      default:
        if (peek() == '-' || is_digit(peek())) return number();
        return expected("a value");
    }
  }

  Result<Value> literal(std::string_view word, Value v) {
    if (!text_.substr(pos_).starts_with(word))
      return error_at(pos_, fmt::format("invalid literal (did you mean {}?)", word));
    pos_ += word.size();
    return v;
  }

  Result<Value> number() {
    size_t start = pos_;
    if (next_is('-')) ++pos_;
    if (at_end() || !is_digit(peek())) return error_at(start, "invalid number: '-' must be followed by a digit");
    if (peek() == '0' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))
      return error_at(start, "invalid number: leading zeros are not allowed");
    while (!at_end() && is_digit(peek())) ++pos_;
    if (next_is('.') || next_is('e') || next_is('E')) return error_at(start, "only integers are allowed");
    int64_t n = 0;
    auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, n);
    if (ec != std::errc{} || end != text_.data() + pos_)
      return error_at(start, "integer out of range (must fit in 64 bits, signed)");
    return Value(n);
  }

  std::optional<char32_t> hex4() {
    if (text_.size() - pos_ < 4) return std::nullopt;
    char32_t v = 0;
    for (char c : text_.substr(pos_, 4)) {
      v <<= 4;
      if (is_digit(c)) v |= static_cast<char32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<char32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<char32_t>(c - 'A' + 10);
      else return std::nullopt;
    }
    pos_ += 4;
    return v;
  }

  // After "\u" at `esc`. A character outside the BMP is written as a UTF-16
  // surrogate pair; a lone surrogate has no UTF-8 form, so it is an error.
  Result<char32_t> unicode_escape(size_t esc) {
    auto high = hex4();
    if (!high) return error_at(esc, "invalid \\u escape: expected 4 hex digits");
    if (*high >= 0xDC00 && *high <= 0xDFFF) return error_at(esc, "unpaired surrogate in \\u escape");
    if (*high < 0xD800 || *high > 0xDBFF) return *high;
    size_t esc2 = pos_;
    if (!text_.substr(pos_).starts_with("\\u")) return error_at(esc, "unpaired surrogate in \\u escape");
    pos_ += 2;
    auto low = hex4();
    if (!low) return error_at(esc2, "invalid \\u escape: expected 4 hex digits");
    if (*low < 0xDC00 || *low > 0xDFFF) return error_at(esc, "unpaired surrogate in \\u escape");
    return 0x10000 + ((*high - 0xD800) << 10) + (*low - 0xDC00);
  }

  Result<std::string> string() {
    size_t open = pos_++;
    std::string out;
    for (;;) {
      if (at_end()) return error_at(open, "unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return error_at(pos_, "control character in string (write it as an escape such as \\n)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      size_t esc = pos_++;
      if (at_end()) return error_at(open, "unterminated string");
      switch (text_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          auto cp = unicode_escape(esc);
          if (!cp) return fail(std::move(cp.error()));
          append_utf8(out, *cp);
          break;
        }
        default:
          --pos_;
          return error_at(esc, fmt::format("invalid escape: backslash followed by {}", got()));
      }
    }
  }

  std::unexpected<Error> too_deep() const {
    return error_at(pos_, fmt::format("nesting deeper than {} levels", max_depth));
  }

  // `depth` counts the containers around this one.
  Result<Value> array(int depth) {
    if (depth >= max_depth) return too_deep();
    ++pos_;
    Value result = Value::array();
    skip_space();
    if (next_is(']')) {
      ++pos_;
      return result;
    }
    for (;;) {
      skip_space();
      auto item = value(depth + 1);
      if (!item) return item;
      result.push_back(std::move(*item));
      skip_space();
      if (next_is(']')) {
        ++pos_;
        return result;
      }
      if (!next_is(',')) return expected("',' or ']'");
      size_t comma = pos_++;
      skip_space();
      if (next_is(']')) return error_at(comma, "trailing comma before ']'");
    }
  }

  Result<Value> object(int depth) {
    if (depth >= max_depth) return too_deep();
    ++pos_;
    Value result = Value::object();
    skip_space();
    if (next_is('}')) {
      ++pos_;
      return result;
    }
    for (;;) {
      skip_space();
      if (!next_is('"')) return expected("a string key");
      size_t key_pos = pos_;
      auto key = string();
      if (!key) return fail(std::move(key.error()));
      if (result.find(*key)) return error_at(key_pos, fmt::format("duplicate key {}", dump(Value(*key))));
      skip_space();
      if (!next_is(':')) return expected("':'");
      ++pos_;
      skip_space();
      auto member = value(depth + 1);
      if (!member) return member;
      result.as_object().emplace_back(std::move(*key), std::move(*member));
      skip_space();
      if (next_is('}')) {
        ++pos_;
        return result;
      }
      if (!next_is(',')) return expected("',' or '}'");
      size_t comma = pos_++;
      skip_space();
      if (next_is('}')) return error_at(comma, "trailing comma before '}'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

class Writer {
 public:
  explicit Writer(bool pretty) : pretty_(pretty) {}

  std::string take() { return std::move(out_); }

  void value(const Value& v, int level) {
    if (v.is_null()) {
      out_ += "null";
    } else if (v.is_bool()) {
      out_ += v.as_bool() ? "true" : "false";
    } else if (v.is_int()) {
      const fmt::format_int n(v.as_int());
      out_.append(n.data(), n.size());
    } else if (v.is_string()) {
      string(v.as_string());
    } else if (v.is_array()) {
      container('[', ']', v.as_array(), level, [&](const Value& item) { value(item, level + 1); });
    } else {
      container('{', '}', v.as_object(), level, [&](const auto& member) {
        string(member.first);
        out_ += pretty_ ? ": " : ":";
        value(member.second, level + 1);
      });
    }
  }

 private:
  template <class Items, class WriteOne>
  void container(char open, char close, const Items& items, int level, WriteOne write_one) {
    out_ += open;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += ',';
      newline(level + 1);
      write_one(items[i]);
    }
    if (!items.empty()) newline(level);
    out_ += close;
  }

  void newline(int level) {
    if (!pretty_) return;
    out_ += '\n';
    out_.append(2 * static_cast<size_t>(level), ' ');
  }

  void string(std::string_view s) { quote_into(out_, s); }

  bool pretty_;
  std::string out_;
};

}  // namespace

Result<Value> parse(std::string_view text) { return Parser(text).document(); }

namespace {

// The bytes a JSON string holds as they are: every byte from 0x20 up but
// '"' and '\\' (RFC 8259). Looked up, one load a byte where three
// compares were (every byte of the report passes here).
constexpr std::array<bool, 256> unescaped = [] {
  std::array<bool, 256> t{};
  for (std::size_t b = 0x20; b < t.size(); ++b) t[b] = b != '"' && b != '\\';
  return t;
}();

}  // namespace

void quote_into(std::string& out, std::string_view s) {
  out += '"';
  // Bytes that need no escape are copied a run at a time: one append per
  // run instead of one per byte (the report is mostly such runs).
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (unescaped[static_cast<unsigned char>(c)]) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

std::string quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  quote_into(out, s);
  return out;
}

std::string dump(const Value& v, bool pretty) {
  Writer w(pretty);
  w.value(v, 0);
  return w.take();
}

}  // namespace nsrun::json
