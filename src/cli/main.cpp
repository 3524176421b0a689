// nsrun: run one command in a Linux sandbox.
#include <sys/auxv.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/bench.hpp"
#include "cli/explain.hpp"
#include "cli/native.hpp"
#include "ns/launch.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"
#include "policy/validate.hpp"

namespace {

int report(const nsrun::Error& e) {
  fmt::print(stderr, "nsrun: {}\n", e.message());
  return e.exit_code();
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
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "bench") return nsrun::bench_main(std::span(args).subspan(1));
  auto inv = nsrun::parse_native(args, nsrun::read_caller_context());
  if (!inv) return report(inv.error());

  switch (inv->action) {
    case Invocation::Action::help:
      fmt::print("{}", nsrun::native_usage());
      return 0;
    case Invocation::Action::version:
      fmt::print("nsrun {}\n", NSRUN_VERSION);
      return 0;
    case Invocation::Action::policy:
      if (auto r = nsrun::validate(inv->policy, false); !r) return report(r.error());
      fmt::print("{}\n", nsrun::json::dump(nsrun::to_json(inv->policy)));
      return 0;
    case Invocation::Action::explain: {
      if (auto r = nsrun::validate(inv->policy, false); !r) return report(r.error());
      auto text = nsrun::explain(inv->policy);
      if (!text) return report(text.error());
      fmt::print("{}", *text);
      return 0;
    }
    case Invocation::Action::run:
      break;
  }
  if (auto r = nsrun::validate(inv->policy, true); !r) return report(r.error());
  return nsrun::run(inv->policy);
}
