// The fixture of the session tests (session_test.cpp, session_parity_test.cpp,
// session_proxy_fork_test.cpp): a session of its own, with its own runtime
// and state directories (XDG_RUNTIME_DIR, XDG_STATE_HOME), home and
// workspace, stopped when the test ends; every session a test starts ends
// by itself after a minute idle, should a failed test not stop it.
#pragma once

#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <sys/types.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace nsrun_test {

struct Session {
  TempDir dirs{"session-dirs"};
  TempDir ws{"session-ws"};
  std::string name = unique_token("s");

  Session() {
    make_dir(dirs / "run", 0700);
    make_dir(dirs / "state", 0700);
    make_dir(dirs / "home", 0755);
  }
  ~Session() { (void)run_nsrun({"session", "stop", name}); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  RunOptions options() const {
    RunOptions o = at(ws);
    o.env = {"XDG_RUNTIME_DIR=" + dirs / "run", "XDG_STATE_HOME=" + dirs / "state", "HOME=" + dirs / "home"};
    return o;
  }
  RunResult run_nsrun(std::vector<std::string> args, std::optional<std::string> stdin_text = {}) const {
    RunOptions o = options();
    o.stdin_text = std::move(stdin_text);
    return nsrun(args, o);
  }
  RunResult start(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"session", "start", name};
    if (std::find(extra.begin(), extra.end(), "--idle-timeout") == extra.end())
      args.insert(args.end(), {"--idle-timeout", "60s"});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_nsrun(args);
  }
  RunResult exec(std::vector<std::string> command, std::vector<std::string> options = {},
                 std::optional<std::string> stdin_text = {}) const {
    std::vector<std::string> args{"exec", name};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return run_nsrun(args, std::move(stdin_text));
  }
  std::string socket() const { return dirs / "run" + "/nsrun/sessions/" + name + ".sock"; }
  // The host pid of the session's nsrun (`session list --json`).
  pid_t host_pid() const {
    RunResult r = run_nsrun({"session", "list", "--json"});
    REQUIRE(r.exit_code == 0);
    const auto at = r.out.find("\"pid\":");
    REQUIRE(at != std::string::npos);
    return static_cast<pid_t>(std::stol(r.out.substr(at + 6)));
  }
};

// A workspace that is a git repository in its smallest form: a
// .git/config, the protected path the session tests rename onto.
inline void make_git_workspace(const Session& s) {
  make_dir(s.ws / ".git");
  write_file(s.ws / ".git/config", "[core]\n");
}

inline void require_started(const RunResult& r) {
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

}  // namespace nsrun_test
