#include "report_schema.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

// No harness here: the unit tests link this too.

namespace nsrun_test {

namespace {

std::string joined(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? std::string(sep) : std::string()) + parts[i];
  return out;
}

bool json_type_is(const nsrun::json::Value& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_int();
  if (type == "boolean") return v.is_bool();
  if (type == "null") return v.is_null();
  return false;
}

void check_schema(const nsrun::json::Value& schema, const nsrun::json::Value& v, const std::string& where,
                         std::vector<std::string>& errors) {
  using nsrun::json::Value;
  if (const Value* any = schema.find("anyOf")) {
    for (const auto& option : any->as_array()) {
      std::vector<std::string> e;
      check_schema(option, v, where, e);
      if (e.empty()) return;
    }
    errors.push_back(where + ": matches none of anyOf");
    return;
  }
  if (const Value* type = schema.find("type")) {
    std::vector<std::string> types;
    if (type->is_string()) types.push_back(type->as_string());
    else
      for (const auto& t : type->as_array()) types.push_back(t.as_string());
    if (std::none_of(types.begin(), types.end(), [&](const std::string& t) { return json_type_is(v, t); })) {
      errors.push_back(where + ": is " + std::string(v.type_name()) + ", not " + joined(types, "|"));
      return;
    }
  }
  if (const Value* values = schema.find("enum"); values != nullptr && !v.is_null()) {
    if (std::none_of(values->as_array().begin(), values->as_array().end(), [&](const Value& e) { return e == v; }))
      errors.push_back(where + ": " + nsrun::json::dump(v, false) + " is not in its enum");
  }
  if (v.is_object()) {
    if (const Value* required = schema.find("required"))
      for (const auto& key : required->as_array())
        if (v.find(key.as_string()) == nullptr) errors.push_back(where + ": lacks " + key.as_string());
    const Value* props = schema.find("properties");
    const Value* extra = schema.find("additionalProperties");
    for (const auto& [key, value] : v.as_object()) {
      const Value* sub = props != nullptr ? props->find(key) : nullptr;
      if (sub != nullptr) check_schema(*sub, value, where + "." + std::string(key), errors);
      else if (extra != nullptr && extra->is_bool() && !extra->as_bool())
        errors.push_back(where + ": unknown key " + std::string(key));
      else if (extra != nullptr && extra->is_object())
        check_schema(*extra, value, where + "." + std::string(key), errors);
    }
  }
  if (v.is_array())
    if (const Value* items = schema.find("items"))
      for (std::size_t i = 0; i < v.as_array().size(); ++i)
        check_schema(*items, v.as_array()[i], where + "[" + std::to_string(i) + "]", errors);
}

}  // namespace

std::vector<std::string> schema_errors(const nsrun::json::Value& schema, const nsrun::json::Value& v) {
  std::vector<std::string> errors;
  check_schema(schema, v, "report", errors);
  return errors;
}

const nsrun::json::Value& report_schema() {
  static const nsrun::json::Value schema = [] {
    std::ifstream in(std::string(NSRUN_SOURCE_DIR) + "/docs/report.schema.json");
    std::stringstream text;
    text << in.rdbuf();
    auto doc = nsrun::json::parse(text.str());
    return doc ? *doc : nsrun::json::Value();
  }();
  return schema;
}

}  // namespace nsrun_test
