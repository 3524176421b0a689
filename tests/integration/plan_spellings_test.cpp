// The mount plan gives one mount table whatever the spelling of a path
// (slashes, ".", ".."), runs and collapses tens of thousands of repeated
// or distinct binds, and refuses a path with a NUL byte with nothing run.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// The command's mount table for the workspace's entries: mount point,
// per-mount options, file system type (ids and peers left out).
std::string mounts_below(const std::string& out, const std::string& ws) {
  std::string keep;
  std::size_t at = 0;
  while (at < out.size()) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    at = end + 1;
    std::vector<std::string> f;
    for (std::size_t i = 0; i < line.size();) {
      const std::size_t sp = std::min(line.find(' ', i), line.size());
      f.push_back(line.substr(i, sp - i));
      i = sp + 1;
    }
    if (f.size() < 6 || !f[4].starts_with(ws)) continue;
    const auto dash = std::find(f.begin(), f.end(), "-");
    keep += f[3] + " " + f[4] + " " + f[5] + " " + (dash + 1 < f.end() ? *(dash + 1) : "") + "\n";
  }
  return keep;
}

}  // namespace

// mark_host_views() and collapse_duplicates() reason only about plain
// paths; spellings with trailing slashes, "." and ".." are other steps.
// Whatever the spelling, the last word on a path wins, as it did: the
// mount table inside is the one the plain spelling gives.
TEST_CASE("--ro/--hide/--tmpfs spelled with slashes, . and .. give the plain spelling's mount table",
          "[plan-spellings][plan]") {
  require_userns();
  TempDir ws("plan-spellings-plan");
  make_dir(ws / "d");
  make_dir(ws / "d/s");
  write_file(ws / "d/s/f", "f\n");
  const std::string w = ws.path();
  // The table, then what the command sees at d.
  const std::string show =
      "cat /proc/self/mountinfo; echo ==; cat d/s/f 2>&1; ls d; touch d/new 2>/dev/null && echo writable; exit 0";
  struct Pair {
    std::vector<std::string> odd, plain;
  };
  const std::vector<Pair> pairs = {
      {{"--ro", w + "/d/", "--hide", w + "/./d", "--ro", w + "/d/."}, {"--ro", w + "/d", "--hide", w + "/d", "--ro", w + "/d"}},
      {{"--hide", w + "/d//", "--ro", w + "/./d", "--hide", w + "/d/s/"}, {"--hide", w + "/d", "--ro", w + "/d", "--hide", w + "/d/s"}},
      {{"--tmpfs", w + "/d", "--ro", w + "/d/", "--tmpfs", w + "/d/."}, {"--tmpfs", w + "/d", "--ro", w + "/d", "--tmpfs", w + "/d"}},
      {{"--ro", w + "/d", "--ro", w + "/d/", "--ro", w + "/d//", "--ro", w + "/d/./"}, {"--ro", w + "/d"}},
      {{"--ro", w + "/d/s", "--hide", w + "/d/", "--ro", w + "/d/s/"}, {"--ro", w + "/d/s", "--hide", w + "/d", "--ro", w + "/d/s"}},
  };
  // The last mount on `path` in a mounts_below() table.
  auto last_on = [](const std::string& table, const std::string& path) {
    std::string last;
    for (std::size_t at = 0; at < table.size();) {
      const std::size_t end = table.find('\n', at);
      const std::string line = table.substr(at, end - at);
      if (line.find(" " + path + " ") != std::string::npos) last = line;
      at = end + 1;
    }
    return last;
  };
  // ".." is refused outright (one line, nothing run): not a spelling the
  // plan has to reason about.
  const RunResult dots = nsrun_test::nsrun({"--ro", w + "/d/s/..", "--", "/bin/sh", "-c", "touch d/new"}, at(ws));
  CHECK(dots.exit_code == 125);
  CHECK(count_lines(dots.err) == 1);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    DYNAMIC_SECTION("pair " << i) {
      std::vector<std::string> a = pairs[i].odd, b = pairs[i].plain;
      for (auto* v : {&a, &b}) v->insert(v->end(), {"--", "/bin/sh", "-c", show});
      const RunResult ra = nsrun_test::nsrun(a, at(ws)), rb = nsrun_test::nsrun(b, at(ws));
      INFO(ra.out << ra.err << "\n----\n" << rb.out << rb.err);
      CHECK(ra.exit_code == rb.exit_code);
      if (ra.exit_code != 0) continue;
      REQUIRE(ra.out.find("==\n") != std::string::npos);
      REQUIRE(rb.out.find("==\n") != std::string::npos);
      // What the command sees at d: contents, whether writable.
      CHECK(ra.out.substr(ra.out.find("==\n")) == rb.out.substr(rb.out.find("==\n")));
      // The top mount on d and on d/s, as the plain spelling gives them
      // (the plain one collapses repeats, so it may hold fewer below).
      const std::string ma = mounts_below(ra.out, w), mb = mounts_below(rb.out, w);
      CHECK(last_on(ma, w + "/d") == last_on(mb, w + "/d"));
      CHECK(last_on(ma, w + "/d/s") == last_on(mb, w + "/d/s"));
    }
  }
  CHECK_FALSE(file_exists(ws / "d/new"));
}

