// A repository's git config, as `nsrun commit` reviews it from a
// copy-on-write layer: parsed, compared key by key with the host's, each
// changed key judged (does git run a program or load a file because of
// it?), and the result written back in a canonical form.
//
// Why a parser of our own, pure, and not host git: the file is the
// command's, so whatever reads it must run nothing and follow nothing
// (`git config --file X --list` would follow include.path unless told
// not to, and git reads the cwd's repository and the user's config as it
// starts). The parser is strict: anything it is not sure git reads the
// same way (a NUL byte, an escape git refuses, a bad section or key name,
// a quote left open, more than max_config_bytes) makes the whole file
// refused, never guessed. And what commit writes is never the command's
// text: it is the parse written back canonically (serialize()), so a
// difference between this parser and git's can hide nothing: git reads
// the written file as exactly the entries that were judged. Pure;
// tests/unit/gitconfig_test.cpp, tests/fuzz/fuzz_gitconfig.cpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nsrun {

// A config larger than this is refused whole (git's own files are a few KiB).
inline constexpr std::size_t max_config_bytes = 1 << 20;

struct ConfigEntry {
  std::string section;     // lowercased
  std::string subsection;  // as written (case-sensitive), "" when none
  bool has_subsection = false;
  std::string name;        // lowercased
  std::optional<std::string> value;  // nullopt: a key without '=' (boolean true)
  bool operator==(const ConfigEntry&) const = default;
};

// "section.subsection.name" (or "section.name"), as git config --list names it.
std::string config_key(const ConfigEntry& e);

struct ConfigParse {
  std::vector<ConfigEntry> entries;  // in file order
  std::string error;                 // non-empty: refused whole (why, with the line)
};
ConfigParse parse_git_config(std::string_view text);

// The entries written back as git writes them: `[section "sub"]` headers,
// one `\tname = "value"` line each, values quoted and escaped.
std::string serialize(const std::vector<ConfigEntry>& entries);

// Why git would run a program or load a file because of this key (or ""
// when it does neither and nsrun knows it: user.name, remote.*.url, ...).
// A key nsrun does not know is refused too, said as such.
std::string config_key_danger(const ConfigEntry& e);

struct ConfigKeyChange {
  enum class Op { added, changed, removed };
  Op op = Op::added;
  std::string key;                  // config_key()
  std::vector<std::string> before;  // the host's values ("" for a key without '=')
  std::vector<std::string> after;   // the layer's
  std::string refused;              // why commit refuses it; "" when it applies it
};
std::string_view name(ConfigKeyChange::Op);

struct ConfigReview {
  std::string error;  // the layer's file is refused whole (unparsable, too big, a NUL byte)
  std::vector<ConfigKeyChange> changes;
  // What commit writes to the host: the layer's entries, each refused
  // key's replaced by the host's; serialize()d. Empty when `error`.
  std::vector<ConfigEntry> result;
  bool any_refused() const;
};

// `host`: the host's file (nullopt: there is none); `layer`: the layer's.
// A host file that does not parse is a refusal as well (its keys cannot
// be compared).
ConfigReview review_git_config(const std::optional<std::string>& host, std::string_view layer);

}  // namespace nsrun
