// The Landlock rung's rules, in the order they are added, for a policy with
// hidden credentials (the listings' rules), a terminal, the workspace and
// a --writable root: every path, right and flag pinned, so that a cheaper
// way of making the ruleset (the rule paths built without a format, the
// mount list expanded once) loads exactly the rules it loaded before.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"

namespace {

using namespace nsrun;
using namespace nsrun::landlock;

struct Expected {
  std::string path;
  uint64_t access;
  bool optional;
  bool no_symlinks;
  bool directory;
  bool file;
};

}  // namespace

TEST_CASE("the Landlock ruleset adds the same rules, in the same order, for hidden credentials and writable roots",
          "[unit][landlock]") {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/srv/ws";
  p.writable = {"/srv/extra"};
  p.hidden_paths = {"/home/u/.npmrc", "/home/u/.ssh/"};
  Inputs in;
  in.terminals = {"/dev/pts/3", "/dev/tty"};
  in.listings = {{"/", {"home/", "usr/", "vmlinuz"}},
                 {"/home", {"u/", "v/"}},
                 {"/home/u", {".npmrc", ".ssh/", ".profile", ".cache/"}}};
  auto r = make_ruleset(p, 6, in);
  REQUIRE(r);
  const uint64_t all = r->handled_fs;
  const uint64_t reading = fs::read_file | fs::read_dir | fs::execute;
  const uint64_t device = (fs::read_file | fs::write_file | fs::truncate | fs::ioctl_dev) & all;
  const bool no_links = !p.follow_symlinks;
  const std::vector<Expected> expected{
      {"/", fs::read_dir, false, false, true, false},
      {"/usr", reading, true, true, true, false},
      {"/vmlinuz", reading, true, true, false, true},
      {"/home", fs::read_dir, false, false, true, false},
      {"/home/v", reading, true, true, true, false},
      {"/home/u", fs::read_dir, false, false, true, false},
      {"/home/u/.profile", reading, true, true, false, true},
      {"/home/u/.cache", reading, true, true, true, false},
      {"/dev/null", device, true, false, false, false},
      {"/dev/zero", device, true, false, false, false},
      {"/dev/full", device, true, false, false, false},
      {"/dev/tty", device, true, false, false, false},
      {"/dev/pts/3", device, true, false, false, false},
      {"/srv/ws", all, false, no_links, false, false},
      {"/srv/extra", all, false, no_links, false, false},
  };
  REQUIRE(r->rules.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const PathRule& got = r->rules[i];
    const Expected& want = expected[i];
    INFO(i << ": " << want.path);
    CHECK(got.path == want.path);
    CHECK(got.access == want.access);
    CHECK(got.optional == want.optional);
    CHECK(got.no_symlinks == want.no_symlinks);
    CHECK(got.directory == want.directory);
    CHECK(got.file == want.file);
    CHECK_FALSE(got.one_link);
  }
}
