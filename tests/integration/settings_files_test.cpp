// Settings files as a person meets them (docs/settings.md): the user's
// ~/.config/nsrun/settings.json shapes a run; `nsrun policy
// --explain-source` says where each value came from; the workspace's
// .nsrun.json, which the sandboxed command can write, may only narrow,
// and is never read through a symlink, a second link, a FIFO or at any
// size. Every refusal is one line, exit 125, and runs nothing.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// A home of the test's own, its settings file, and a workspace.
struct World {
  TempDir home{"home"};
  TempDir ws{"ws"};
  std::string settings() const { return home / ".config/nsrun/settings.json"; }
  void user_settings(std::string_view text) const {
    make_dir(home / ".config");
    make_dir(home / ".config/nsrun");
    write_file(settings(), text);
  }
  RunOptions opts() const {
    RunOptions o = at(ws);
    o.env = {"HOME=" + home.path(), "XDG_CONFIG_HOME=" + home.path() + "/.config"};
    return o;
  }
};

}  // namespace

TEST_CASE("settings: the user's file shapes the run, and --explain-source names it", "[settings]") {
  require_userns();
  World w;
  make_dir(w.ws / "keep");
  w.user_settings(R"({"home": "ro", "filesystem": {"read_only": ["${WORKSPACE}/keep"]}})");

  RunResult explained = nsrun({"policy", "--explain-source"}, w.opts());
  INFO("stderr: " << explained.err);
  REQUIRE(explained.exit_code == 0);
  CHECK(contains(explained.out, w.settings() + ": home = ro (as --home ro)\n"));
  CHECK(contains(explained.out,
                 w.settings() + ": filesystem.read_only[0] = " + (w.ws / "keep") + " (as --ro " + (w.ws / "keep") + ")\n"));

  RunResult blocked = nsrun({"--", probe_path(), "write", w.ws / "keep/f", "x"}, w.opts());
  INFO("stderr: " << blocked.err);
  CHECK(blocked.exit_code != 0);
  CHECK(contains(blocked.out, "EROFS"));
  CHECK_FALSE(file_exists(w.ws / "keep/f"));
  RunResult written = nsrun({"--", probe_path(), "write", w.ws / "f", "x"}, w.opts());
  CHECK(written.exit_code == 0);
  CHECK(read_file(w.ws / "f") == "x");

  // --no-settings: the file is not read; --settings FILE: another one.
  RunResult plain = nsrun({"--no-settings", "--home", "ro", "--", probe_path(), "write", w.ws / "keep/f", "x"}, w.opts());
  CHECK(plain.exit_code == 0);
  CHECK(file_exists(w.ws / "keep/f"));
}

TEST_CASE("settings: an unknown key in the user's file is one line naming the file and the key", "[settings]") {
  World w;
  w.user_settings(R"({"filesystem": {"writeable": ["/srv"]}})");
  const std::string marker = w.ws / "marker";
  RunResult r = nsrun({"--", probe_path(), "write", marker, "ran"}, w.opts());
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err == "nsrun: " + w.settings() +
                     ": filesystem.writeable: unknown key; did you mean filesystem.writable? (the keys: "
                     "docs/settings.md)\n");
  CHECK_FALSE(file_exists(marker));
  // --help still answers.
  CHECK(nsrun({"--help"}, w.opts()).exit_code == 0);
}

TEST_CASE("settings: a workspace file that widens is refused by its key, even when the command wrote it",
          "[settings]") {
  require_userns();
  World w;
  w.user_settings(R"({"home": "ro", "network": {"mode": "none"}})");
  const std::string marker = w.ws / "marker";
  // The attack: a sandboxed command writes the next launch's settings.
  RunResult planted = nsrun({"--", probe_path(), "write", w.ws / ".nsrun.json",
                             R"({"network": {"mode": "share", "allow": ["evil.example"]}})"},
                            w.opts());
  REQUIRE(planted.exit_code == 0);
  RunResult next = nsrun({"--", probe_path(), "write", marker, "ran"}, w.opts());
  INFO("stderr: " << next.err);
  CHECK(next.exit_code == 125);
  CHECK(count_lines(next.err) == 1);
  CHECK(next.err == "nsrun: " + (w.ws / ".nsrun.json") +
                        ": network.mode: 'share' widens what the user's settings and nsrun's defaults allow; a "
                        "workspace's settings may only narrow (give --network yourself to mean it)\n");
  CHECK_FALSE(file_exists(marker));

  write_file(w.ws / ".nsrun.json", R"({"filesystem": {"writable": ["/"]}})");
  next = nsrun({"--", probe_path(), "write", marker, "ran"}, w.opts());
  CHECK(next.exit_code == 125);
  CHECK(next.err.starts_with("nsrun: " + (w.ws / ".nsrun.json") + ": filesystem.writable[0]: a workspace's settings "
                             "may only narrow"));
  CHECK_FALSE(file_exists(marker));

  // Narrowing applies: the workspace made read-only by its own file.
  write_file(w.ws / ".nsrun.json", R"({"mode": "read-only"})");
  next = nsrun({"--", probe_path(), "write", marker, "ran"}, w.opts());
  CHECK(next.exit_code != 0);
  CHECK(contains(next.out, "EROFS"));
  CHECK_FALSE(file_exists(marker));
}

TEST_CASE("settings: a workspace file is read through no symlink, from no second link, FIFO or large file",
          "[settings]") {
  World w;
  const std::string file = w.ws / ".nsrun.json";
  const std::string marker = w.ws / "marker";
  TempDir outside("outside");
  write_file(outside / "narrow.json", R"({"mode": "read-only"})");
  auto refused = [&](std::string_view why) {
    RunResult r = nsrun({"--", probe_path(), "write", marker, "ran"}, w.opts());
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.starts_with("nsrun: " + file + ": "));
    CHECK(contains(r.err, why));
    CHECK_FALSE(file_exists(marker));
  };
  SECTION("a symlink at the name") {
    REQUIRE(::symlink((outside / "narrow.json").c_str(), file.c_str()) == 0);
    refused("a symlink is on its way");
  }
  SECTION("a hard link to a file elsewhere") {
    REQUIRE(::link((outside / "narrow.json").c_str(), file.c_str()) == 0);
    refused("has 2 hard links");
  }
  SECTION("a FIFO: refused at once, never waited on") {
    REQUIRE(::mkfifo(file.c_str(), 0644) == 0);
    refused("not a regular file");
  }
  SECTION("more than 64 KiB") {
    write_file(file, "{\"mode\": \"read-only\"" + std::string(70 * 1024, ' ') + "}");
    refused("larger than 65536 bytes");
  }
  SECTION("a directory at the name") {
    make_dir(file);
    refused("not a regular file");
  }
}
