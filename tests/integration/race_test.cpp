// A writer racing the launch. A racer thread swaps a
// directory and a symlink under one name (renameat2 RENAME_EXCHANGE, so one
// of the two names is always the directory and the other always the link)
// while a bounded number of launches protect that name. No sleeps: the
// racer runs flat out and each launch is whatever it hits.
//
// The promises (docs/hardening.md, "Paths resolved once"):
// - native --ro / --hide / --writable: the path is resolved through no
//   symlink. A symlink there at resolution time refuses the launch (exit
//   125, one line); otherwise the very directory found is what is
//   protected (or made writable) for the whole run, whatever name it moves
//   to. The target of a link swapped in later was never named, and stays
//   as the sandbox shows it otherwise.
// - bwrap --ro-bind P P: bwrap follows symlinks, so the object P named then
//   is protected, never another one in its place.
#include "harness.hpp"
#include "racer.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sys/fd.hpp"

using namespace nsrun_test;
using nsrun::Fd;

namespace {

// At least this many launches, and on until one ran (at most five times
// as many): how the swaps fall is up to the scheduler, and a loaded
// machine can refuse hundreds in a row.
constexpr int launches = 200;
constexpr int launches_max = 5 * launches;

// The command ran (true), or the launch was refused with 125 in one line.
bool ran_or_refused(const RunResult& r) {
  if (r.exit_code == 0) return true;
  check_refusal(r, 125);
  return false;
}

// Runs `launch` (which checks its own run and says whether the command
// ran) at least `launches` times while `racer` swaps. A race that never swapped,
// or that refused every launch, proved nothing: both are failures.
void race(Racer& racer, const std::function<bool()>& launch) {
  int ran = 0, done = 0;
  for (; done < launches_max && (done < launches || ran == 0); ++done)
    if (launch()) ++ran;
  racer.stop();
  INFO(fmt::format("{} ran, {} refused, {} swaps", ran, done - ran, racer.swaps()));
  CHECK(racer.swaps() > 0);
  CHECK(ran > 0);
}

// The workspace: D (a directory holding `marker`), T (a directory the
// command may write), and the two names the racer swaps: "p" (at first D)
// and "q" (at first a symlink to T).
struct Scene {
  TempDir ws{"race"};
  std::string p = ws / "p";
  std::string q = ws / "q";
  std::string t = ws / "t";
  Scene() {
    make_dir(p);
    write_file(p + "/marker", "D\n");
    make_dir(t);
    write_file(t + "/marker", "T\n");
    REQUIRE(::symlink(t.c_str(), q.c_str()) == 0);
  }
};

}  // namespace

TEST_CASE("--ro under a racing writer: the directory found is never written, a symlink is refused",
          "[race][hardening]") {
  require_userns();
  Scene s;
  Fd d = open_dir(s.p);
  Fd t = open_dir(s.t);
  Racer racer(s.ws.path(), "p", "q");
  race(racer, [&] {
    // Writes through both names: one is D, the other the link to T.
    RunResult r = nsrun_test::nsrun({"--ro", s.p, "--", "/bin/sh", "-c", "echo x > \"$1/f\"; echo x > \"$2/f\"; exit 0", "sh",
                         s.p, s.q},
                        at(s.ws));
    const bool ran = ran_or_refused(r);
    // Refused, nothing ran: nothing was written anywhere.
    if (!ran) CHECK_FALSE(has(t.get(), "f"));
    REQUIRE_FALSE(has(d.get(), "f"));
    ::unlinkat(t.get(), "f", 0);
    return ran;
  });
}

TEST_CASE("--hide under a racing writer: the hidden content is never readable", "[race][hardening]") {
  require_userns();
  Scene s;
  const std::string secret = unique_token("secret");
  write_file(s.p + "/secret", secret);
  Racer racer(s.ws.path(), "p", "q");
  race(racer, [&] {
    RunResult r = nsrun_test::nsrun({"--hide", s.p, "--", "/bin/sh", "-c", "cat \"$1/secret\" \"$2/secret\" 2>/dev/null; exit 0",
                         "sh", s.p, s.q},
                        at(s.ws));
    REQUIRE(r.out.find(secret) == std::string::npos);
    return ran_or_refused(r);
  });
}

namespace {

// A writable root W whose name is swapped with a symlink to E, a directory
// outside the workspace that stands for /etc (owned by the caller: as root,
// by root). The command writes into E by its own path.
void writable_race(const std::vector<std::string>& rung) {
  TempDir ws("race-w");
  TempDir etc("race-etc");
  const std::string w = ws / "w";
  make_dir(w);
  REQUIRE(::symlink(etc.path().c_str(), (ws / "v").c_str()) == 0);
  Fd e = open_dir(etc.path());
  Racer racer(ws.path(), "w", "v");
  race(racer, [&] {
    std::vector<std::string> args = rung;
    for (const std::string& a : {std::string("--writable"), w, std::string("--"), std::string("/bin/sh"),
                                 std::string("-c"), std::string("echo x > \"$1/f\"; exit 0"), std::string("sh"),
                                 etc.path()})
      args.push_back(a);
    RunResult r = nsrun_test::nsrun(args, at(ws));
    REQUIRE_FALSE(has(e.get(), "f"));
    return ran_or_refused(r);
  });
}

}  // namespace

