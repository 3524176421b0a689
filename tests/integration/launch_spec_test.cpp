// The launch's single owner, seen from outside: `nsrun probe` is the launch
// itself stopped where the command would exec (not a copy of its first
// steps), so it meets what the launch meets and leaves what the launch
// leaves, on both rungs, as root and as the unprivileged user.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <dirent.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// The probe's line for `rung` ("namespaces: ..." / "landlock: ...").
std::string rung_line(const std::string& out, std::string_view rung) {
  const std::string head = fmt::format("{}: ", rung);
  std::size_t at = 0;
  while (at < out.size()) {
    const std::size_t end = out.find('\n', at);
    const std::string line = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.starts_with(head)) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return {};
}

}  // namespace

// A working directory that does not exist fails only in the launch (the
// command's chdir, after the mounts): the copy of the first steps the probe
// once was called both rungs usable here.
TEST_CASE("nsrun probe meets what the launch meets: a missing --chdir fails both rungs", "[probe][launch]") {
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    const std::string name = rung == Rung::namespaces ? "namespaces" : "landlock";
    DYNAMIC_SECTION(name) {
      (void)rung_options(rung);  // skips loudly when the rung cannot run here
      TempDir ws("ws");
      const std::string missing = ws / "missing";
      RunResult run_it = nsrun({"--backend", name, "--chdir", missing, "--", "true"}, at(ws));
      INFO(run_it.err);
      REQUIRE(run_it.exit_code == 125);
      RunResult p = nsrun({"probe", "--chdir", missing}, at(ws));
      INFO(p.out << p.err);
      CHECK(p.exit_code == 1);
      const std::string line = rung_line(p.out, name);
      CHECK(line.starts_with(name + ": unusable: failed (chdir "));
      CHECK(line.find(missing) != std::string::npos);
      CHECK(p.out.find("selected: none") != std::string::npos);
    }
  }
}

// The Landlock rung's launch makes a private TMPDIR (the supervisor) and
// removes it; the probe, being that launch, must too, and run nothing.
TEST_CASE("nsrun probe runs the launch up to the exec and leaves nothing behind", "[probe][launch]") {
  require_userns();
  require_landlock();
  TempDir ws("ws");
  TempDir tmp("tmp");
  RunOptions opts = at(ws);
  opts.env = {"TMPDIR=" + tmp.path()};
  RunResult p = nsrun({"probe"}, opts);
  INFO(p.out << p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(rung_line(p.out, "namespaces") == "namespaces: usable");
  CHECK(rung_line(p.out, "landlock").starts_with("landlock: usable (ABI "));
  CHECK(p.err.empty());
  CHECK(entries(tmp.path()).empty());
  CHECK(entries(ws.path()).empty());
}

// `explain --backend landlock` prints the plan of the rung that would run:
// the ruleset (paths with rights, what is refused everywhere) and that
// rung's seccomp profile, never a mount plan it would not run.
TEST_CASE("explain --backend landlock prints the Landlock ruleset, not mounts", "[explain][landlock][launch]") {
  TempDir ws("ws");
  // Without the hidden credentials, which replace the rule for / by rules
  // beside them (docs/hardening.md) where the caller's home has one.
  RunResult ll = nsrun({"explain", "--backend", "landlock", "--hide-defaults", "none", "--", "true"}, at(ws));
  INFO(ll.out << ll.err);
  REQUIRE(ll.exit_code == 0);
  CHECK(ll.out.find("rung: landlock") != std::string::npos);
  CHECK(ll.out.find(fmt::format("landlock allows {}: every handled right (writable root", ws.path())) != std::string::npos);
  CHECK(ll.out.find("landlock allows /: execute read-file read-dir") != std::string::npos);
  CHECK(ll.out.find("refused everywhere, writable roots too: file-metadata, sysv-ipc, posix-mqueue") != std::string::npos);
  CHECK(ll.out.find("\nseccomp: ") != std::string::npos);
  // None of the namespace rung's plan: its namespaces, id maps, mounts.
  for (const char* line : {"\nnamespaces: ", "\nuid_map: ", "\nproc: ", "\nmounts:\n", " bind / -> / "}) {
    INFO(line);
    CHECK(ll.out.find(line) == std::string::npos);
  }

  // The namespace rung's plan is the one with mounts, and no ruleset.
  RunResult ns = nsrun({"explain", "--backend", "namespaces", "--", "true"}, at(ws));
  INFO(ns.out << ns.err);
  REQUIRE(ns.exit_code == 0);
  CHECK(ns.out.find("landlock allows") == std::string::npos);
  CHECK(ns.out.find("\nmounts:\n") != std::string::npos);
  CHECK(ns.out != ll.out);

  // A policy the Landlock rung cannot keep is refused with the item, as
  // the launch would refuse it, rather than explained.
  RunResult no = nsrun({"explain", "--backend", "landlock", "--tmpfs", ws / "t", "--", "true"}, at(ws));
  INFO(no.out << no.err);
  CHECK(no.exit_code == 125);
  CHECK(no.out.empty());
  CHECK(no.err.starts_with("nsrun: --backend landlock: the Landlock rung cannot run this policy: landlock-cannot-express"));
  CHECK(count_lines(no.err) == 1);
}
