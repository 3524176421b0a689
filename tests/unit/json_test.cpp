#include "policy/json.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <catch2/catch_test_macros.hpp>

using nsrun::json::dump;
using nsrun::json::parse;
using nsrun::json::Value;

namespace {

// The detail of a parse error ("line L column C: reason"), or "ok".
std::string error_of(std::string_view text) {
  auto v = parse(text);
  if (v) return "ok";
  CHECK(v.error().step == "policy");
  CHECK(v.error().kind == nsrun::ErrorKind::usage);
  return v.error().detail;
}

Value parsed(std::string_view text) {
  auto v = parse(text);
  INFO(text);
  REQUIRE(v.has_value());
  return *v;
}

Value sample() {
  Value root = Value::object();
  root.set("mode", "workspace-write");
  root.set("network", false);
  root.set("size", int64_t{1} << 40);
  root.set("nothing", nullptr);
  Value binds = Value::array();
  binds.push_back("/usr");
  binds.push_back(Value::object({{"source", "/etc/ssl"}, {"dest", "/etc/ssl"}, {"optional", true}}));
  binds.push_back(Value::array());
  binds.push_back(Value::object());
  root.set("binds", std::move(binds));
  root.set("text", "tab\tquote\" backslash\\ nl\n bell\x07 utf8 \xC3\xA9\xE2\x82\xAC");
  return root;
}

}  // namespace

// Nothing converts to a boolean by accident.
static_assert(!std::is_constructible_v<Value, int*>);
static_assert(!std::is_constructible_v<Value, double>);
static_assert(!std::is_constructible_v<Value, char>);
static_assert(std::is_convertible_v<bool, Value> && std::is_convertible_v<unsigned short, Value>);

TEST_CASE("values are cheap to build and inspect", "[json]") {
  CHECK(Value().is_null());
  CHECK(Value(nullptr).type_name() == "null");
  CHECK(Value(true).type_name() == "boolean");
  CHECK(Value(7).as_int() == 7);
  CHECK(Value(7u).type_name() == "integer");
  CHECK(Value(uint64_t{1} << 40).as_int() == int64_t{1} << 40);
  CHECK(Value(-3L).as_int() == -3);
  CHECK(Value("s").type_name() == "string");
  CHECK(Value(std::string("s")).as_string() == "s");
  CHECK(Value(std::string_view("s")) == Value("s"));
  CHECK(Value::array().type_name() == "array");
  CHECK(Value::object().type_name() == "object");
  CHECK(Value(0) != Value(false));
  CHECK(Value(0) != Value(nullptr));

  Value obj = Value::object();
  obj.set("a", 1);
  obj.set("b", 2);
  obj.set("a", "replaced");  // in place: order is kept
  REQUIRE(obj.as_object().size() == 2);
  CHECK(obj.as_object()[0].first == "a");
  CHECK(obj.as_object()[0].second == Value("replaced"));
  REQUIRE(obj.find("b") != nullptr);
  CHECK(obj.find("b")->as_int() == 2);
  CHECK(obj.find("c") == nullptr);
  *obj.find("b") = Value::array({1, 2});
  CHECK(obj.find("b")->as_array().size() == 2);

  // Order is part of the value.
  CHECK(Value::object({{"a", 1}, {"b", 2}}) != Value::object({{"b", 2}, {"a", 1}}));
}

TEST_CASE("dump then parse gives back the same value", "[json]") {
  Value v = sample();
  CHECK(parsed(dump(v)) == v);
  CHECK(parsed(dump(v, false)) == v);
  for (Value scalar : {Value(), Value(true), Value(false), Value(0), Value(-1), Value(""), Value("x")})
    CHECK(parsed(dump(scalar)) == scalar);
}

TEST_CASE("parse then dump is stable", "[json]") {
  std::string text = R"({"a": [1, 2, {"b": null}], "c": "d\u00e9", "e": {}, "f": []})";
  std::string once = dump(parsed(text), false);
  CHECK(once == R"({"a":[1,2,{"b":null}],"c":"d)" "\xC3\xA9" R"(","e":{},"f":[]})");
  CHECK(dump(parsed(once), false) == once);
}

TEST_CASE("bytes that are not UTF-8 survive a round trip", "[json]") {
  Value v("/srv/caf\xE9");  // a Latin-1 file name is still a valid Linux path
  CHECK(parsed(dump(v)) == v);
}

