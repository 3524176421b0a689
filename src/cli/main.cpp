// nsrun: run one command in a Linux sandbox.
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/bench.hpp"
#include "cli/bwrap.hpp"
#include "cli/explain.hpp"
#include "cli/help.hpp"
#include "cli/layers_cmd.hpp"
#include "cli/native.hpp"
#include "cli/settings.hpp"
#include "cli/session_cmd.hpp"
#include "launch/ladder.hpp"
#include "launch/launch.hpp"
#include "launch/pid1_exec.hpp"
#include "net/egress.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"
#include "policy/validate.hpp"

namespace {

int report(const nsrun::Error& e) {
  fmt::print(stderr, "nsrun: {}\n", e.message());
  return e.exit_code();
}

// argv[0] does not always say which dialect was meant: re-run through
// /proc/self/exe (flatpak, bwrap's own tests: a command in a sandbox runs
// "the same binary" again), or found as `bwrap` through a symlink that the
// caller resolved before running it (Codex probes the resolved path), and
// nothing else may carry it (the environment and the fds are the
// command's). The first argument decides: one of bwrap's options that
// nsrun's own command line does not have (--unshare-all, --bind,
// --ro-bind, --dev, --die-with-parent, ...) can only be bwrap's, where
// nsrun's own command line would refuse it; anything else is nsrun's.
bool bwrap_first_argument(std::span<const std::string> args) {
  if (args.empty()) return false;
  return nsrun::is_bwrap_option(args[0]) && !nsrun::is_native_option(args[0]);
}

// A setuid nsrun would hand the caller's choice of mounts to a more
// privileged process; it refuses rather than trying to be safe at it.
bool privileged_exec() {
  return ::getuid() != ::geteuid() || ::getgid() != ::getegid() || ::getauxval(AT_SECURE) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  using nsrun::Invocation;
  if (privileged_exec()) {
    fmt::print(stderr, "nsrun: refusing to run setuid or setgid\n");
    return 125;
  }
  // Before anything else: the bench's payload where there is no /bin/true.
  if (argc == 2 && argv[1] == nsrun::bench_noop_flag) return 0;
  // The sandbox's PID 1, re-exec'd inside it (launch/pid1_exec.hpp).
  if (argc >= 2 && argv[1] == nsrun::pid1_reaper_flag) return nsrun::pid1_reaper_main(argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  // The bwrap dialect: called as `bwrap` (a symlink), as `nsrun bwrap ...`,
  // or explained with `nsrun explain --bwrap ...`.
  const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  const std::string_view base = argc > 0 ? (slash ? slash + 1 : argv[0]) : "";
  if (base == "bwrap" || (argc > 0 && bwrap_first_argument(args))) return nsrun::bwrap_main(argv[0], args);
  // Nothing at all asked: what nsrun is and how to ask it, not a
  // one-line refusal of a command nobody gave. Nothing runs, so 125.
  if (args.empty()) {
    fmt::print(stderr, "{}", nsrun::native_usage());
    return 125;
  }
  // `nsrun help SUBCOMMAND` is that subcommand's --help; a topic's text otherwise.
  if (args[0] == "help") {
    const auto subs = nsrun::subcommands();
    if (args.size() == 2 && args[1] != "help" && std::find(subs.begin(), subs.end(), args[1]) != subs.end())
      args = {args[1], "--help"};
    else
      return nsrun::help_main(std::span<const std::string>(args).subspan(1));
  }
  if (!args.empty() && args[0] == "bwrap")
    return nsrun::bwrap_main("nsrun bwrap", std::span<const std::string>(args).subspan(1));
  if (args.size() >= 2 && args[0] == "explain" && args[1] == "--bwrap")
    return nsrun::bwrap_explain_main(std::span<const std::string>(args).subspan(2));
  if (!args.empty() && args[0] == "bench") {
#ifdef NSRUN_BENCH
    return nsrun::bench_main(std::span(args).subspan(1));
#else
    fmt::print(stderr, "nsrun: bench: not in this build (configured with -Dbench=false)\n");
    return 125;
#endif
  }
  if (!args.empty() && nsrun::is_layers_command(args[0])) return nsrun::layers_main(args);
  if (nsrun::is_session_command(args[0])) {
    // `nsrun exec --help`, `nsrun session --help`, `nsrun session start --help`.
    auto is_help = [](std::string_view a) { return a == "--help" || a == "-h"; };
    if ((args.size() == 2 && is_help(args[1])) || (args.size() == 3 && args[0] == "session" && is_help(args[2]))) {
      fmt::print("{}", *nsrun::subcommand_help(args[0]));
      return 0;
    }
    return nsrun::session_main(args);
  }
  if (!args.empty() && args[0] == "connect") return nsrun::egress::connect_main(std::span(args).subspan(1));
  auto inv = nsrun::parse_native(args, nsrun::read_caller_context());
  if (!inv) return report(inv.error());

  switch (inv->action) {
    case Invocation::Action::help:
      if (auto text = nsrun::subcommand_help(args[0])) fmt::print("{}", *text);
      else fmt::print("{}", nsrun::native_usage());
      return 0;
    case Invocation::Action::version:
      fmt::print("nsrun {}\n", NSRUN_VERSION);
      return 0;
    case Invocation::Action::policy:
      if (auto r = nsrun::validate(inv->policy, false, inv->mount_options); !r) return report(r.error());
      if (inv->explain_source) {
        fmt::print("{}", nsrun::explain_sources(inv->sources));
        return 0;
      }
      fmt::print("{}\n", nsrun::json::dump(nsrun::to_json(inv->policy)));
      return 0;
    case Invocation::Action::explain: {
      if (auto r = nsrun::validate(inv->policy, false, inv->mount_options); !r) return report(r.error());
      auto text = nsrun::explain(inv->policy);
      if (!text) return report(text.error());
      fmt::print("{}", *text);
      return 0;
    }
    case Invocation::Action::probe:
      if (auto r = nsrun::validate(inv->policy, false, inv->mount_options); !r) return report(r.error());
      return nsrun::probe_rungs(inv->policy, inv->json);
    case Invocation::Action::run:
      break;
  }
  if (auto r = nsrun::validate(inv->policy, true, inv->mount_options); !r) return report(r.error());
  if (inv->idle_timeout_ms) return report(nsrun::usage_error("--idle-timeout", "only for nsrun session start"));
  if (auto note = nsrun::workspace_note(inv->policy)) fmt::print(stderr, "{}", *note);
  const int code = nsrun::run(inv->policy);
  // The launch is over (PID 1 reaped, the report written): the process
  // ends here rather than by returning, so the Policy, the option table
  // and the other statics are not freed one by one. Their pages are shared
  // copy-on-write with PID 1 since its fork, and freeing them took a write
  // fault each (about 8); exit_group frees it all
  // at once. stdio is flushed first, as exit() would.
  std::fflush(nullptr);
  ::_exit(code);
}
