// The bash and zsh completions (dist/completions) list every option of
// both dialects with the number of values it takes, the option table's
// (src/cli/options.cpp) to the letter: an option added to the table and
// not completed, completed and gone from the table, or completed with the
// wrong number of values (the completion would then offer options where a
// value goes) fails here.
#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli/options.hpp"
#include "source_file.hpp"

#ifndef NSRUN_SOURCE_DIR
#error "tests/meson.build passes NSRUN_SOURCE_DIR, the source root"
#endif

using namespace nsrun;

namespace {

using Arities = std::map<std::string, int>;


// The NAME=ARITY words of the shell variable `var` ('...' quoted) in `text`.
Arities listed(const std::string& text, const std::string& var) {
  const std::string head = var + "='";
  const auto at = text.find(head);
  REQUIRE(at != std::string::npos);
  const auto end = text.find('\'', at + head.size());
  REQUIRE(end != std::string::npos);
  std::istringstream words(text.substr(at + head.size(), end - at - head.size()));
  Arities out;
  for (std::string w; words >> w;) {
    const auto eq = w.rfind('=');
    INFO(var << ": " << w);
    REQUIRE(eq != std::string::npos);
    CHECK(out.emplace(w.substr(0, eq), std::stoi(w.substr(eq + 1))).second);  // listed once
  }
  return out;
}

Arities table(Dialect dialect) {
  Arities out;
  for (const OptionSpec& o : option_table()) {
    const Spelling& s = dialect == Dialect::native ? o.native : o.bwrap;
    if (s.name.empty()) continue;
    out.emplace(std::string(s.name), o.arity);
    if (dialect == Dialect::native && !o.native_short.empty()) out.emplace(std::string(o.native_short), o.arity);
  }
  return out;
}

void same(const Arities& completed, const Arities& declared, const std::string& where) {
  for (const auto& [name, arity] : declared) {
    INFO(where << " lacks " << name << "=" << arity << " (add it to its option list)");
    auto it = completed.find(name);
    REQUIRE(it != completed.end());
    CHECK(it->second == arity);
  }
  for (const auto& [name, arity] : completed) {
    INFO(where << " completes " << name << ", which the option table does not have");
    CHECK(declared.contains(name));
  }
}

}  // namespace

TEST_CASE("completions: bash and zsh complete every option of both dialects, with its number of values",
          "[completions]") {
  const Arities native = table(Dialect::native), bwrap = table(Dialect::bwrap);
  REQUIRE(native.size() > 40);
  REQUIRE(bwrap.size() > 40);
  for (const std::string file : {"dist/completions/nsrun.bash", "dist/completions/_nsrun"}) {
    const std::string text = source_file(file);
    same(listed(text, "_nsrun_native_options"), native, file + " (_nsrun_native_options)");
    same(listed(text, "_nsrun_bwrap_options"), bwrap, file + " (_nsrun_bwrap_options)");
  }
}

TEST_CASE("completions: a list missing an option or giving it the wrong arity is caught", "[completions]") {
  const Arities declared{{"--mode", 1}, {"--clearenv", 0}};
  // The parser the check above relies on, on lists that drifted.
  const Arities good = listed("x='\n  --mode=1 --clearenv=0\n'", "x");
  CHECK(good == declared);
  CHECK(listed("x='--mode=2 --clearenv=0'", "x") != declared);
  CHECK(listed("x='--mode=1'", "x") != declared);
  CHECK(listed("x='--mode=1 --clearenv=0 --gone=0'", "x") != declared);
}
