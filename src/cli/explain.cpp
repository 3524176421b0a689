#include "cli/explain.hpp"

#include <fmt/format.h>

#include "ns/launch.hpp"
#include "policy/env.hpp"

namespace nsrun {

Result<std::string> explain(const Policy& policy) {
  // Without the preset the mount list is exactly the one given (the bwrap
  // dialect): the mode and workspace decide nothing then.
  std::string out = policy.preset ? fmt::format("mode: {}\n", name(policy.mode))
                                  : std::string("mode: none (the mount list below is exactly as given)\n");
  if (policy.mode == Mode::full_access) {
    out += "confinement: none (full-access runs the command directly)\n";
    return out;
  }
  Policy p = policy;
  if (p.argv.empty()) p.argv = {"(no command)"};
  auto prepared = prepare(p);
  if (!prepared) return fail(prepared.error());
  if (policy.preset) {
    out += fmt::format("workspace: {}\n", policy.workspace);
    for (const auto& w : policy.writable) out += fmt::format("writable: {}\n", w);
  }
  if (!policy.host_backend.empty()) out += fmt::format("host backend: {}\n", policy.host_backend);
  out += describe(prepared->plan);
  out += policy.cap_add.empty() ? "capabilities: all dropped; no_new_privs\n"
                                : fmt::format("capabilities: all dropped but {}; no_new_privs\n", fmt::join(policy.cap_add, " "));
  out += fmt::format("seccomp: {}\n", describe_filter(filter_spec(policy, FilterRung::namespaces), prepared->seccomp));
  // The Landlock rung cannot tell a writable root from the rest of the host
  // for these: its filter refuses them everywhere.
  out += fmt::format("landlock rung: refuses everywhere, writable roots too: {} (Landlock cannot confine them to "
                     "the writable roots)\n",
                     fmt::join(landlock_refused_everywhere(), ", "));
  out += fmt::format("network: {}\n", policy.network == Network::none
                                           ? "none (a new network namespace with only lo up, 127.0.0.1)"
                                           : "share (the host's network)");
  std::string names;
  for (const auto& e : prepared->env) names += fmt::format(" {}", e.substr(0, e.find('=')));
  out += fmt::format("environment:{}\n", names.empty() ? " (empty)" : names);
  if (!policy.argv.empty()) {
    out += fmt::format("command: {}\n", fmt::join(policy.argv, " "));
    out += fmt::format("exec candidates: {}\n", fmt::join(prepared->exec_paths, " "));
  }
  return out;
}

}  // namespace nsrun