TEST_CASE("pretty dump is exact", "[json]") {
  Value v = Value::object();
  v.set("name", "a\"b");
  v.set("ids", Value::array({1, -2}));
  v.set("empty_list", Value::array());
  v.set("empty_map", Value::object());
  v.set("nested", Value::object({{"on", true}, {"off", nullptr}}));
  CHECK(dump(v) ==
        "{\n"
        "  \"name\": \"a\\\"b\",\n"
        "  \"ids\": [\n"
        "    1,\n"
        "    -2\n"
        "  ],\n"
        "  \"empty_list\": [],\n"
        "  \"empty_map\": {},\n"
        "  \"nested\": {\n"
        "    \"on\": true,\n"
        "    \"off\": null\n"
        "  }\n"
        "}");
  CHECK(dump(v, false) ==
        R"({"name":"a\"b","ids":[1,-2],"empty_list":[],"empty_map":{},"nested":{"on":true,"off":null}})");
  CHECK(dump(Value::array()) == "[]");
  CHECK(dump(Value(42)) == "42");
}

TEST_CASE("dump escapes quotes, backslashes and control characters only", "[json]") {
  CHECK(dump(Value("\"\\\n\t\r\b\f")) == R"("\"\\\n\t\r\b\f")");
  CHECK(dump(Value(std::string("\x01\x1f\0x", 4))) == R"("\u0001\u001f\u0000x")");
  CHECK(dump(Value("/a/b \x7f \xC3\xA9 \xF0\x9F\x98\x80")) == "\"/a/b \x7f \xC3\xA9 \xF0\x9F\x98\x80\"");
}

TEST_CASE("string escapes are decoded", "[json]") {
  CHECK(parsed(R"("\"\\\/\b\f\n\r\t")") == Value("\"\\/\b\f\n\r\t"));
  CHECK(parsed(R"("\u0041\u00e9\u20AC")") == Value("A\xC3\xA9\xE2\x82\xAC"));
  CHECK(parsed(R"("\u0000")") == Value(std::string(1, '\0')));
  // U+1F600 as a surrogate pair, and the highest code point.
  CHECK(parsed(R"("\ud83d\ude00")") == Value("\xF0\x9F\x98\x80"));
  CHECK(parsed(R"("\uDBFF\uDFFF")") == Value("\xF4\x8F\xBF\xBF"));
  // Raw UTF-8 passes through.
  CHECK(parsed("\"\xC3\xA9\"") == Value("\xC3\xA9"));
}

TEST_CASE("bad escapes are rejected with their position", "[json]") {
  CHECK(error_of(R"(["\x"])") == "line 1 column 3: invalid escape: backslash followed by 'x'");
  CHECK(error_of(R"("\u12g4")") == "line 1 column 2: invalid \\u escape: expected 4 hex digits");
  CHECK(error_of(R"("\u12")") == "line 1 column 2: invalid \\u escape: expected 4 hex digits");
  CHECK(error_of(R"("\ud83d")") == "line 1 column 2: unpaired surrogate in \\u escape");
  CHECK(error_of(R"("\ud83dx")") == "line 1 column 2: unpaired surrogate in \\u escape");
  CHECK(error_of(R"("\ud83d\u0041")") == "line 1 column 2: unpaired surrogate in \\u escape");
  CHECK(error_of(R"("ab\ude00")") == "line 1 column 4: unpaired surrogate in \\u escape");
  CHECK(error_of(R"("\ud83d\uzzzz")") == "line 1 column 8: invalid \\u escape: expected 4 hex digits");
}

TEST_CASE("strings must be terminated and free of raw control characters", "[json]") {
  CHECK(error_of("\"abc") == "line 1 column 1: unterminated string");
  CHECK(error_of("[\"abc\\") == "line 1 column 2: unterminated string");
  CHECK(error_of("\"a\nb\"") ==
        "line 1 column 3: control character in string (write it as an escape such as \\n)");
  CHECK(error_of("\"a\tb\"") ==
        "line 1 column 3: control character in string (write it as an escape such as \\n)");
}

TEST_CASE("integers use the full int64 range and nothing else", "[json]") {
  constexpr auto max = std::numeric_limits<int64_t>::max();
  constexpr auto min = std::numeric_limits<int64_t>::min();
  CHECK(parsed("9223372036854775807").as_int() == max);
  CHECK(parsed("-9223372036854775808").as_int() == min);
  CHECK(parsed(dump(Value(min))).as_int() == min);
  CHECK(parsed("0").as_int() == 0);
  CHECK(parsed("-0").as_int() == 0);
  CHECK(parsed(" [ -12 ] ").as_array()[0].as_int() == -12);

  const std::string range = "integer out of range (must fit in 64 bits, signed)";
  CHECK(error_of("9223372036854775808") == "line 1 column 1: " + range);
  CHECK(error_of("[-9223372036854775809]") == "line 1 column 2: " + range);
  CHECK(error_of("99999999999999999999999") == "line 1 column 1: " + range);

  CHECK(error_of("1.5") == "line 1 column 1: only integers are allowed");
  CHECK(error_of("[0, 1e3]") == "line 1 column 5: only integers are allowed");
  CHECK(error_of("2E1") == "line 1 column 1: only integers are allowed");
  CHECK(error_of("01") == "line 1 column 1: invalid number: leading zeros are not allowed");
  CHECK(error_of("-") == "line 1 column 1: invalid number: '-' must be followed by a digit");
  CHECK(error_of("-x") == "line 1 column 1: invalid number: '-' must be followed by a digit");
  CHECK(error_of("+1") == "line 1 column 1: expected a value, got '+'");
}

