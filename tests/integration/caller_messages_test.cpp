// What a person or a harness sees when it gets nsrun's command line wrong:
// the usage when nothing is asked, "did you mean" for a mistyped option, a
// path refusal that names the option and the path to give instead, and a
// note before a run whose workspace the caller cannot write. Each refusal
// still runs nothing and widens nothing: a symlinked path is refused, not
// followed.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("nsrun with no arguments prints its usage on stderr and runs nothing", "[cli][messages]") {
  TempDir ws;
  RunResult r = nsrun({}, at(ws));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.out.empty());
  CHECK(r.err.starts_with("usage: nsrun"));
  CHECK(contains(r.err, "man nsrun"));
  CHECK(contains(r.err, "changes|commit|discard"));
}

TEST_CASE("a mistyped option gets one line naming the option it resembles", "[cli][messages]") {
  TempDir ws;
  const std::string marker = ws / "marker";
  struct Case {
    std::string typed, meant;
  };
  for (const Case& c : {Case{"--workspce", "--workspace"}, Case{"--netwrok", "--network"},
                        Case{"--limit-mem", "--limit-memory"}, Case{"--verdcit", "--verdict"}}) {
    DYNAMIC_SECTION(c.typed) {
      RunResult r = nsrun({c.typed, "x", "--", probe_path(), "write", marker, "ran"}, at(ws));
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(count_lines(r.err) == 1);
      CHECK(r.err.starts_with("nsrun: " + c.typed + ": unknown option; did you mean " + c.meant + "?"));
      CHECK_FALSE(file_exists(marker));
    }
  }
  SECTION("nothing close: no guess") {
    RunResult r = nsrun({"--frobnicate-all", "--", probe_path(), "write", marker, "ran"}, at(ws));
    CHECK(r.exit_code == 125);
    CHECK_FALSE(contains(r.err, "did you mean"));
    CHECK_FALSE(file_exists(marker));
  }
}

TEST_CASE("a symlink or '..' in a caller's path is refused naming the option and the path to give",
          "[cli][messages][symlink]") {
  require_userns();
  TempDir ws("ws");
  TempDir other("other");
  const std::string real = other / "real";
  make_dir(real);
  const std::string link = ws / "link";
  REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
  const std::string marker = real + "/marker";
  const std::vector<std::string> payload{"--", probe_path(), "write", marker, "ran"};

  struct Case {
    std::string name;
    std::vector<std::string> options;
    std::string says;
  };
  const std::vector<Case> cases{
      {"--workspace a symlink", {"--workspace", link}, "--workspace " + link + ": is a symlink to " + real},
      {"--writable a symlink", {"--writable", link}, "--writable " + link + ": is a symlink to " + real},
      {"--ro a symlink", {"--ro", link}, link + ": a symlink in the path"},
      {"--workspace below a symlink", {"--workspace", link + "/."}, "--workspace " + link + "/.: "},
      {"--writable through a symlinked parent", {"--writable", link + "/sub"}, link + " is a symlink to " + real},
      {"--workspace with '..'", {"--workspace", real + "/.."}, "a '..' component: give " + other.path()},
  };
  make_dir(real + "/sub");
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      std::vector<std::string> args = c.options;
      args.insert(args.end(), payload.begin(), payload.end());
      RunResult r = nsrun(args, at(ws));
      INFO("nsrun " << join(args));
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(count_lines(r.err) == 1);
      CHECK(contains(r.err, c.says));
      // The refusal widened nothing: the symlink's target got no write.
      CHECK_FALSE(file_exists(marker));
    }
  }
  SECTION("the target given instead runs") {
    RunResult r = nsrun({"--workspace", real, "--", probe_path(), "write", marker, "ran"}, at(ws));
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(read_file(marker) == "ran");
  }
}

TEST_CASE("a workspace the caller cannot write gets a note before the run", "[cli][messages]") {
  require_userns();
  TempDir ws;
  SECTION("a writable workspace: no note") {
    RunResult r = nsrun({"--", probe_path(), "getpid"}, at(ws));
    CHECK(r.exit_code == 0);
    CHECK_FALSE(contains(r.err, "note: the workspace"));
  }
  SECTION("another user's directory") {
    // Root may write every directory; only an unprivileged caller sees it.
    if (::geteuid() == 0) SKIP("as root every directory is writable: the unprivileged run covers this");
    RunResult r = nsrun({"--workspace", "/usr", "--", probe_path(), "getpid"}, at(ws));
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, "nsrun: note: the workspace /usr is not writable by uid " + std::to_string(::geteuid())));
    CHECK(contains(r.err, "--workspace-mode cow"));
  }
}
