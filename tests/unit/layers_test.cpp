// The include graph of src/ is a DAG of layers: a directory may
// include its own files and those of lower layers, never a higher one, so
// that launch/ is the one owner of a launch and nothing below it reaches
// back up. The order is written down here, once; README.md ("## Layout")
// explains it.
#include <catch2/catch_test_macros.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

namespace fs = std::filesystem;

namespace {

// Lower rank = lower layer. Peers share a rank and do not include each other
// unless the edge is listed in `peer_edges`.
const std::map<std::string, int> rank = {
    {"sys", 0},       // errors, fds, syscall wrappers, flag names, timings
    {"policy", 1},    // the Policy value and its inputs
    {"probe", 2},     // host facts (the backend), read by the mount plan
    {"mount", 3},     // the pure mount plan and its executor
    {"seccomp", 3},   // the filters
    {"landlock", 3},  // ABI negotiation and the ruleset
    {"ns", 3},        // namespace primitives: channel, reaper, credentials, net, status
    {"layers", 3},    // the copy-on-write layers: their directories, changes, commit
    {"net", 4},       // the egress proxy of --network proxy: its wire formats and its own process,
                      // confined with the seccomp, landlock and ns primitives below it
    {"launch", 5},    // the one owner of a launch: pipeline, ladder, rungs, report
    {"bench", 6},     // `nsrun bench`'s statistics and spawning
    {"session", 6},   // sessions: PID 1's request loop, the host side's control socket
    {"cli", 7},       // front ends and main
};

// Same-rank edges that are allowed, each with its reason.
const std::set<std::pair<std::string, std::string>> peer_edges = {
    // The Landlock ruleset lists, in its report, what the Landlock rung's
    // seccomp filter refuses everywhere; the list lives beside that filter
    // (seccomp/rules.hpp), which includes nothing from landlock/.
    {"landlock", "seccomp"},
};

bool allowed(const std::string& from, const std::string& to) {
  if (from == to) return true;
  int a = rank.at(from), b = rank.at(to);
  if (b < a) return true;
  return b == a && peer_edges.contains({from, to});
}

}  // namespace

namespace {

// The quoted name of an `#include "..."` line (spaces allowed around the
// '#' and after `include`); nullopt for any other line.
std::optional<std::string> include_target(std::string_view line) {
  auto skip_space = [&] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  };
  skip_space();
  if (!line.starts_with('#')) return std::nullopt;
  line.remove_prefix(1);
  skip_space();
  if (!line.starts_with("include")) return std::nullopt;
  line.remove_prefix(7);
  skip_space();
  if (!line.starts_with('"')) return std::nullopt;
  line.remove_prefix(1);
  const auto end = line.find('"');
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(line.substr(0, end));
}

}  // namespace

TEST_CASE("src/ includes only its own or lower layers", "[layers]") {
  const fs::path src = fs::path(NSRUN_SOURCE_DIR) / "src";
  if (!fs::is_directory(src)) SKIP("source tree not found at " << src.string() << ": include layers not checked");

  // `#include "dir/...`: the project's own headers are always named by
  // directory (system and library headers use <...>).
  std::size_t files = 0, includes = 0;
  std::vector<std::string> violations;

  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), src);
    const std::string ext = rel.extension().string();
    if (ext != ".hpp" && ext != ".cpp" && ext != ".h" && ext != ".cc") continue;
    ++files;
    const std::string name = "src/" + rel.generic_string();
    const std::string from = rel.begin()->string();
    if (std::distance(rel.begin(), rel.end()) < 2 || !rank.contains(from)) {
      violations.push_back(name + ": not in a known layer (add its directory to the table in layers_test.cpp)");
      continue;
    }
    std::ifstream in(entry.path());
    REQUIRE(in);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const auto target_of = include_target(line);
      if (!target_of) continue;
      ++includes;
      const std::string target = *target_of;
      const auto slash = target.find('/');
      if (slash == std::string::npos) {
        violations.push_back(name + ":" + std::to_string(n) + ": #include \"" + target +
                             "\": name the directory (\"dir/file.hpp\")");
        continue;
      }
      const std::string to = target.substr(0, slash);
      if (!rank.contains(to)) {
        violations.push_back(name + ":" + std::to_string(n) + ": #include \"" + target + "\": unknown layer " + to);
      } else if (!allowed(from, to)) {
        violations.push_back(name + ":" + std::to_string(n) + ": #include \"" + target + "\": layer " + from +
                             " (rank " + std::to_string(rank.at(from)) + ") may not include " + to + " (rank " +
                             std::to_string(rank.at(to)) + ")");
      }
    }
  }

  // A wrong source root must not pass by finding nothing.
  REQUIRE(files > 50);
  REQUIRE(includes > 100);
  for (const auto& v : violations) FAIL_CHECK(v);
  CHECK(violations.empty());
}
