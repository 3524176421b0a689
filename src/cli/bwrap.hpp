// The bwrap front end: bubblewrap 0.11's command line -> Policy, and
// nsrun's failures shown the way bwrap shows them ("bwrap: ..." on stderr,
// exit status 1). Only this file knows the dialect; everything below it
// sees a Policy.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

// The bubblewrap release whose command line this front end speaks.
inline constexpr const char* bwrap_compat_version = "0.11.0";

// What the parser reads from the caller's world, passed in so that parsing
// stays testable without privileges.
struct BwrapContext {
  std::string cwd;              // relative sources and PWD
  uid_t uid = 0;                // the real uid: root keeps its capabilities
  // Root's effective capabilities (bit N = capability N), what bwrap starts
  // root's sandbox from; unset: every capability.
  std::optional<uint64_t> effective_caps;
  bool cgroup_ns = true;        // the kernel has cgroup namespaces (--unshare-cgroup-try)
  bool selinux = false;         // SELinux is enabled (labels could be applied)
  // Reads an fd to end-of-file (--args, --file, --bind-data, --ro-bind-data).
  std::function<Result<std::string>(int)> read_fd;
  // Whether an fd is open (status and blocking fds).
  std::function<bool(int)> fd_open;
  // The fds above 2 that nsrun was given without close-on-exec, read
  // before nsrun opens any of its own (which are all close-on-exec): bwrap
  // passes these on to the command, less those its options use up.
  std::vector<int> inherited_fds;
  // Called with each of bwrap's warnings as the parser meets it, already
  // prefixed ("bwrap: ..." or "<4>bwrap: ..."): bwrap prints them at once,
  // so they come before any later error. Unset: warnings are dropped.
  std::function<void(const std::string&)> warn;
};

BwrapContext read_bwrap_context();

struct BwrapInvocation {
  enum class Action { run, help, version };
  Action action = Action::run;
  Policy policy;
  bool level_prefix = false;  // "<3>bwrap: ..." for fatal messages
  bool die_with_caller = false;  // --die-with-parent: nsrun itself dies with its parent
};

// `args` excludes the program name. A failure's message() is bwrap's text
// without the "bwrap: " prefix.
Result<BwrapInvocation> parse_bwrap(std::span<const std::string> args, const BwrapContext& ctx);

// bwrap's text for one of nsrun's errors (from validation or the launch).
// `unshare_user`: a user namespace was being made (bwrap's explanations of
// a refused clone apply only then).
std::string bwrap_message(const Error& e, bool unshare_user = true);

// bwrap's exit status for one of nsrun's own failures: always 1.
inline constexpr int bwrap_failure_status = 1;

// `usage: <prog> [OPTIONS...] [--] COMMAND [ARGS...]` and every option.
std::string bwrap_usage(std::string_view prog);

// Whether `arg` is one of bwrap's options (as --help lists them).
bool is_bwrap_option(std::string_view arg);
std::string bwrap_version_text();

// The whole dialect: parse, then run, explain, or print. `prog` is how the
// caller named us (argv[0], or "nsrun bwrap").
int bwrap_main(std::string_view prog, std::span<const std::string> args);
// `nsrun explain --bwrap ARGS...`: the plan for a bwrap command line.
int bwrap_explain_main(std::span<const std::string> args);

}  // namespace nsrun
