// git config files' copies (policy/settings_copy.hpp): every spelling of a
// secret the test knows is left out, every ordinary setting kept, and a
// file without a secret gets no copy at all.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "policy/settings_copy.hpp"

using namespace nsrun;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string ordinary = "[user]\n\tname = Ada\n\temail = ada@example.org\n\tsigningKey = ABCD1234\n"
                             "[core]\n\teditor = vim\n[alias]\n\tst = status -sb\n"
                             "[url \"git@github.com:\"]\n\tinsteadOf = https://github.com/\n"
                             "[url \"ssh://git@example.org/\"]\n\tpushInsteadOf = https://example.org/\n";

}  // namespace

TEST_CASE("git config copy: a file without a secret gets none", "[settings-copy]") {
  CHECK_FALSE(git_config_copy(ordinary));
  CHECK_FALSE(git_config_copy(""));
}

TEST_CASE("git config copy: every spelling of a secret is left out, the settings kept", "[settings-copy]") {
  const std::string spellings[] = {
      "[credential]\n\thelper = \"!f() { echo password=SECRET; }; f\"\n",
      "[Credential]\nHELPER=store --token SECRET\n",
      "[credential \"https://example.org\"]\n\thelper = /usr/local/bin/SECRET\n",
      "[credential.example]\n\thelper = SECRET\n",
      "[http \"https://x\"]\n\textraHeader = Authorization: Bearer SECRET\n",
      "[http]\nextraheader=SECRET\n",
      "[HTTP \"https://x\"] ExtraHeader = SECRET # a comment\n",
      "[url \"https://user:SECRET@github.com/\"]\n\tinsteadOf = https://github.com/\n",
      "[url \"https://SECRET@github.com/\"]\n\tinsteadOf = https://github.com/\n",
      "[remote \"origin\"]\n\turl = https://u:SECRET@example.org/r.git\n",
      "[remote \"origin\"]\n\turl = u:SECRET@example.org:r.git\n",
      "[github]\n\ttoken = SECRET\n",
      "[github]\n\tToKeN=SECRET ; a comment\n",
      "[hub]\n\toauthtoken = SECRET\n",
      "[sendemail]\n\tsmtpPass = SECRET\n",
      "[sendemail]\n\tsmtppass = SEC\\\nRET\n",
      "[gitlab]\n\ttoken = \"SEC\" \"RET\"\n",
      "[alias]\n\tpub = \"!curl -H 'PRIVATE-TOKEN: SECRET' x\"\n",
      "[alias]\n\tp = !gh auth --with ghp_SECRET\n",
      "[core]\n\taskPass = /bin/SECRET\n",
      "[http]\n\tproxy = http://u:SECRET@proxy:3128\n",
      "[http]\n\tcookieFile = /home/u/SECRET\n",
      "[x]\n\tpassword = \\\n  SECRET\n",
  };
  for (const auto& s : spellings) {
    INFO(s);
    auto copy = git_config_copy(ordinary + s);
    REQUIRE(copy);
    CHECK_FALSE(has(copy->text, "SECRET"));
    CHECK_FALSE(has(copy->text, "SEC"));
    CHECK(copy->dropped >= 1);
    // What git reads from the copy: the ordinary settings, every one.
    ConfigParse kept = parse_git_config(copy->text);
    REQUIRE(kept.error.empty());
    CHECK(kept.entries == parse_git_config(ordinary).entries);
  }
}

TEST_CASE("git config copy: a file the reader refuses keeps nothing", "[settings-copy]") {
  for (const std::string& bad : {std::string("[user]\n\tname = Ada\n[core\n\tSECRET = 1\n"),
                                std::string("[user]\n\tname = \"SECRET\n"), std::string("[user]\n\tname = a\0SECRET", 22),
                                std::string("password = SECRET\n"), std::string("[credential.https://x]\n\thelper = SECRET\n"), std::string("[x]\n\tk = \\qSECRET\n")}) {
    INFO(bad);
    auto copy = git_config_copy(bad);
    REQUIRE(copy);
    CHECK_FALSE(has(copy->text, "SECRET"));
    CHECK(parse_git_config(copy->text).entries.empty());
  }
  auto huge = git_config_copy("[user]\n\tname = " + std::string(max_config_bytes, 'a') + "SECRET\n");
  REQUIRE(huge);
  CHECK_FALSE(has(huge->text, "SECRET"));
}

namespace {

ConfigEntry entry(std::string section, std::string subsection, std::string name, std::string value) {
  ConfigEntry e;
  e.section = std::move(section);
  e.has_subsection = !subsection.empty();
  e.subsection = std::move(subsection);
  e.name = std::move(name);
  e.value = std::move(value);
  return e;
}

}  // namespace

TEST_CASE("git config copy: what is left out is said, by key", "[settings-copy]") {
  CHECK(git_config_secret(entry("user", "", "signingkey", "ABCD")).empty());
  CHECK(git_config_secret(entry("user", "", "name", "Ada")).empty());
  CHECK(git_config_secret(entry("url", "git@github.com:", "insteadof", "https://github.com/")).empty());
  // Git's own helpers and a user name are settings: git goes on working on
  // the Landlock rung, which can only hide a file whole.
  CHECK(git_config_secret(entry("credential", "", "helper", "store")).empty());
  CHECK(git_config_secret(entry("credential", "", "helper", "cache --timeout 900")).empty());
  CHECK(git_config_secret(entry("credential", "", "helper", "store --file=/home/u/.creds")).empty());
  CHECK(git_config_secret(entry("credential", "", "helper", "")).empty());
  CHECK(git_config_secret(entry("credential", "https://example.org", "username", "ada")).empty());
  CHECK_FALSE(git_config_secret(entry("credential", "", "helper", "!f() { echo password=x; }; f")).empty());
  CHECK_FALSE(git_config_secret(entry("credential", "", "helper", "store --token abc")).empty());
  CHECK_FALSE(git_config_secret(entry("credential", "", "helper", "/opt/helper abc")).empty());
  // An include names a path; the file is looked at by the same rule.
  CHECK(git_config_secret(entry("includeif", "onbranch:x", "path", "x")).empty());
  CHECK(git_config_secret(entry("include", "", "path", "~/.gitconfig-work")).empty());
  CHECK_FALSE(git_config_secret(entry("url", "https://tok@github.com/", "insteadof", "https://github.com/")).empty());
}

TEST_CASE("git config copy: the files its includes name are found, as written", "[settings-copy]") {
  const auto inc = git_config_includes("[include]\n\tpath = a.inc\n[includeIf \"gitdir:~/w/\"]\n\tPATH = ~/b.inc\n"
                                       "[user]\n\tpath = not-an-include\n[include]\n\tpath\n");
  CHECK(inc == std::vector<std::string>{"a.inc", "~/b.inc"});
  CHECK(git_config_includes("[include\n\tpath = x\n").empty());
}
