#include "policy/env.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

#include "policy/glob.hpp"

namespace nsrun {

namespace {
std::string_view var_name(std::string_view entry) { return entry.substr(0, entry.find('=')); }

bool matches_any(const Policy& policy, EnvOp::Kind kind, std::string_view name) {
  return std::any_of(policy.env.begin(), policy.env.end(),
                     [&](const EnvOp& op) { return op.kind == kind && glob_match(op.name, name); });
}

bool has_kind(const Policy& policy, EnvOp::Kind kind) {
  return std::any_of(policy.env.begin(), policy.env.end(), [&](const EnvOp& op) { return op.kind == kind; });
}
}  // namespace

std::vector<std::string> resolve_env(const Policy& policy, const std::vector<std::string>& inherited) {
  std::vector<std::string> env;
  if (!policy.clearenv) {
    const bool allow_list = has_kind(policy, EnvOp::Kind::allow);
    for (const auto& entry : inherited) {
      std::string_view name = var_name(entry);
      if (allow_list && !matches_any(policy, EnvOp::Kind::allow, name)) continue;
      if (matches_any(policy, EnvOp::Kind::deny, name)) continue;
      env.push_back(entry);
    }
  }
  for (const auto& op : policy.env) {
    if (op.kind != EnvOp::Kind::set && op.kind != EnvOp::Kind::unset) continue;
    std::erase_if(env, [&](const std::string& entry) { return var_name(entry) == op.name; });
    if (op.kind == EnvOp::Kind::set) env.push_back(op.name + "=" + op.value);
  }
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

const char* env_lookup(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& entry : env)
    if (var_name(entry) == name && entry.size() > name.size()) return entry.c_str() + name.size() + 1;
  return nullptr;
}

const std::vector<std::pair<std::string, std::string>>& offline_environment() {
  // npm and pnpm read npm_config_*; pip --no-index; cargo --offline; yarn
  // (berry) its offline mode; Go's module proxy off (GOFLAGS is left
  // alone: -mod=mod would make go ignore a vendor directory that works
  // offline).
  static const std::vector<std::pair<std::string, std::string>> vars = {
      {"npm_config_offline", "true"}, {"PIP_NO_INDEX", "1"},          {"CARGO_NET_OFFLINE", "true"},
      {"YARN_ENABLE_OFFLINE_MODE", "1"}, {"GOPROXY", "off"},
  };
  return vars;
}

bool wants_offline_environment(const Policy& policy) {
  return policy.network == Network::none && policy.offline_env && policy.preset;
}

void set_unless_policy_sets(const Policy& policy, std::vector<std::string>& env, std::string_view name,
                            std::string_view value) {
  const bool own = std::any_of(policy.env.begin(), policy.env.end(),
                               [&](const EnvOp& e) { return e.kind == EnvOp::Kind::set && e.name == name; });
  if (own) return;
  std::erase_if(env, [&](const std::string& e) { return e.size() > name.size() && e.starts_with(name) && e[name.size()] == '='; });
  env.push_back(fmt::format("{}={}", name, value));
}

}  // namespace nsrun
