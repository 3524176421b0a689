// Settings files for people (src/cli/settings.hpp, docs/settings.md):
// each key is an option by another spelling; the workspace's file may only
// narrow; an unknown key or a widening one is refused with the key's path;
// the examples in docs/settings/ load.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/native.hpp"
#include "cli/settings.hpp"
#include "policy/json.hpp"
#include "source_file.hpp"

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

using namespace nsrun;

namespace {

const std::string user_file = "/h/.config/nsrun/settings.json";
const std::string ws_file = "/w/.nsrun.json";

CallerContext context(std::map<std::string, std::string> files) {
  CallerContext c;
  c.cwd = "/w";
  c.socket_env.home = "/h";
  c.read_settings_file = [files](const std::string& path, bool) -> Result<std::optional<std::string>> {
    auto it = files.find(path);
    if (it == files.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  };
  return c;
}

Result<Invocation> parse(std::vector<std::string> args, std::map<std::string, std::string> files) {
  args.insert(args.end(), {"--", "true"});
  return parse_native(args, context(std::move(files)));
}

// {"a": {"b": VALUE}} for the key path a.b.
std::string doc(std::string_view path, std::string_view value) {
  std::string head, tail;
  while (true) {
    const auto dot = path.find('.');
    head += "{\"" + std::string(path.substr(0, dot)) + "\": ";
    tail += "}";
    if (dot == std::string_view::npos) break;
    path = path.substr(dot + 1);
  }
  return head + std::string(value) + tail;
}

std::string message(const Result<Invocation>& r) {
  REQUIRE_FALSE(r);
  return "nsrun: " + r.error().message();
}

struct Sample {
  std::string json;               // the key's value
  std::vector<std::string> args;  // the same as options
};

// One value for every key: a key added without one fails here.
const std::map<std::string_view, Sample>& samples() {
  static const std::map<std::string_view, Sample> s = {
      {"mode", {"\"read-only\"", {"--mode", "read-only"}}},
      {"workspace_mode", {"\"cow\"", {"--workspace-mode", "cow"}}},
      {"home", {"\"ro\"", {"--home", "ro"}}},
      {"seccomp", {"\"log\"", {"--seccomp", "log"}}},
      {"filesystem.writable", {"[\"/var/cache\", \"/srv\"]", {"--writable", "/var/cache", "--writable", "/srv"}}},
      {"filesystem.read_only", {"[\"/w/.git\"]", {"--ro", "/w/.git"}}},
      {"filesystem.hide", {"[\"/h/secret\"]", {"--hide", "/h/secret"}}},
      {"filesystem.allow_read", {"[\"/h/.npmrc\"]", {"--allow-read", "/h/.npmrc"}}},
      {"filesystem.protect", {"[\"x/y\"]", {"--protect", "x/y"}}},
      {"filesystem.unprotect", {"[\".envrc\"]", {"--unprotect", ".envrc"}}},
      {"filesystem.tmp", {"\"host\"", {"--tmp", "host"}}},
      {"filesystem.hide_defaults", {"\"none\"", {"--hide-defaults", "none"}}},
      {"filesystem.protect_defaults", {"\"none\"", {"--protect-defaults", "none"}}},
      {"filesystem.settings_copy", {"false", {"--no-settings-copy"}}},
      {"network.mode", {"\"proxy\"", {"--network", "proxy"}}},
      {"network.allow", {"[\"registry.npmjs.org\"]", {"--allow-host", "registry.npmjs.org"}}},
      {"network.deny", {"[\"evil.example\"]", {"--deny-host", "evil.example"}}},
      {"network.resolve", {"[\"a.example=127.0.0.1\"]", {"--resolve-host", "a.example=127.0.0.1"}}},
      {"network.offline_env", {"false", {"--no-offline-env"}}},
      {"network.unix_sockets", {"\"none\"", {"--unix-sockets", "none"}}},
      {"network.allow_sockets", {"[\"/run/x.sock\"]", {"--allow-socket", "/run/x.sock"}}},
      {"limits.memory", {"\"512M\"", {"--limit-memory", "512M"}}},
      {"limits.pids", {"64", {"--limit-pids", "64"}}},
      {"limits.cpu", {"\"0.5\"", {"--limit-cpu", "0.5"}}},
      {"limits.timeout", {"\"30s\"", {"--timeout", "30s"}}},
      {"limits.tmpfs_size", {"\"64M\"", {"--tmpfs-size", "64M"}}},
      {"limits.mode", {"\"best-effort\"", {"--limits", "best-effort"}}},
      {"env.clear", {"true", {"--clearenv"}}},
      {"env.allow", {"[\"PATH\"]", {"--env-allow", "PATH"}}},
      {"env.deny", {"[\"AWS_*\"]", {"--env-deny", "AWS_*"}}},
      {"env.unset", {"[\"X\"]", {"--unsetenv", "X"}}},
      {"env.set", {"{\"A\": \"b\", \"C\": \"d\"}", {"--setenv", "A", "b", "--setenv", "C", "d"}}},
  };
  return s;
}


}  // namespace

TEST_CASE("settings: every key is its option by another spelling", "[settings]") {
  auto base = parse({}, {});
  REQUIRE(base);
  for (const SettingKey& k : settings_keys()) {
    INFO("key " << k.path << " (" << k.option << ")");
    auto it = samples().find(k.path);
    REQUIRE(it != samples().end());
    auto by_key = parse({}, {{user_file, doc(k.path, it->second.json)}});
    REQUIRE(by_key);
    auto by_option = parse(it->second.args, {});
    REQUIRE(by_option);
    CHECK(by_key->policy == by_option->policy);
    CHECK_FALSE(by_key->policy == base->policy);
    REQUIRE_FALSE(by_key->sources.empty());
    CHECK(by_key->sources.front().origin == user_file);
    CHECK(by_key->sources.front().option == k.option);
  }
}

TEST_CASE("settings: the command line wins; --no-settings and --settings FILE", "[settings]") {
  const std::map<std::string, std::string> files = {{user_file, R"({"mode": "read-only"})"},
                                                    {"/etc/other.json", R"({"network": {"mode": "none"}})"}};
  auto r = parse({"--mode", "workspace-write"}, files);
  REQUIRE(r);
  CHECK(r->policy.mode == Mode::workspace_write);
  r = parse({}, files);
  REQUIRE(r);
  CHECK(r->policy.mode == Mode::read_only);
  r = parse({"--no-settings"}, {{user_file, "{ broken"}});
  REQUIRE(r);
  CHECK(r->policy.mode == Mode::workspace_write);
  r = parse({"--settings", "/etc/other.json"}, files);
  REQUIRE(r);
  CHECK(r->policy.mode == Mode::workspace_write);
  CHECK(r->policy.network == Network::none);
  CHECK(message(parse({"--settings=/nowhere.json"}, files)) == "nsrun: --settings /nowhere.json: no such file");
  // --help is never stopped by a broken file.
  auto help = parse_native(std::vector<std::string>{"--help"}, context({{user_file, "{ broken"}}));
  REQUIRE(help);
  CHECK(help->action == Invocation::Action::help);
}

TEST_CASE("settings: an unknown key, a wrong type or a bad value is refused with the key's path", "[settings]") {
  auto r = parse({}, {{user_file, R"({"network": {"alow": ["x.example"]}})"}});
  CHECK(message(r) == "nsrun: " + user_file + ": network.alow: unknown key; did you mean network.allow? (the keys: "
                      "docs/settings.md)");
  CHECK(r.error().exit_code() == 125);
  CHECK(message(parse({}, {{user_file, R"({"allow_read": ["~/.ssh/known_hosts"]})"}})) ==
        "nsrun: " + user_file + ": allow_read: unknown key; did you mean filesystem.allow_read? (the keys: "
                                "docs/settings.md)");
  CHECK(message(parse({}, {{user_file, R"({"bogus": 1})"}})) ==
        "nsrun: " + user_file + ": bogus: unknown key (the keys: docs/settings.md)");
  CHECK(message(parse({}, {{user_file, R"({"filesystem": {"writable": "/srv"}})"}})) ==
        "nsrun: " + user_file + ": filesystem.writable: expected an array of strings, got string");
  CHECK(message(parse({}, {{user_file, R"({"network": {"allow": ["a", 1, true]}})"}})) ==
        "nsrun: " + user_file + ": network.allow[2]: expected a string, got boolean");
  CHECK(message(parse({}, {{user_file, R"({"mode": "sideways"})"}})) ==
        "nsrun: " + user_file +
            ": mode: unknown value 'sideways' (expected read-only, workspace-write or full-access)");
  CHECK(message(parse({}, {{user_file, R"({"mode": "read-only", "mode": "full-access"})"}})) ==
        "nsrun: " + user_file + ": line 1 column 23: duplicate key \"mode\"");
  CHECK(message(parse({}, {{user_file, R"({"network": "none"})"}})) ==
        "nsrun: " + user_file + ": network: expected an object, got string");
  CHECK(message(parse({}, {{user_file, "[1]"}})) == "nsrun: " + user_file + ": expected an object, got array");
  CHECK(message(parse({}, {{user_file, "{\"mode\": }"}})).starts_with("nsrun: " + user_file + ": line 1 column"));
  // One line, whatever the file holds.
  const std::string m = message(parse({}, {{user_file, "{\"a\\nb\": 1}"}}));
  CHECK(m.find('\n') == std::string::npos);
}

TEST_CASE("settings: ~, ${HOME} and ${WORKSPACE} are expanded; nothing else is", "[settings]") {
  auto r = parse({"--workspace", "/srv/ws"},
                 {{user_file, R"({"filesystem": {"writable": ["~/.cache/ccache", "${WORKSPACE}/../out"],
                                                 "read_only": ["${WORKSPACE}/.git"]},
                                  "env": {"set": {"TARGET": "${WORKSPACE}/target", "T": "~"}}})"}});
  REQUIRE(r);
  CHECK(r->policy.writable == std::vector<std::string>{"/h/.cache/ccache", "/srv/ws/../out"});
  REQUIRE_FALSE(r->policy.mounts.empty());
  CHECK(r->policy.mounts.back().dest == "/srv/ws/.git");
  CHECK(std::find(r->policy.env.begin(), r->policy.env.end(), EnvOp{EnvOp::Kind::set, "TARGET", "/srv/ws/target"}) !=
        r->policy.env.end());
  CHECK(std::find(r->policy.env.begin(), r->policy.env.end(), EnvOp{EnvOp::Kind::set, "T", "~"}) !=
        r->policy.env.end());
  CHECK(message(parse({}, {{user_file, R"({"filesystem": {"hide": ["${SECRET}/x"]}})"}})) ==
        "nsrun: " + user_file +
            ": filesystem.hide[0]: '${SECRET}/x': unknown variable ${SECRET} (known: ${WORKSPACE}, ${HOME})");
  CHECK(message(parse({}, {{user_file, R"({"filesystem": {"hide": ["~root/x"]}})"}})) ==
        "nsrun: " + user_file + ": filesystem.hide[0]: '~root/x': only ~ and ~/ are expanded, not ~user");
  CHECK(message(parse({}, {{user_file, R"({"filesystem": {"hide": ["${HOME"]}})"}})) ==
        "nsrun: " + user_file + ": filesystem.hide[0]: '${HOME': an unclosed ${");
  // The workspace's own file lives in the workspace --workspace names.
  auto w = parse({"--workspace=/srv/ws"}, {{"/srv/ws/.nsrun.json", R"({"mode": "read-only"})"}});
  REQUIRE(w);
  CHECK(w->policy.mode == Mode::read_only);
}

TEST_CASE("settings: the workspace's file may narrow, and every widening key there is refused by its path",
          "[settings]") {
  // Narrowing: applied.
  auto r = parse({}, {{user_file, R"({"limits": {"memory": "2G"}, "network": {"mode": "proxy",
                                      "allow": ["registry.npmjs.org"]}})"},
                      {ws_file, R"({"mode": "read-only", "limits": {"memory": "1G", "pids": 100},
                                    "network": {"mode": "none", "deny": ["x.example"]},
                                    "filesystem": {"read_only": ["${WORKSPACE}/.git"], "hide": ["~/notes"],
                                                   "settings_copy": false, "tmp": "private"},
                                    "home": "ro", "workspace_mode": "cow", "env": {"deny": ["AWS_*"]}})"}});
  REQUIRE(r);
  CHECK(r->policy.mode == Mode::read_only);
  CHECK(r->policy.limits.memory == uint64_t{1} << 30);
  CHECK(r->policy.network == Network::none);
  CHECK(r->policy.home == HomeMode::ro);
  CHECK_FALSE(r->policy.settings_copy);
  CHECK(r->policy.workspace_mode == WorkspaceMode::cow);

  // Every key that never narrows, with its sample.
  for (const SettingKey& k : settings_keys()) {
    if (k.narrowing != Narrowing::never) continue;
    INFO("key " << k.path);
    const std::string m = message(parse({}, {{ws_file, doc(k.path, samples().at(k.path).json)}}));
    CHECK(m.starts_with("nsrun: " + ws_file + ": " + std::string(k.path)));
    CHECK(m.find("may only narrow") != std::string::npos);
  }
  // Measured keys above what the user's file or the default allows.
  const std::vector<std::pair<std::string, std::string>> widening = {
      {"", R"({"mode": "full-access"})"},
      {R"({"mode": "read-only"})", R"({"mode": "workspace-write"})"},
      {R"({"workspace_mode": "cow"})", R"({"workspace_mode": "direct"})"},
      {R"({"home": "ro"})", R"({"home": "cow"})"},
      {"", R"({"home": "rw"})"},
      {"", R"({"seccomp": "none"})"},
      {"", R"({"filesystem": {"tmp": "host"}})"},
      {"", R"({"filesystem": {"tmp": "/var/tmp"}})"},
      {"", R"({"filesystem": {"hide_defaults": "none"}})"},
      {"", R"({"filesystem": {"protect_defaults": "none"}})"},
      {R"({"network": {"unix_sockets": "none"}})", R"({"network": {"unix_sockets": "hide-known"}})"},
      {R"({"network": {"mode": "none"}})", R"({"network": {"mode": "proxy"}})"},
      {R"({"network": {"mode": "proxy"}})", R"({"network": {"mode": "share"}})"},
      {R"({"limits": {"memory": "2G"}})", R"({"limits": {"memory": "4G"}})"},
      {"", R"({"limits": {"mode": "best-effort"}})"},
      {R"({"limits": {"timeout": "1m"}})", R"({"limits": {"timeout": "2m"}})"},
      {R"({"limits": {"pids": 10}})", R"({"limits": {"pids": 11}})"},
  };
  for (const auto& [user, ws] : widening) {
    INFO("user " << user << ", workspace " << ws);
    std::map<std::string, std::string> files = {{ws_file, ws}};
    if (!user.empty()) files[user_file] = user;
    const std::string m = message(parse({}, files));
    CHECK(m.starts_with("nsrun: " + ws_file + ": "));
    CHECK(m.find("widens") != std::string::npos);
  }
  CHECK(message(parse({}, {{ws_file, R"({"mode": "full-access"})"}})) ==
        "nsrun: " + ws_file +
            ": mode: 'full-access' widens what the user's settings and nsrun's defaults allow; a workspace's settings "
            "may only narrow (give --mode yourself to mean it)");
  // What the user gives on the command line stays the user's to give.
  auto cli = parse({"--mode", "full-access"}, {{ws_file, R"({"mode": "read-only"})"}});
  REQUIRE(cli);
  CHECK(cli->policy.mode == Mode::full_access);
  // A refused file leaves nothing behind: the narrowing key before the
  // widening one is not applied either (the launch is refused anyway).
  CHECK_FALSE(parse({}, {{ws_file, R"({"filesystem": {"hide": ["/h/x"], "writable": ["/"]}})"}}));
}

TEST_CASE("settings: nsrun policy --explain-source names the file and key of each value", "[settings]") {
  auto r = parse_native(std::vector<std::string>{"policy", "--explain-source", "--ro", "/w/src"},
                        context({{user_file, R"({"network": {"mode": "proxy", "allow": ["a.example", "b.example"]}})"},
                                 {ws_file, R"({"limits": {"timeout": "5m"}})"}}));
  REQUIRE(r);
  CHECK(r->explain_source);
  const std::string text = explain_sources(r->sources);
  CHECK(text ==
        user_file + ": network.mode = proxy (as --network proxy)\n" +
        user_file + ": network.allow[0] = a.example (as --allow-host a.example)\n" +
        user_file + ": network.allow[1] = b.example (as --allow-host b.example)\n" +
        ws_file + ": limits.timeout = 5m (as --timeout 5m)\n"
        "command line: --explain-source\n"
        "command line: --ro /w/src\n"
        "everything else: nsrun's defaults (later lines win; lists add up; nsrun policy prints the result)\n");
  CHECK(message(parse({"--explain-source"}, {})) ==
        "nsrun: --explain-source: only with nsrun policy (nsrun policy --explain-source [OPTIONS])");
}

TEST_CASE("settings: each example in docs/settings/ loads, as the user's file and (narrowing ones) the workspace's",
          "[settings]") {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(NSRUN_SOURCE_DIR) + "/docs/settings"))
    if (e.path().extension() == ".json") names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  CHECK(names.size() >= 3);
  for (const auto& n : names) {
    INFO("docs/settings/" << n);
    const std::string text = source_file("docs/settings/" + n);
    auto r = parse({}, {{user_file, text}});
    if (!r) FAIL(r.error().message());
    CHECK_FALSE(r->sources.empty());
    if (n.starts_with("workspace-")) {
      auto w = parse({}, {{ws_file, text}});
      if (!w) FAIL(w.error().message());
    }
  }
}