TEST_CASE("--writable swapped for a symlink to a stand-in for /etc never makes it writable (namespace rung)",
          "[race][hardening]") {
  require_userns();
  writable_race({});
}

TEST_CASE("--writable swapped for a symlink to a stand-in for /etc never makes it writable (landlock rung)",
          "[race][hardening][landlock]") {
  require_landlock();
  writable_race({"--backend", "landlock"});
}

TEST_CASE("bwrap --ro-bind P P under a racing writer: the object P named is protected, never another in its place",
          "[race][bwrap]") {
  require_userns();
  Scene s;
  Fd d = open_dir(s.p);
  Fd t = open_dir(s.t);
  Racer racer(s.ws.path(), "p", "q");
  // The names keep moving while the command runs, so it looks at objects:
  // it enters each name once (its working directory is then that object,
  // or whatever was mounted on it) and reports the marker it finds there
  // and whether a write there worked.
  const std::string look =
      "for n in \"$1\" \"$2\"; do (cd \"$n\" && m=$(cat marker) && "
      "if echo x > f; then echo \"$m wrote\"; else echo \"$m read-only\"; fi) 2>/dev/null; done; exit 0";
  race(racer, [&] {
    RunResult r = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--bind", s.ws.path(), s.ws.path(), "--ro-bind",
                                     s.p, s.p, "--", "/bin/sh", "-c", look, "sh", s.p, s.q},
                                    at(s.ws));
    if (r.exit_code == 0) {
      INFO(r.out);
      // A protection that landed on the other object shows one marker both
      // read-only (the mount) and writable (the object itself); one that
      // landed nowhere leaves both objects writable.
      const bool d_ro = r.out.find("D read-only") != std::string::npos;
      const bool d_rw = r.out.find("D wrote") != std::string::npos;
      const bool t_ro = r.out.find("T read-only") != std::string::npos;
      const bool t_rw = r.out.find("T wrote") != std::string::npos;
      CHECK_FALSE((d_ro && d_rw));
      CHECK_FALSE((t_ro && t_rw));
      CHECK_FALSE((d_rw && t_rw));
      CHECK_FALSE((has(d.get(), "f") && has(t.get(), "f")));
    } else {
      INFO(r.err);
      CHECK(r.exit_code == 1);
      CHECK(count_lines(r.err) == 1);
      CHECK(r.err.starts_with("bwrap: "));
    }
    ::unlinkat(d.get(), "f", 0);
    ::unlinkat(t.get(), "f", 0);
    return r.exit_code == 0;
  });
}

// The same rules without a racer, each case deterministic.
TEST_CASE("native paths through a symlink are refused before anything runs", "[race][refusal]") {
  require_userns();
  TempDir ws("refuse");
  TempDir etc("refuse-etc");
  make_dir(ws / "real");
  make_dir(ws / "real/sub");
  REQUIRE(::symlink((ws / "real").c_str(), (ws / "link").c_str()) == 0);
  REQUIRE(::symlink(etc.path().c_str(), (ws / "etc").c_str()) == 0);
  const std::string ran = ws / "ran";
  const std::string touch = "touch " + shell_quote(ran);
  for (const auto& [option, path] : std::vector<std::pair<std::string, std::string>>{
           {"--ro", ws / "link"},                 // the last component
           {"--ro", ws / "link/sub"},             // a middle one
           {"--hide", ws / "link"},
           {"--writable", ws / "etc"},            // would grant the link's target
           {"--workspace", ws / "link"}}) {
    INFO(option << " " << path);
    RunResult r = nsrun_test::nsrun({option, path, "--", "/bin/sh", "-c", touch}, at(ws));
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("symlink") != std::string::npos);
    CHECK_FALSE(file_exists(ran));
  }
  // The resolved path is accepted, and protects.
  RunResult r = nsrun_test::nsrun({"--ro", ws / "real", "--", "/bin/sh", "-c", "touch \"$1/f\"", "sh", ws / "real"},
                                  at(ws));
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("Read-only file system") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "real/f"));
}

TEST_CASE("a workspace under the private /tmp is still bound over it", "[race][refusal]") {
  require_userns();
  // The one case where a host path bound onto itself finds another object
  // there by design: the private /tmp, made before the workspace.
  std::string dir = "/tmp/nsrun-race-XXXXXX";
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  REQUIRE(::chmod(dir.c_str(), 0755) == 0);
  RunOptions opts;
  opts.cwd = dir;
  RunResult r = nsrun_test::nsrun({"--", "/bin/sh", "-c", "echo x > f"}, opts);
  const bool written = file_exists(dir + "/f");
  ::unlink((dir + "/f").c_str());
  ::rmdir(dir.c_str());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(written);
}

TEST_CASE("bwrap dialect: symlinks are followed, inside the new root", "[race][refusal][bwrap]") {
  require_userns();
  TempDir ws("follow");
  make_dir(ws / "t");
  REQUIRE(::symlink("t", (ws / "l").c_str()) == 0);
  // --ro-bind of a link onto itself protects the link's target, as in bwrap.
  RunResult r = nsrun_test::nsrun({"bwrap", "--ro-bind", "/", "/", "--bind", ws.path(), ws.path(), "--ro-bind",
                                   ws / "l", ws / "l", "--", "/bin/sh", "-c", "touch \"$1/f\"", "sh", ws / "t"},
                                  at(ws));
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("Read-only file system") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "t/f"));
}
