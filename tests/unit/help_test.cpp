// `nsrun help TOPIC` and the subcommands' --help (src/cli/help.cpp): each
// topic is in the man page's HELP TOPICS, each subcommand in its
// SYNOPSIS, and every text fits a terminal.
#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "cli/help.hpp"

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

using namespace nsrun;

namespace {

std::string man_page() {
  std::ifstream in(std::string(NSRUN_SOURCE_DIR) + "/docs/nsrun.1");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string section(const std::string& man, const std::string& name) {
  const auto at = man.find(".SH " + name + "\n");
  REQUIRE(at != std::string::npos);
  const auto end = man.find("\n.SH ", at + 1);
  return man.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

TEST_CASE("help: every topic is in the man page, and every subcommand in its synopsis", "[help]") {
  const std::string man = man_page();
  const std::string topics = section(man, "HELP TOPICS");
  for (const auto& t : help_topics()) {
    INFO("topic " << t.name);
    CHECK(topics.find(".B " + std::string(t.name) + "\n") != std::string::npos);
    CHECK(t.text.starts_with("nsrun help " + std::string(t.name) + "\n"));
    CHECK(help_index().find("  " + std::string(t.name) + " ") != std::string::npos);
  }
  const std::string synopsis = section(man, "SYNOPSIS");
  for (auto sub : subcommands()) {
    INFO("subcommand " << sub);
    CHECK(synopsis.find(".B nsrun " + std::string(sub) + "\n") != std::string::npos);
    CHECK(help_index().find(" " + std::string(sub)) != std::string::npos);
  }
}

TEST_CASE("help: every text fits 100 columns and ends in a newline", "[help]") {
  auto fits = [](std::string_view text) {
    INFO(text);
    CHECK(text.ends_with('\n'));
    std::size_t col = 0;
    for (char c : text) {
      col = c == '\n' ? 0 : col + 1;
      CHECK(col <= 100);
    }
  };
  for (const auto& t : help_topics()) fits(t.text);
  fits(help_index());
  for (auto sub : {"policy", "explain", "probe"}) {
    auto text = subcommand_help(sub);
    REQUIRE(text);
    CHECK(text->starts_with("usage: nsrun " + std::string(sub)));
    fits(*text);
  }
}
