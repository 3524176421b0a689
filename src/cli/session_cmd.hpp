// The session commands' front end: `nsrun session start|stop|list`,
// `nsrun exec`, `jobs`, `logs`, `kill` (docs/sessions.md). The session
// itself is src/session/.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace nsrun {

bool is_session_command(std::string_view verb);
// `args` starts with the verb.
int session_main(std::span<const std::string> args);

}  // namespace nsrun
