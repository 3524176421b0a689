#include "session/exec_spec.hpp"

#include "policy/env.hpp"

namespace nsrun::session {

std::vector<std::string> merged_env(std::vector<std::string> base, const std::vector<std::string>& extra) {
  for (const auto& e : extra) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string_view key(e.data(), eq + 1);
    std::erase_if(base, [&](const std::string& b) { return b.starts_with(key); });
    base.push_back(e);
  }
  return base;
}

LaunchSpec exec_spec(const LaunchSpec& session, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env) {
  LaunchSpec spec = session;
  spec.argv = argv;
  spec.env = merged_env(session.env, env);
  spec.exec_paths = argv.empty() ? std::vector<std::string>{} : exec_candidates(argv.front(), env_lookup(spec.env, "PATH"));
  spec.new_session = 1;
  spec.pass_fds.clear();
  spec.stop_before_exec = false;
  return spec;
}

}  // namespace nsrun::session
