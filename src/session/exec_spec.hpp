// One command of a session: its launch spec, made from the session's by a
// pure function (the session's spec stays const; PID 1 starts each
// command from a new one). Only what the request names changes: the
// command, its environment over the session's, its exec candidates; every
// command gets its own session and process group (`nsrun kill` signals
// the group, the caller's terminal stays the caller's) and no fd of the
// caller's but the stdio the request passed.
#pragma once

#include <string>
#include <vector>

#include "launch/spec.hpp"

namespace nsrun::session {

// NAME=VALUE entries of `extra` over `base`: a later one replaces an
// earlier one of the same name; an entry without a name is ignored.
std::vector<std::string> merged_env(std::vector<std::string> base, const std::vector<std::string>& extra);

// The spec of the command `argv` (not empty) with `env` over the session's
// environment.
LaunchSpec exec_spec(const LaunchSpec& session, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env);

}  // namespace nsrun::session
