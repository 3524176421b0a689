// The hardening options, observed: which filter is loaded (the errno a
// refused call gets, the report, explain), the namespaces kept or shared,
// and the environment filters.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

RunResult probe_with(const std::vector<std::string>& options, const std::vector<std::string>& probe_args,
                     const TempDir& cwd, RunOptions opts = {}) {
  std::vector<std::string> args = options;
  args.push_back("--");
  args.push_back(probe_path());
  args.insert(args.end(), probe_args.begin(), probe_args.end());
  opts.cwd = cwd.path();
  return nsrun(args, opts);
}

std::string report_of(const TempDir& ws, const std::vector<std::string>& options) {
  std::string path = ws / unique_token("report");
  std::vector<std::string> args{"--report", path};
  args.insert(args.end(), options.begin(), options.end());
  RunResult r = probe_with(args, {"getpid"}, ws);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return read_file(path);
}

}  // namespace

TEST_CASE("--seccomp selects the filter: default refuses, none and log let the call through",
          "[hardening][seccomp]") {
  require_userns();
  TempDir ws;
  // keyctl on the session keyring succeeds for anyone without a filter.
  RunResult outside = run({probe_path(), "sys", "keyctl"});
  REQUIRE(outside.out == "ok\n");

  CHECK(probe_with({}, {"sys", "keyctl"}, ws).out == "error EPERM\n");
  CHECK(probe_with({"--seccomp", "default"}, {"sys", "keyctl"}, ws).out == "error EPERM\n");
  CHECK(probe_with({"--seccomp", "none"}, {"sys", "keyctl"}, ws).out == "ok\n");
  CHECK(probe_with({"--seccomp", "log"}, {"sys", "keyctl"}, ws).out == "ok\n");
  CHECK(probe_with({"--seccomp-log"}, {"sys", "keyctl"}, ws).out == "ok\n");

  CHECK(report_of(ws, {}).find(R"("seccomp":"default")") != std::string::npos);
  CHECK(report_of(ws, {"--seccomp", "none"}).find(R"("seccomp":"none")") != std::string::npos);
  CHECK(report_of(ws, {"--seccomp-log"}).find(R"("seccomp":"log")") != std::string::npos);
}

TEST_CASE("--allow-nested-userns lets the command make a user namespace", "[hardening][seccomp]") {
  require_userns();
  TempDir ws;
  CHECK(probe_with({}, {"sys", "unshare-user"}, ws).out == "error EPERM\n");
  CHECK(probe_with({"--allow-nested-userns"}, {"sys", "unshare-user"}, ws).out == "ok\n");
  CHECK(probe_with({"--allow-nested-userns"}, {"sys", "clone-user"}, ws).out == "ok\n");
}

TEST_CASE("bad hardening values: exit 125, one line, nothing run", "[hardening][cli]") {
  TempDir ws;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--seccomp", "strict"}, {"--network", "host"}, {"--env-allow", ""}}) {
    RunResult r = probe_with(args, {"write", ws / "ran"}, ws);
    INFO(join(args) << ": " << r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.starts_with("nsrun: " + args[0]));
  }
  CHECK_FALSE(file_exists(ws / "ran"));
}

TEST_CASE("IPC, UTS and cgroup namespaces are new by default; --share-* keeps each", "[hardening][namespace]") {
  require_userns();
  TempDir ws;
  for (std::string kind : {"ipc", "uts", "cgroup"}) {
    DYNAMIC_SECTION(kind) {
      std::string host = read_link("/proc/self/ns/" + kind);
      if (host.empty()) {
        // No such namespace in this kernel: nsrun must still run.
        CHECK(probe_with({}, {"getpid"}, ws).exit_code == 0);
        continue;
      }
      RunResult fresh = probe_with({}, {"ns", kind}, ws);
      INFO(fresh.err);
      CHECK(chomp(fresh.out).starts_with(kind + ":["));
      CHECK(chomp(fresh.out) != host);
      RunResult shared = probe_with({"--share-" + kind}, {"ns", kind}, ws);
      INFO(shared.err);
      CHECK(chomp(shared.out) == host);
    }
  }
  char name[256] = {};
  REQUIRE(gethostname(name, sizeof name - 1) == 0);
  CHECK(nsrun({"--", "cat", "/proc/sys/kernel/hostname"}, at(ws)).out == "nsrun\n");
  CHECK(nsrun({"--share-uts", "--", "cat", "/proc/sys/kernel/hostname"}, at(ws)).out == std::string(name) + "\n");
}

TEST_CASE("--network none: a network namespace of its own with lo up", "[hardening][net]") {
  require_userns();
  TempDir ws;
  std::string host = read_link("/proc/self/ns/net");
  CHECK(chomp(probe_with({}, {"ns", "net"}, ws).out) == host);
  RunResult none = probe_with({"--network", "none"}, {"ns", "net"}, ws);
  INFO(none.err);
  CHECK(chomp(none.out) != host);
  // Only lo, and it is up: /proc/net/dev lists two header lines and lo.
  RunResult dev = probe_with({"--network", "none"}, {"read", "/proc/net/dev"}, ws);
  CHECK(count_lines(dev.out) == 3);
  CHECK(dev.out.find(" lo:") != std::string::npos);
  CHECK(probe_with({"--network", "none"}, {"tcp-self"}, ws).out == "ok\n");
}

TEST_CASE("--env-allow and --env-deny filter the inherited environment", "[hardening][env]") {
  require_userns();
  TempDir ws;
  RunOptions opts;
  opts.env = {"NSRUN_T_A=1", "NSRUN_T_B=2", "NSRUN_OTHER=3"};
  const std::vector<std::string> filters{"--env-allow", "NSRUN_T_*", "--env-allow", "PATH", "--env-deny",
                                         "NSRUN_T_B"};
  CHECK(probe_with(filters, {"getenv", "NSRUN_T_A"}, ws, opts).out == "1\n");
  CHECK(probe_with(filters, {"getenv", "NSRUN_T_B"}, ws, opts).out == "unset\n");
  CHECK(probe_with(filters, {"getenv", "NSRUN_OTHER"}, ws, opts).out == "unset\n");
  CHECK(probe_with({"--env-deny", "NSRUN_*"}, {"getenv", "NSRUN_T_A"}, ws, opts).out == "unset\n");
  CHECK(probe_with({"--env-deny", "NSRUN_*"}, {"getenv", "PATH"}, ws, opts).out != "unset\n");

  // explain names the variables that would be passed, values never.
  std::vector<std::string> args{"explain"};
  args.insert(args.end(), filters.begin(), filters.end());
  args.insert(args.end(), {"--", "true"});
  RunOptions eopts = opts;
  eopts.cwd = ws.path();
  RunResult explained = nsrun(args, eopts);
  INFO(explained.err);
  REQUIRE(explained.exit_code == 0);
  CHECK(explained.out.find("environment: PATH NSRUN_T_A\n") != std::string::npos);
  CHECK(explained.out.find("seccomp: default (") != std::string::npos);
  CHECK(explained.out.find("network: share") != std::string::npos);
}
