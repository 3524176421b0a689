// The option table (src/cli/options.cpp) is the one place an option is
// declared: these tests hold the other places to it: --help of
// both dialects, the man page and the names errors use (its Policy JSON
// keys: tests/unit/policy_fields_test.cpp).
#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/bwrap.hpp"
#include "cli/native.hpp"
#include "cli/options.hpp"
#include "policy/validate.hpp"
#include "sys/fd.hpp"
#include "unit_support.hpp"

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

using namespace nsrun;
using nsrun_unit::caller_in_tmp;

namespace {

std::size_t words(std::string_view s) {
  std::size_t n = 0;
  bool in = false;
  for (char c : s) {
    if (c != ' ' && !in) ++n;
    in = c != ' ';
  }
  return n;
}

// "--pass-fd" as roff writes it, "\-\-pass\-fd", and not as the head of a
// longer name ("\-\-seccomp" in "\-\-seccomp\-log").
bool man_mentions(const std::string& man, std::string_view option) {
  std::string roff;
  for (char c : option) roff += c == '-' ? std::string("\\-") : std::string(1, c);
  for (auto at = man.find(roff); at != std::string::npos; at = man.find(roff, at + 1)) {
    const std::size_t end = at + roff.size();
    const bool longer = end < man.size() && (std::isalnum(static_cast<unsigned char>(man[end])) ||
                                             (man.compare(end, 2, "\\-") == 0 && end + 2 < man.size() &&
                                              std::isalnum(static_cast<unsigned char>(man[end + 2]))));
    if (!longer) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("options: every entry is well formed and each name is declared once per dialect", "[options]") {
  std::set<std::string_view> native, bwrap, json;
  for (const OptionSpec& o : option_table()) {
    INFO("native " << o.native.name << " bwrap " << o.bwrap.name);
    CHECK((!o.native.name.empty() || !o.bwrap.name.empty()));
    CHECK(o.set);
    CHECK((o.arity >= 0 && o.arity <= 3));
    for (const Spelling* s : {&o.native, &o.bwrap}) {
      if (s->name.empty()) continue;
      CHECK(s->name.starts_with("--"));
      CHECK(words(s->metavar) == static_cast<std::size_t>(o.arity));
      CHECK_FALSE(s->help.empty());
    }
    if (!o.native.name.empty()) CHECK(native.insert(o.native.name).second);
    if (!o.native_short.empty()) CHECK(native.insert(o.native_short).second);
    if (!o.bwrap.name.empty()) CHECK(bwrap.insert(o.bwrap.name).second);
    CHECK((o.native_short.empty() || !o.native.name.empty()));
    CHECK((!o.modifier || !o.bwrap.name.empty()));
    if (!o.native.name.empty()) CHECK(find_option(Dialect::native, o.native.name) == &o);
    if (!o.bwrap.name.empty()) CHECK(find_option(Dialect::bwrap, o.bwrap.name) == &o);
  }
  CHECK(find_option(Dialect::native, "--bind") == nullptr);
  CHECK(find_option(Dialect::bwrap, "--ro") == nullptr);
  CHECK(find_option(Dialect::native, "-h") == find_option(Dialect::native, "--help"));
  CHECK(find_option(Dialect::bwrap, "-h") == nullptr);
}

TEST_CASE("options: nsrun --help fits one screen and points to the man page", "[options][help]") {
  const std::string native = native_usage();
  CHECK(std::count(native.begin(), native.end(), '\n') <= 40);
  CHECK(native.find("man nsrun") != std::string::npos);
  for (auto name : {"--mode", "--workspace", "--writable", "--network", "--timeout", "--report", "--verdict", "--tmp"}) {
    INFO(name);
    CHECK(native.find(std::string("\n  ") + name + " ") != std::string::npos);
  }
  for (auto sub : {"explain", "policy", "probe", "bench", "connect", "changes", "commit", "discard", "home"}) {
    INFO(sub);
    CHECK(native.find(sub) != std::string::npos);
  }
}

TEST_CASE("options: bwrap's --help lists every option of its table", "[options]") {
  const std::string bwrap = bwrap_usage("bwrap");
  const std::string native = native_usage();
  for (const OptionSpec& o : option_table()) {
    if (!o.native.name.empty()) {
      INFO(o.native.name);
      CHECK(is_native_option(o.native.name));
    }
    if (!o.bwrap.name.empty()) {
      INFO(o.bwrap.name);
      CHECK(bwrap.find("\n    " + std::string(o.bwrap.name) + " ") != std::string::npos);
      CHECK(is_bwrap_option(o.bwrap.name));
      // nsrun's own --help names the dialect's options too: a caller that
      // resolves the `bwrap` symlink asks nsrun's path (Codex).
      const std::string name(o.bwrap.name);
      CHECK((native.find(" " + name + " ") != std::string::npos || native.find(" " + name + "\n") != std::string::npos));
    }
  }
}

TEST_CASE("options: docs/nsrun.1 describes every native option", "[options]") {
  std::ifstream in(std::string(NSRUN_SOURCE_DIR) + "/docs/nsrun.1");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string man = text.str();
  CHECK_FALSE(man_mentions(man, "--no-such-option"));
  CHECK_FALSE(man_mentions(man, "--seccomp-lo"));
  for (const OptionSpec& o : option_table()) {
    if (o.native.name.empty()) continue;
    INFO("docs/nsrun.1 lacks " << o.native.name << " (add it under .SH OPTIONS)");
    CHECK(man_mentions(man, o.native.name));
  }
}

TEST_CASE("options: errors name the option as typed: --ro /missing is --ro, not --ro-bind", "[options]") {
  char dir[] = "/tmp/nsrun-options-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string missing = std::string(dir) + "/missing";
  for (const std::string& form : {std::string("--ro"), std::string("--ro=")}) {
    std::vector<std::string> args = form == "--ro" ? std::vector<std::string>{"--ro", missing}
                                                   : std::vector<std::string>{"--ro=" + missing};
    args.insert(args.end(), {"--workspace", dir, "--", "true"});
    auto inv = parse_native(args, caller_in_tmp());
    REQUIRE(inv);
    auto r = validate(inv->policy, true, inv->mount_options);
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::usage);
    CHECK(r.error().message() == "--ro " + missing + ": No such file or directory");
  }
  // Relative, and a NUL inside: the same name.
  auto relative = parse_native(std::vector<std::string>{"--ro", "rel/dir", "--workspace", dir, "--", "true"}, caller_in_tmp());
  REQUIRE(relative);
  auto r = validate(relative->policy, true, relative->mount_options);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "--ro rel/dir: not an absolute path");
  auto nul = parse_native(std::vector<std::string>{"--ro", std::string("/tmp\0x", 6), "--workspace", dir, "--", "true"},
                          caller_in_tmp());
  REQUIRE(nul);
  auto n = validate(nul->policy, true, nul->mount_options);
  REQUIRE_FALSE(n);
  CHECK(n.error().step == "--ro");
  // The other mount options keep their names; a kind without a typed name
  // (a --policy file's mounts, the bwrap dialect) is named by its kind.
  auto hide = parse_native(std::vector<std::string>{"--ro", dir, "--hide", "rel", "--workspace", dir, "--", "true"},
                           caller_in_tmp());
  REQUIRE(hide);
  CHECK(hide->mount_options == std::vector<std::string>{"--ro", "--hide"});
  CHECK(validate(hide->policy, true, hide->mount_options).error().message() == "--hide rel: not an absolute path");
  CHECK(validate(relative->policy, true).error().message() == "--ro-bind rel/dir: not an absolute path");
  ::rmdir(dir);
}

TEST_CASE("options: a --policy file's mounts are named by their kind, options after it as typed", "[options]") {
  char dir[] = "/tmp/nsrun-options-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string file = std::string(dir) + "/policy.json";
  {
    std::ofstream out(file);
    out << R"({"mounts": [{"kind": "ro-bind", "source": "/nonexistent-a", "dest": "/nonexistent-a"}]})";
  }
  auto inv = parse_native(std::vector<std::string>{"--ro", "/nonexistent-0", "--policy", file, "--ro", "/nonexistent-b",
                                                   "--workspace", dir, "--", "true"},
                          caller_in_tmp());
  INFO((inv ? std::string() : inv.error().message()));
  REQUIRE(inv);
  REQUIRE(inv->policy.mounts.size() == 2);  // the file's list replaced the first --ro
  CHECK(inv->mount_options == std::vector<std::string>{"", "--ro"});
  CHECK(validate(inv->policy, true, inv->mount_options).error().step == "--ro-bind");
  inv->policy.mounts.erase(inv->policy.mounts.begin());
  inv->mount_options.erase(inv->mount_options.begin());
  CHECK(validate(inv->policy, true, inv->mount_options).error().step == "--ro");
  ::unlink(file.c_str());
  ::rmdir(dir);
}

TEST_CASE("options: a mistyped or shortened name suggests the option it resembles", "[options][help]") {
  CHECK(nearest_option(Dialect::native, "--workspce") == "--workspace");   // a dropped letter
  CHECK(nearest_option(Dialect::native, "--netwrok") == "--network");      // two letters swapped
  CHECK(nearest_option(Dialect::native, "--verdicts") == "--verdict");     // one letter too many
  CHECK(nearest_option(Dialect::native, "--limit-mem") == "--limit-memory");  // the only option it begins
  CHECK(nearest_option(Dialect::bwrap, "--ro-bnid") == "--ro-bind");
  // Nothing close, too short to guess from, or absurdly long: no guess.
  CHECK_FALSE(nearest_option(Dialect::native, "--frobnicate-all"));
  CHECK_FALSE(nearest_option(Dialect::native, "-x"));
  CHECK_FALSE(nearest_option(Dialect::native, "--" + std::string(100000, 'w')));
  // A prefix that several options begin with is no answer.
  CHECK_FALSE(nearest_option(Dialect::native, "--lim"));
}