TEST_CASE("duplicate keys are rejected", "[json]") {
  CHECK(error_of("{\"a\": 1,\n \"b\": 2,\n  \"a\": 3}") == "line 3 column 3: duplicate key \"a\"");
  CHECK(error_of(R"({"x\n": 1, "x\u000a": 2})") == "line 1 column 12: duplicate key \"x\\n\"");
  // The same key in different objects is fine.
  CHECK(error_of(R"({"a": {"a": 1}, "b": {"a": 2}})") == "ok");
}

TEST_CASE("nesting is limited to 64 levels", "[json]") {
  auto nested = [](int depth, char open, char close) {
    return std::string(static_cast<size_t>(depth), open) + std::string(static_cast<size_t>(depth), close);
  };
  CHECK(error_of(nested(64, '[', ']')) == "ok");
  CHECK(error_of(nested(65, '[', ']')) == "line 1 column 65: nesting deeper than 64 levels");

  std::string objects;
  for (int i = 0; i < 64; ++i) objects += "{\"k\":";
  CHECK(error_of(objects + "1" + std::string(64, '}')) == "ok");
  CHECK(error_of(objects + "[]" + std::string(64, '}')) == "line 1 column 321: nesting deeper than 64 levels");
}

TEST_CASE("syntax errors name the line, the column and the reason", "[json]") {
  CHECK(error_of("") == "line 1 column 1: expected a value, got end of input");
  CHECK(error_of("  \n ") == "line 2 column 2: expected a value, got end of input");
  CHECK(error_of("{} x") == "line 1 column 4: unexpected 'x' after the value");
  CHECK(error_of("1 2") == "line 1 column 3: unexpected '2' after the value");
  CHECK(error_of("{\"a\" 1}") == "line 1 column 6: expected ':', got '1'");
  CHECK(error_of("{\"a\": 1 \"b\": 2}") == "line 1 column 9: expected ',' or '}', got '\"'");
  CHECK(error_of("[1 2]") == "line 1 column 4: expected ',' or ']', got '2'");
  CHECK(error_of("[1,\n 2,\n]") == "line 2 column 3: trailing comma before ']'");
  CHECK(error_of("{\"a\": 1,}") == "line 1 column 8: trailing comma before '}'");
  CHECK(error_of("{a: 1}") == "line 1 column 2: expected a string key, got 'a'");
  CHECK(error_of("{,}") == "line 1 column 2: expected a string key, got ','");
  CHECK(error_of("[,1]") == "line 1 column 2: expected a value, got ','");
  CHECK(error_of("{\"a\": }") == "line 1 column 7: expected a value, got '}'");
  CHECK(error_of("[1, 2") == "line 1 column 6: expected ',' or ']', got end of input");
  CHECK(error_of("{\"a\":") == "line 1 column 6: expected a value, got end of input");
  CHECK(error_of("[tru]") == "line 1 column 2: invalid literal (did you mean true?)");
  CHECK(error_of("nul") == "line 1 column 1: invalid literal (did you mean null?)");
  CHECK(error_of("True") == "line 1 column 1: expected a value, got 'T'");
  CHECK(error_of("[\x01]") == "line 1 column 2: expected a value, got byte 0x01");
  // Columns count characters, not bytes.
  CHECK(error_of("[\"\xC3\xA9\xE2\x82\xAC\", x]") == "line 1 column 8: expected a value, got 'x'");
  // Whitespace is only space, tab, CR and LF.
  CHECK(error_of("\f1") == "line 1 column 1: expected a value, got byte 0x0c");
  CHECK(error_of("\r\n\t 1 \r\n") == "ok");
}

TEST_CASE("a leading byte order mark is ignored", "[json]") {
  CHECK(parsed("\xEF\xBB\xBF{\"a\": 1}") == Value::object({{"a", 1}}));
}

TEST_CASE("error messages read as one line", "[json]") {
  auto v = parse("[1,]");
  REQUIRE_FALSE(v);
  CHECK(v.error().message() == "policy: line 1 column 3: trailing comma before ']'");
}
