// The Policy table (policy_fields(), src/policy/policy_json.cpp) is the one
// place a Policy member meets the JSON: every member has a row, from_json
// and to_json read and write each key through its row, and an option that
// mirrors a key (OptionSpec::json) makes the Policy the row reads.
#include <catch2/catch_test_macros.hpp>

#include <cctype>
#include <cstddef>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/native.hpp"
#include "cli/options.hpp"
#include "policy/json.hpp"
#include "policy/policy.hpp"
#include "policy/policy_json.hpp"
#include "source_file.hpp"
#include "unit_support.hpp"

using namespace nsrun;
using nsrun_unit::caller_in_tmp;

namespace {

// The members of `struct Policy` as src/policy/policy.hpp declares them,
// one declaration a line.
std::vector<std::string> declared_members() {
  const std::string text = source_file("src/policy/policy.hpp");
  const std::size_t begin = text.find("\nstruct Policy {\n");
  REQUIRE(begin != std::string::npos);
  const std::size_t end = text.find("\n};\n", begin);
  REQUIRE(end != std::string::npos);
  std::vector<std::string> out;
  std::istringstream body(text.substr(begin, end - begin));
  std::string line;
  std::getline(body, line);  // the blank line before `struct Policy {`
  std::getline(body, line);  // `struct Policy {`
  while (std::getline(body, line)) {
    line = line.substr(0, line.find("//"));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty() || line.find("operator==") != std::string::npos) continue;
    INFO(line);
    REQUIRE(line.back() == ';');  // one member a line, nothing else in the struct
    std::string decl = line.substr(0, line.find_first_of("={;"));
    while (!decl.empty() && decl.back() == ' ') decl.pop_back();
    const std::size_t name_at = decl.find_last_of(" *&") + 1;
    out.push_back(decl.substr(name_at));
  }
  return out;
}

// How many members an aggregate has, counted by the compiler: the most
// initializers `T{...}` accepts.
struct AnyMember {
  template <class M>
  operator M&() const;
  template <class M>
  operator M&&() const;
};

template <class T, class... A>
constexpr std::size_t member_count() {
  if constexpr (requires { T{A{}..., AnyMember{}}; })
    return member_count<T, A..., AnyMember>();
  else
    return sizeof...(A);
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("every member of Policy has one row, and every row a member", "[policy-fields]") {
  const std::vector<std::string> declared = declared_members();
  // The reading of the header above misses nothing the compiler sees.
  CHECK(declared.size() == member_count<Policy>());
  std::multiset<std::string> in_rows;
  for (const PolicyField& f : policy_fields())
    for (const std::string& m : words(f.members)) in_rows.insert(m);
  for (const std::string& m : declared) {
    INFO("Policy::" << m << " has " << in_rows.count(m) << " rows in policy_fields() (src/policy/policy_json.cpp)");
    CHECK(in_rows.count(m) == 1);
  }
  for (const std::string& m : in_rows) {
    INFO("policy_fields() names " << m << ", which Policy does not have");
    CHECK(std::find(declared.begin(), declared.end(), m) != declared.end());
  }
}

TEST_CASE("a row is a key read and written, or a member left out with a reason", "[policy-fields]") {
  std::set<std::string_view> keys;
  for (const PolicyField& f : policy_fields()) {
    INFO("row '" << f.key << "' (" << f.members << ")");
    CHECK_FALSE(f.members.empty());
    if (f.key.empty()) {
      CHECK_FALSE(f.read);
      CHECK_FALSE(f.write);
      CHECK_FALSE(f.unwritten.empty());
      continue;
    }
    CHECK(f.read);
    CHECK(f.write);
    CHECK(f.unwritten.empty());
    CHECK(keys.insert(f.key).second);
    CHECK(policy_field(f.key) == &f);
  }
  CHECK(policy_field("") == nullptr);
  CHECK(policy_field("no_such_key") == nullptr);
  // An empty key is no row's: it stays an unknown field.
  auto doc = json::parse(R"({"": 1})");
  REQUIRE(doc);
  auto r = from_json(*doc);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "policy field '': unknown field");
}