TEST_CASE("settings: docs/settings.schema.json lists exactly the keys, each naming its option", "[settings]") {
  auto schema = json::parse(source_file("docs/settings.schema.json"));
  REQUIRE(schema);
  std::map<std::string, std::string> leaves;  // key path -> description
  std::function<void(const json::Value&, const std::string&)> walk = [&](const json::Value& obj,
                                                                       const std::string& prefix) {
    const json::Value* props = obj.find("properties");
    REQUIRE(props != nullptr);
    for (const auto& [name, v] : props->as_object()) {
      if (prefix.empty() && name == "$schema") continue;
      const std::string path = prefix.empty() ? name : prefix + "." + name;
      if (v.find("properties") != nullptr) walk(v, path);
      else leaves[path] = v.find("description") != nullptr ? v.find("description")->as_string() : "";
    }
  };
  walk(*schema, "");
  std::map<std::string, std::string> keys;
  for (const SettingKey& k : settings_keys()) keys[std::string(k.path)] = std::string(k.option);
  for (const auto& [path, option] : keys) {
    INFO("docs/settings.schema.json lacks " << path);
    REQUIRE(leaves.contains(path));
    CHECK(leaves[path].find(option) != std::string::npos);
  }
  for (const auto& [path, d] : leaves) {
    INFO("docs/settings.schema.json has " << path << ", which nsrun does not read");
    CHECK(keys.contains(path));
  }
}
