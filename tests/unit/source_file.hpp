// A file of nsrun's source tree, read by the unit tests that hold a
// hand-written file (completions, docs) to the code.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <sstream>
#include <string>

inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(NSRUN_SOURCE_DIR) + "/" + relative);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