TEST_CASE("to_json writes the keys in the table's order, each through its row", "[policy-fields]") {
  Policy p;
  p.home_given = true;  // the one key written only when named
  const json::Value doc = to_json(p);
  std::vector<std::string_view> written, rows;
  for (const auto& [key, value] : doc.as_object()) written.push_back(key);
  for (const PolicyField& f : policy_fields())
    if (!f.key.empty()) rows.push_back(f.key);
  CHECK(written == rows);
  p.home_given = false;
  CHECK(to_json(p).find("home") == nullptr);
}

TEST_CASE("each key reads back what its row wrote", "[policy-fields]") {
  Policy p;
  p.mode = Mode::read_only;
  p.writable = {"/var/cache"};
  MountOp tmpfs;
  tmpfs.kind = MountOp::Kind::tmpfs;
  tmpfs.dest = "/scratch";
  tmpfs.perms = 0700;
  tmpfs.size = 4096;
  p.mounts = {tmpfs};
  p.ns.net = true;
  p.uid = 1000;
  p.network = Network::proxy;
  p.egress.allow = {"example.com"};
  p.new_session = false;
  p.pass_fds = {5};
  p.limits.memory = 1 << 30;
  p.env = {EnvOp{EnvOp::Kind::set, "A", "b"}, EnvOp{EnvOp::Kind::unset, "C", ""}};
  p.settings_copies = {SettingsCopy{"/h/.npmrc", "color=true\n"}};
  p.home = HomeMode::ro;
  p.home_given = true;
  p.report_fd = 7;
  for (const PolicyField& f : policy_fields()) {
    if (f.key.empty()) continue;
    INFO("key '" << f.key << "'");
    const auto value = f.write(p);
    REQUIRE(value);
    Policy q;
    REQUIRE(f.read(*value, q, std::string(f.key)));
    CHECK(f.write(q) == value);
  }
  auto back = from_json(to_json(p));
  REQUIRE(back);
  CHECK(*back == p);
}

// An option with a `json` key sets that row's members and nothing else: the
// Policy the option makes, read back through the key alone onto the Policy
// without the option, is the same Policy. A new option with a key needs a
// sample here.
TEST_CASE("an option's json key is a row, and option and row make the same Policy", "[policy-fields]") {
  const std::map<std::string_view, std::vector<std::string>> samples = {
      {"--mode", {"read-only"}},         {"--workspace", {"/srv"}},       {"--writable", {"/var/cache"}},
      {"--chdir", {"/srv/sub"}},         {"--proc", {"host-bind"}},       {"--backend", {"landlock"}},
      {"--report", {"/tmp/report.json"}}, {"--report-fd", {"7"}},         {"--network", {"none"}},
      {"--seccomp", {"log"}},            {"--unix-sockets", {"none"}},    {"--allow-socket", {"/run/x.sock"}},
      {"--pass-fd", {"5"}},
      {"--protect", {"x/y"}},            {"--unprotect", {".envrc"}},     {"--allow-read", {"/h/.npmrc"}},
      {"--workspace-mode", {"cow"}},     {"--cow-dir", {"/run/cow"}},     {"--home", {"ro"}},
      {"--home-layer", {"shared"}},      {"--run-id", {"task-1"}},
  };
  auto base = parse_native(std::vector<std::string>{"--", "true"}, caller_in_tmp());
  REQUIRE(base);
  for (const OptionSpec& o : option_table()) {
    if (o.json.empty()) continue;
    INFO(o.native.name << " <-> policy field '" << o.json << "'");
    REQUIRE_FALSE(o.native.name.empty());
    const PolicyField* f = policy_field(o.json);
    REQUIRE(f != nullptr);
    std::vector<std::string> args{std::string(o.native.name)};
    if (o.arity > 0) {
      auto it = samples.find(o.native.name);
      REQUIRE(it != samples.end());
      args.insert(args.end(), it->second.begin(), it->second.end());
    }
    args.insert(args.end(), {"--", "true"});
    auto with = parse_native(args, caller_in_tmp());
    REQUIRE(with);
    CHECK_FALSE(with->policy == base->policy);  // the sample changes something
    const auto value = f->write(with->policy);
    REQUIRE(value);
    Policy read = base->policy;
    REQUIRE(f->read(*value, read, std::string(o.json)));
    CHECK(read == with->policy);
  }
}
