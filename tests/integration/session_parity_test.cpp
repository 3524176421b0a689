// A session keeps what a one-shot launch with the same options keeps, for
// every exec (docs/sessions.md): a rename onto a protected path that a
// mount holds reads EROFS (the protect guard), --network-log gets the
// egress decisions of the whole session, and where the kernel refuses the
// home's overlay the session starts with the caches redirected, as a
// launch does. Each asserts what the host sees.
#include "harness.hpp"
#include "session_support.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace nsrun_test;

TEST_CASE("session: a rename onto a protected .git/config reads EROFS in every exec, as in a launch; the host's "
          "file is unchanged",
          "[session]") {
  require_userns();
  Session s;
  make_git_workspace(s);
  require_started(s.start());
  const std::string try_mv = "echo x > new$1; if mv new$1 .git/config 2>&1; then echo moved; fi";
  for (const char* round : {"1", "2"}) {
    INFO(round);
    RunResult r = s.exec({"sh", "-c", try_mv, "sh", round});
    INFO(r.out << r.err);
    CHECK(r.out.find("Read-only file system") != std::string::npos);
    CHECK(r.out.find("Device or resource busy") == std::string::npos);
    CHECK(r.out.find("moved") == std::string::npos);
  }
  // Other renames run as they would have.
  CHECK(s.exec({"sh", "-c", "echo a > a && mv a b && cat b"}).out == "a\n");
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  CHECK(read_file(s.ws / ".git/config") == "[core]\n");
}

TEST_CASE("session: --network-log gets the egress decisions of every exec of the session", "[session]") {
  require_userns();
  if (::access("/usr/bin/curl", X_OK) != 0) unavailable("curl", "/usr/bin/curl is not installed");
  Session s;
  const std::string log = s.dirs / "net.log";
  write_file(log, "stale\n");
  require_started(s.start({"--network", "proxy", "--allow-host", "allowed.test", "--network-log", log}));
  // No network is needed: the proxy refuses both hosts itself.
  for (const char* host : {"first-refused.test", "second-refused.test"}) {
    RunResult r = s.exec({"sh", "-c", std::string("/usr/bin/curl -s -o /dev/null -w '%{http_code}' -x \"$HTTP_PROXY\" "
                                                  "http://") + host + "/"});
    INFO(r.out << r.err);
    CHECK(r.out == "403");
  }
  REQUIRE(s.run_nsrun({"session", "stop", s.name}).exit_code == 0);
  const std::string text = read_file(log);
  INFO(text);
  CHECK(text.find("stale") == std::string::npos);
  CHECK(text.find(R"("host":"first-refused.test")") != std::string::npos);
  CHECK(text.find(R"("host":"second-refused.test")") != std::string::npos);
  CHECK(text.find(R"("decision":"denied","reason":"blocked-by-allowlist")") != std::string::npos);
}

TEST_CASE("session: where the home's overlay is refused (a home on a stacked overlay) the session starts with the "
          "caches redirected, as a launch does",
          "[session]") {
  require_userns();
  if (::access("/usr/bin/unshare", X_OK) != 0) unavailable("unshare", "/usr/bin/unshare (util-linux) is not installed");
  TempDir t("sp-stack");
  TempDir ws("sp-ws");
  for (const char* d : {"l1", "u1", "w1", "m1", "u2", "w2", "home", "state", "run"}) make_dir(t / d, 0700);
  // Two overlays in a user namespace of the test's own: the home is the
  // second, so an overlay on it would stack three deep, past the kernel's
  // limit (EINVAL), as on a host whose home overlayfs cannot stack on.
  // The session lives in that namespace: started, used and stopped there.
  const std::string inside =
      "echo evil >> ~/.bashrc 2>/dev/null; echo bashrc=$?; cat ~/.npmrc 2>/dev/null; "
      "mkdir -p \"$npm_config_cache\" && echo warm > \"$npm_config_cache/entry\" && echo cache=ok";
  const std::string n = shell_quote(nsrun_path());
  const std::string name = unique_token("p");
  const std::string script =
      "set -e; T=" + shell_quote(t.path()) +
      "; mount -t overlay o -o lowerdir=$T/l1,upperdir=$T/u1,workdir=$T/w1 $T/m1; mkdir $T/m1/l; "
      "mount -t overlay o -o lowerdir=$T/m1/l,upperdir=$T/u2,workdir=$T/w2 $T/home; "
      "echo real > $T/home/.bashrc; echo SECRET > $T/home/.npmrc; "
      "export HOME=$T/home XDG_STATE_HOME=$T/state XDG_RUNTIME_DIR=$T/run; " +
      n + " session start " + name + " --idle-timeout 60s --home cow; echo started; " + n + " exec " + name +
      " -- sh -c " + shell_quote(inside) + "; " + n + " session stop " + name;
  RunOptions o = at(ws);
  o.env = {"XDG_CACHE_HOME="};
  RunResult r = run({"/usr/bin/unshare", "-Urm", "sh", "-c", script}, o);
  INFO(r.out << r.err);
  if (r.err.find("unshare:") != std::string::npos || r.err.find("mount:") != std::string::npos)
    unavailable("overlay in a user namespace", "the test could not stack its own overlays: " + r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("started") != std::string::npos);
  CHECK(r.err.find("nsrun: --home cow: no overlay for the home here (overlay-unavailable") != std::string::npos);
  CHECK(r.out.find("bashrc=0") == std::string::npos);
  CHECK(r.out.find("SECRET") == std::string::npos);
  CHECK(r.out.find("cache=ok") != std::string::npos);
  // The cache is on the host, in the home layer's redirect directory; the
  // home's own upper holds only what the test wrote.
  std::string entry;
  for (const auto& e : std::filesystem::recursive_directory_iterator(
           t.path() + "/state", std::filesystem::directory_options::skip_permission_denied))
    if (e.path().string().ends_with("/redirect/npm/entry")) entry = e.path().string();
  REQUIRE(!entry.empty());
  CHECK(read_file(entry) == "warm\n");
  CHECK(read_file(t / "u2/.bashrc") == "real\n");
}
