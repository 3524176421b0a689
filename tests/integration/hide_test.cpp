// `--hide` covers a path, not an inode. A hard link to a
// hidden file from outside the hidden directory still reaches its contents;
// no mount can change that, so `nsrun explain` warns about such files and
// the documentation says it next to `--hide`. These tests pin both: the
// bypass is real (so the warning is not crying wolf), and explain names it.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>

using namespace nsrun_test;

TEST_CASE("--hide: a hard link from outside reaches the hidden file, and explain warns about it", "[hide]") {
  require_userns();
  TempDir ws("hide");
  make_dir(ws / "secrets");
  write_file(ws / "secrets/key", "hidden-contents");
  write_file(ws / "secrets/lonely", "one-name");
  REQUIRE(::link((ws / "secrets/key").c_str(), (ws / "key-link").c_str()) == 0);

  // The hidden path itself is covered...
  RunResult direct = nsrun({"--hide", ws / "secrets", "--", probe_path(), "read", ws / "secrets/key"}, at(ws));
  CHECK(direct.exit_code == 1);
  CHECK(chomp(direct.out) == "error ENOENT");
  // ...its other name is not: the documented limit.
  RunResult linked = nsrun({"--hide", ws / "secrets", "--", probe_path(), "read", ws / "key-link"}, at(ws));
  CHECK(linked.exit_code == 0);
  CHECK(linked.out == "hidden-contents");

  RunResult explained = nsrun({"explain", "--hide", ws / "secrets", "--", "true"}, at(ws));
  INFO(explained.out << explained.err);
  REQUIRE(explained.exit_code == 0);
  CHECK(explained.out.find("warning: --hide " + ws / "secrets" + ": key has 2 links") != std::string::npos);
  CHECK(explained.out.find("lonely") == std::string::npos);

  // No link, no warning.
  REQUIRE(::unlink((ws / "key-link").c_str()) == 0);
  RunResult quiet = nsrun({"explain", "--hide", ws / "secrets", "--", "true"}, at(ws));
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.out.find("warning:") == std::string::npos);
}
