// The .git/config review of `nsrun commit` without privileges: the strict
// parser (git's reading, or a refusal), the canonical writing, which keys
// run something, and the key-by-key comparison with the host's file.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

#include "policy/gitconfig.hpp"

using namespace nsrun;
using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::string> keys(const ConfigParse& p) {
  std::vector<std::string> out;
  for (const auto& e : p.entries) out.push_back(config_key(e) + "=" + e.value.value_or("(none)"));
  return out;
}

const ConfigKeyChange* change(const ConfigReview& r, std::string_view key) {
  for (const auto& c : r.changes)
    if (c.key == key) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("the parser reads what git reads", "[gitconfig]") {
  const std::string text =
      "\xEF\xBB\xBF# comment\n"
      "[core]\n\trepositoryformatversion = 0\n"
      "  FileMode=true ; comment\n"
      "[Remote \"Origin\"] url = https://example.invalid/a  # trailing\n"
      "\tfetch = \"+refs/heads/*:refs/remotes/origin/*\"\n"
      "[branch.Main]\r\n\tremote = origin\r\n"
      "[user]\n\tname = \"  two  spaces \\\"q\\\" \\\\ \\t\"\n"
      "\tmulti = a \\\n   b\n"
      "\tflag\n"
      "\tspaced =   x  \t y   \n";
  const ConfigParse p = parse_git_config(text);
  REQUIRE(p.error.empty());
  CHECK(keys(p) == std::vector<std::string>{
                       "core.repositoryformatversion=0", "core.filemode=true",
                       "remote.Origin.url=https://example.invalid/a",
                       "remote.Origin.fetch=+refs/heads/*:refs/remotes/origin/*",
                       "branch.main.remote=origin",  // the old [a.B] form: lowercased, as git does
                       "user.name=  two  spaces \"q\" \\ \t", "user.multi=a    b", "user.flag=(none)", "user.spaced=x    y"});
}

TEST_CASE("what git would refuse, or read otherwise, refuses the whole file", "[gitconfig]") {
  for (std::string_view bad : {
           std::string_view("k = v\n"),                    // a key before any section
           std::string_view("[core\nk = v\n"),             // header not closed
           std::string_view("[core \"x\nk = v\n"),         // subsection past its line
           std::string_view("[core x]\n"),                 // subsection unquoted
           std::string_view("[core \"x\" ]\n"),            // text after the subsection
           std::string_view("[c_re]\n"),                   // a character git refuses
           std::string_view("[core]\n\tk_y = v\n"),        // a key character git refuses
           std::string_view("[core]\n\t1k = v\n"),         // a key must begin with a letter
           std::string_view("[core]\n\tk = \"v\n"),        // a quote left open
           std::string_view("[core]\n\tk = a\\q\n"),       // an escape git refuses
           std::string_view("[core]\n\tk = v\\"),          // a backslash at the end
           std::string_view("[core]\n\tk = a\0b\n", 15),   // a NUL byte
           std::string_view("[]\n"),
       }) {
    INFO(std::string(bad));
    const ConfigParse p = parse_git_config(bad);
    CHECK_FALSE(p.error.empty());
    CHECK(p.entries.empty());
  }
  const std::string huge = "[core]\n" + std::string(max_config_bytes, '#');
  CHECK_THAT(parse_git_config(huge).error, ContainsSubstring("larger than"));
}

TEST_CASE("the canonical writing reads back as the same entries", "[gitconfig]") {
  const std::string text =
      "[core]\n\tbare = false\n[remote \"o\\\"r\\\\i\"]\n\turl = \" lead; #x\\n\\ttab\\b\"\n\tflag\n[core]\n\tk = v\n";
  const ConfigParse p = parse_git_config(text);
  REQUIRE(p.error.empty());
  const std::string out = serialize(p.entries);
  CHECK(out ==
        "[core]\n\tbare = \"false\"\n[remote \"o\\\"r\\\\i\"]\n\turl = \" lead; #x\\n\\ttab\\b\"\n\tflag\n[core]\n\tk = "
        "\"v\"\n");
  const ConfigParse back = parse_git_config(out);
  REQUIRE(back.error.empty());
  CHECK(back.entries == p.entries);
}

TEST_CASE("keys that run a program or load a file are named; the plain ones are not", "[gitconfig]") {
  auto danger = [](std::string_view text) {
    const ConfigParse p = parse_git_config(text);
    REQUIRE(p.error.empty());
    REQUIRE(p.entries.size() == 1);
    return config_key_danger(p.entries[0]);
  };
  for (std::string_view runs : {
           "[core]\n\tfsmonitor = x\n", "[Core]\n\tFsMonitor = x\n", "[core]\n\thooksPath = h\n",
           "[core]\n\tsshCommand = x\n", "[core]\n\tpager = x\n", "[core]\n\teditor = x\n", "[core]\n\taskPass = x\n",
           "[core]\n\tgitProxy = x\n", "[core]\n\tattributesFile = x\n", "[core]\n\tworktree = /\n",
           "[core]\n\talternateRefsCommand = x\n", "[sequence]\n\teditor = x\n", "[diff]\n\texternal = x\n",
           "[diff \"x\"]\n\tcommand = x\n", "[diff \"x\"]\n\ttextconv = x\n", "[merge \"x\"]\n\tdriver = x\n",
           "[filter \"x\"]\n\tclean = x\n", "[filter \"x\"]\n\tprocess = x\n", "[credential]\n\thelper = x\n",
           "[credential \"https://h\"]\n\thelper = x\n", "[alias]\n\tx = !sh\n", "[alias]\n\tx = -c core.pager=x log\n",
           "[include]\n\tpath = x\n", "[includeIf \"gitdir:/\"]\n\tpath = x\n", "[gpg]\n\tprogram = x\n",
           "[gpg \"ssh\"]\n\tprogram = x\n", "[remote \"o\"]\n\tuploadpack = x\n", "[remote \"o\"]\n\treceivepack = x\n",
           "[remote \"o\"]\n\tvcs = x\n", "[uploadpack]\n\tpackObjectsHook = x\n", "[submodule \"s\"]\n\tupdate = !x\n",
           "[extensions]\n\tworktreeConfig = true\n", "[protocol \"ext\"]\n\tallow = always\n",
           "[url \"ext::sh\"]\n\tinsteadOf = https://\n", "[difftool \"x\"]\n\tcmd = x\n", "[mergetool \"x\"]\n\tcmd = x\n",
           "[commit]\n\tgpgSign = true\n", "[http]\n\tcookieFile = /x\n", "[unknown]\n\tkey = x\n",
       }) {
    INFO(std::string(runs));
    CHECK_FALSE(danger(runs).empty());
  }
  for (std::string_view plain : {
           "[user]\n\tname = x\n", "[user]\n\temail = x\n", "[remote \"origin\"]\n\turl = https://h/r\n",
           "[remote \"origin\"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n", "[branch \"main\"]\n\tremote = origin\n",
           "[core]\n\tfilemode = true\n", "[core]\n\tbare = false\n", "[pull]\n\trebase = true\n",
           "[init]\n\tdefaultBranch = main\n", "[merge]\n\tff = only\n", "[diff]\n\trenames = true\n",
           "[submodule \"s\"]\n\turl = https://h/s\n",
       }) {
    INFO(std::string(plain));
    CHECK(danger(plain).empty());
  }
}

TEST_CASE("the review: safe keys applied, the ones that run refused and named, the host's kept", "[gitconfig]") {
  const std::string host = "[core]\n\tbare = false\n[user]\n\temail = owner@example.invalid\n";
  const std::string layer =
      "[core]\n\tbare = false\n\tfsmonitor = \"touch /tmp/x\"\n"
      "[user]\n\temail = owner@example.invalid\n\tname = agent\n"
      "[remote \"origin\"]\n\turl = https://example.invalid/r\n"
      "[alias]\n\tx = !id\n";
  const ConfigReview r = review_git_config(host, layer);
  REQUIRE(r.error.empty());
  REQUIRE(r.changes.size() == 4);
  CHECK(change(r, "user.name")->refused.empty());
  CHECK(change(r, "user.name")->op == ConfigKeyChange::Op::added);
  CHECK(change(r, "remote.origin.url")->refused.empty());
  CHECK_FALSE(change(r, "core.fsmonitor")->refused.empty());
  CHECK_FALSE(change(r, "alias.x")->refused.empty());
  CHECK(r.any_refused());
  CHECK(serialize(r.result) ==
        "[core]\n\tbare = \"false\"\n[user]\n\temail = \"owner@example.invalid\"\n\tname = \"agent\"\n"
        "[remote \"origin\"]\n\turl = \"https://example.invalid/r\"\n");

  // A removal of a key that runs something is refused too: the host's stays.
  const ConfigReview removed = review_git_config(std::string("[core]\n\tpager = less\n[user]\n\tname = a\n"),
                                                 "[user]\n\tname = b\n");
  REQUIRE(removed.error.empty());
  CHECK(change(removed, "core.pager")->op == ConfigKeyChange::Op::removed);
  CHECK_FALSE(change(removed, "core.pager")->refused.empty());
  CHECK(serialize(removed.result) == "[user]\n\tname = \"b\"\n[core]\n\tpager = \"less\"\n");

  // Nothing changed: no change, the result reads as the host's entries.
  const ConfigReview same = review_git_config(host, host);
  CHECK(same.changes.empty());
  CHECK_FALSE(same.any_refused());

  // The layer's file unparsable, or the host's: refused whole.
  CHECK_FALSE(review_git_config(host, "[core\n").error.empty());
  CHECK_FALSE(review_git_config(std::string("[core\n"), host).error.empty());
  // No host file: every key is added.
  const ConfigReview fresh = review_git_config(std::nullopt, "[user]\n\tname = x\n");
  REQUIRE(fresh.changes.size() == 1);
  CHECK(fresh.changes[0].op == ConfigKeyChange::Op::added);
}
