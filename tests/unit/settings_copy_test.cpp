// The copy of a settings file that holds credentials among its settings
// (src/policy/settings_copy.hpp): every spelling of a secret the test knows
// is left out, ordinary settings are kept as they were.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "policy/settings_copy.hpp"

using namespace nsrun;

namespace {

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("settings copy: .npmrc keeps its settings and loses every credential line", "[settings-copy]") {
  const std::string npmrc =
      "fund=false\n"
      "nodedir = /opt/node\n"
      "@corp:registry=https://npm.corp.example/\n"
      "registry=https://registry.npmjs.org/\n"
      "//registry.npmjs.org/:_authToken=SECRET-1\n"
      "//npm.corp.example/:_password=SECRET-2\n"
      "_auth=SECRET-3\n"
      "_authToken = SECRET-4\n"
      "  _AUTHTOKEN=SECRET-5\n"
      "email=SECRET-6@example.com\n"
      "username=SECRET-7\n"
      "keyfile=/home/u/SECRET-8.pem\n"
      "key=-----BEGIN SECRET-9\n"
      "cert=SECRET-10\n"
      "otp=SECRET-11\n"
      "always-auth=true\n"
      "registry=https://u:SECRET-12@registry.example/\n"
      "proxy=http://SECRET-13@proxy.example:3128\n"
      "; _authToken=SECRET-14 (a comment)\n"
      "# SECRET-15\n"
      "; fund=SECRET-19 (a commented-out setting)\n"
      "SECRET-16 on a line of its own\n"
      "save-exact=true\r\n"
      "tag=SECRET-17\r\n"
      "[section]\n"
      "fund=SECRET-18\n";
  auto copy = settings_copy(".npmrc", npmrc);
  REQUIRE(copy);
  INFO(copy->text);
  CHECK_FALSE(has(copy->text, "SECRET"));
  CHECK(has(copy->text, "\nfund=false\n"));
  CHECK(has(copy->text, "\nnodedir = /opt/node\n"));
  CHECK(has(copy->text, "\n@corp:registry=https://npm.corp.example/\n"));
  CHECK(has(copy->text, "\nregistry=https://registry.npmjs.org/\n"));
  CHECK(copy->text.starts_with("; a copy by nsrun: "));
  CHECK(copy->dropped == 22);
}

TEST_CASE("settings copy: .npmrc with a NUL byte or a huge line keeps nothing secret", "[settings-copy]") {
  std::string npmrc = "fund=false\n";
  using namespace std::string_literals;
  npmrc += "tag=x\0_authToken=SECRET\n"s;
  npmrc += "x=" + std::string(100000, 'a') + "\n";
  auto copy = settings_copy(".npmrc", npmrc);
  REQUIRE(copy);
  CHECK_FALSE(has(copy->text, "SECRET"));
  CHECK(has(copy->text, "fund=false\n"));
}

TEST_CASE("settings copy: .pypirc keeps only its index servers and repositories", "[settings-copy]") {
  const std::string pypirc =
      "[distutils]\n"
      "index-servers =\n"
      "    pypi\n"
      "    corp\n"
      "    password=SECRET-1\n"
      "\n"
      "[pypi]\n"
      "username = __token__\n"
      "password = pypi-SECRET-2\n"
      "\n"
      "[corp]\n"
      "repository = https://pypi.corp.example/simple/\n"
      "repository: https://u:SECRET-3@x.example/\n"
      "username = SECRET-4\n"
      "password = SECRET-5\n"
      "token=SECRET-6\n";
  auto copy = settings_copy(".pypirc", pypirc);
  REQUIRE(copy);
  INFO(copy->text);
  CHECK_FALSE(has(copy->text, "SECRET"));
  CHECK(has(copy->text, "[distutils]\nindex-servers =\n    pypi\n    corp\n[pypi]\n[corp]\n"
                        "repository = https://pypi.corp.example/simple/\n"));
}

TEST_CASE("settings copy: only .npmrc and .pypirc get one", "[settings-copy]") {
  CHECK(has_settings_copy(".npmrc"));
  CHECK(has_settings_copy(".pypirc"));
  CHECK_FALSE(has_settings_copy(".netrc"));
  CHECK_FALSE(has_settings_copy("npmrc"));
  CHECK_FALSE(settings_copy(".git-credentials", "x=y\n"));
}
