// `nsrun help [TOPIC]` and the --help of `nsrun policy`, `explain` and
// `probe`: the short texts, kept here in one place (the man page's HELP
// TOPICS section names each topic; tests/unit/help_test.cpp holds the two
// together).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace nsrun {

struct HelpTopic {
  std::string_view name;     // "modes"
  std::string_view summary;  // one line, for the list
  std::string_view text;     // the whole text, ending in a newline
};

std::span<const HelpTopic> help_topics();

// The text of `nsrun help` (the topics and subcommands).
std::string help_index();

// The subcommands, in the order `nsrun help` lists them; each answers
// `nsrun SUB --help`.
std::span<const std::string_view> subcommands();

// `nsrun policy|explain|probe --help`; nullopt for another name.
std::optional<std::string_view> subcommand_help(std::string_view sub);

// `nsrun help ARGS...`: prints a topic (exit 0), or refuses in one line
// (125). A subcommand's name is answered by main with its --help.
int help_main(std::span<const std::string> args);

}  // namespace nsrun