// Fifty thousand binds of one directory (interleaved with a hide of it):
// the hash set finds the repeats, the plan stays linear, the launch runs
// and its mount table holds the workspace's mounts of d once each way.
// Given as a --policy file (the argument list would pass ARG_MAX).
TEST_CASE("50,000 repeated binds and hides of one path run, and collapse", "[plan-spellings][plan]") {
  require_userns();
  TempDir ws("plan-spellings-many");
  make_dir(ws / "d");
  write_file(ws / "d/f", "f\n");
  const std::string d = ws / "d";
  std::string mounts;
  for (int i = 0; i < 50000; ++i) {
    if (!mounts.empty()) mounts += ",";
    mounts += i % 1000 == 500 ? fmt::format("{{\"kind\":\"hide\",\"dest\":\"{}\"}}", d)
                              : fmt::format("{{\"kind\":\"ro-bind\",\"source\":\"{}\",\"dest\":\"{}\"}}", d, d);
  }
  write_file(ws / "p.json", "{\"mounts\":[" + mounts + "]}");
  RunResult r = nsrun_test::nsrun({"--policy", ws / "p.json", "--", "/bin/sh", "-c", "cat /proc/self/mountinfo; cat d/f"}, at(ws));
  INFO(r.err.substr(0, 500));
  REQUIRE(r.exit_code == 0);
  // The last word is a ro-bind: d's file shows.
  CHECK(r.out.ends_with("f\n"));
  const std::string table = mounts_below(r.out, ws.path());
  std::size_t on_d = 0;
  for (std::size_t at = 0; (at = table.find(" " + d + " ", at)) != std::string::npos; ++at) ++on_d;
  INFO(table);
  // Each hide and the run of binds after it: three mounts (the first bind
  // after a hide is kept beside the last), whatever
  // the length of the run: 151, not 50,000.
  CHECK(on_d <= 3 * 50 + 1);
}

// Ten thousand distinct binds (the tree of mark_host_views, the hash
// set's every entry new, 30,000 fds through the batched closes): the
// launch runs with each one read-only. By hand, 50,000 ran the same way
// (2.7 s), and 100,500, past the kernel's fs.mount-max, were refused with
// 125 and one line ("mount ...: No space left on device"); here the
// directories alone would take half a minute of a shared disk.
TEST_CASE("10,000 distinct binds run, each read-only", "[plan-spellings][plan][binds]") {
  require_userns();
  TempDir ws("plan-spellings-distinct");
  make_dir(ws / "b");
  std::string mounts;
  for (int i = 0; i < 10000; ++i) {
    const std::string d = ws / fmt::format("b/{}", i);
    make_dir(d);
    if (!mounts.empty()) mounts += ",";
    mounts += fmt::format("{{\"kind\":\"ro-bind\",\"source\":\"{0}\",\"dest\":\"{0}\"}}", d);
  }
  write_file(ws / "p.json", "{\"mounts\":[" + mounts + "]}");
  const std::string prefix = " " + ws / "b/";
  RunResult r = nsrun_test::nsrun({"--policy", ws / "p.json", "--", "/bin/sh", "-c",
                                   "grep -c \"$0\" /proc/self/mountinfo; touch b/0/x b/9999/x 2>/dev/null; exit 0",
                                   prefix},
                                  at(ws));
  INFO(r.err.substr(0, 500));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "10000\n");
  CHECK_FALSE(file_exists(ws / "b/0/x"));
  CHECK_FALSE(file_exists(ws / "b/9999/x"));
}

// A NUL byte cannot come in argv; a policy file can carry one (\u0000):
// refused with 125 and one line, nothing run.
TEST_CASE("a path with a NUL byte in a policy file is refused, nothing run", "[plan-spellings][plan][input]") {
  TempDir ws("plan-spellings-nul");
  make_dir(ws / "d");
  const std::string mark = ws / "ran";
  for (const std::string& m :
       {fmt::format("{{\"kind\":\"ro-bind\",\"source\":\"{0}\\u0000x\",\"dest\":\"{0}\"}}", ws / "d"),
        fmt::format("{{\"kind\":\"ro-bind\",\"source\":\"{0}\",\"dest\":\"{0}\\u0000/x\"}}", ws / "d"),
        fmt::format("{{\"kind\":\"hide\",\"dest\":\"{0}\\u0000\"}}", ws / "d")}) {
    write_file(ws / "p.json", "{\"mounts\":[" + m + "]}");
    RunResult r = nsrun_test::nsrun({"--policy", ws / "p.json", "--", "/bin/sh", "-c", "touch \"$1\"", "sh", mark}, at(ws));
    INFO(m << "\n" << r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.starts_with("nsrun: "));
    CHECK_FALSE(file_exists(mark));
  }
}
