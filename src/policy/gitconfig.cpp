#include "policy/gitconfig.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <fmt/core.h>

namespace nsrun {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool alnum(char c) { return alpha(c) || (c >= '0' && c <= '9'); }
// git's isspace() but the line end (a lone '\r' among them).
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// One pass over the text, as git's config.c reads it: "\r\n" is a line
// end, a backslash before a line end continues a value.
class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {
    if (t_.starts_with("\xEF\xBB\xBF")) t_.remove_prefix(3);  // git skips a UTF-8 BOM
  }
  bool done() const { return i_ >= t_.size(); }
  char peek() const {
    if (done()) return '\n';
    if (t_[i_] == '\r' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') return '\n';
    return t_[i_];
  }
  char get() {
    const char c = peek();
    if (!done()) i_ += (t_[i_] == '\r' && c == '\n') ? 2 : 1;
    if (c == '\n') ++line_;
    return c;
  }
  int line() const { return line_; }

 private:
  std::string_view t_;
  std::size_t i_ = 0;
  int line_ = 1;
};

struct Fail {
  std::string why;
};

void skip_blanks(Reader& r) {
  while (!r.done() && blank(r.peek())) r.get();
}

void skip_comment(Reader& r) {
  while (!r.done() && r.peek() != '\n') r.get();
}

// "[section]", "[section \"sub\"]", "[section.sub]" (the old form: sub
// lowercased, as git does).
std::optional<Fail> header(Reader& r, ConfigEntry& at) {
  r.get();  // '['
  at = ConfigEntry{};
  std::string section;
  while (true) {
    if (r.done()) return Fail{"a section header is not closed"};
    const char c = r.get();
    if (c == ']') break;
    if (blank(c)) {
      skip_blanks(r);
      if (r.get() != '"') return Fail{"a subsection name must be quoted"};
      std::string sub;
      while (true) {
        if (r.done()) return Fail{"a subsection name is not closed"};
        char s = r.get();
        if (s == '\n') return Fail{"a subsection name runs past its line"};
        if (s == '"') break;
        if (s == '\\') {
          if (r.done() || r.peek() == '\n') return Fail{"a subsection name ends in a backslash"};
          s = r.get();
        }
        sub += s;
      }
      if (r.get() != ']') return Fail{"text after a subsection name"};
      at.subsection = std::move(sub);
      at.has_subsection = true;
      break;
    }
    if (!alnum(c) && c != '-' && c != '.') return Fail{"a section name holds a character git refuses"};
    section += lower(c);
  }
  if (section.empty()) return Fail{"an empty section name"};
  if (!at.has_subsection) {
    const std::size_t dot = section.find('.');
    if (dot != std::string::npos) {
      at.subsection = section.substr(dot + 1);
      at.has_subsection = true;
      section.resize(dot);
      if (section.empty()) return Fail{"an empty section name"};
    }
  } else if (section.find('.') != std::string::npos) {
    return Fail{"a section name with a dot before a quoted subsection"};
  }
  at.section = std::move(section);
  return std::nullopt;
}

// A value after '=', as git's parse_value() reads it: quotes toggle,
// escapes \n \t \b \\ \", a backslash at the line's end continues it;
// outside quotes a comment ends it, and a run of blanks is one space
// each, dropped at either end.
std::optional<Fail> value(Reader& r, std::string& out) {
  bool quoted = false;
  std::size_t spaces = 0;
  while (true) {
    if (r.done()) {
      if (quoted) return Fail{"a quote is not closed"};
      return std::nullopt;
    }
    char c = r.get();
    if (c == '\n') {
      if (quoted) return Fail{"a quoted value runs past its line"};
      return std::nullopt;
    }
    if (!quoted && blank(c)) {
      if (!out.empty()) ++spaces;
      continue;
    }
    if (!quoted && (c == '#' || c == ';')) {
      skip_comment(r);
      continue;
    }
    out.append(spaces, ' ');
    spaces = 0;
    if (c == '\\') {
      if (r.done()) return Fail{"a value ends in a backslash"};
      const char e = r.get();
      switch (e) {
        case '\n': continue;  // a continuation line
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'b': c = '\b'; break;
        case '\\':
        case '"': c = e; break;
        default: return Fail{"an escape git refuses in a value"};
      }
      out += c;
      continue;
    }
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    out += c;
  }
}

}  // namespace

std::string config_key(const ConfigEntry& e) {
  if (!e.has_subsection) return e.section + "." + e.name;
  return e.section + "." + e.subsection + "." + e.name;
}

ConfigParse parse_git_config(std::string_view text) {
  ConfigParse out;
  if (text.size() > max_config_bytes) {
    out.error = fmt::format("larger than {} bytes", max_config_bytes);
    return out;
  }
  if (text.find('\0') != std::string_view::npos) {
    out.error = "holds a NUL byte";
    return out;
  }
  Reader r(text);
  ConfigEntry at;
  bool in_section = false;
  auto fail = [&](const Fail& f, int line) {
    out.entries.clear();
    out.error = fmt::format("line {}: {}", line, f.why);
    return out;
  };
  while (!r.done()) {
    skip_blanks(r);
    if (r.done()) break;
    const int line = r.line();
    const char c = r.peek();
    if (c == '\n') {
      r.get();
      continue;
    }
    if (c == '#' || c == ';') {
      skip_comment(r);
      continue;
    }
    if (c == '[') {
      if (auto f = header(r, at)) return fail(*f, line);
      in_section = true;
      continue;  // a key may follow on the same line, as git reads it
    }
    if (!alpha(c)) return fail(Fail{"a key must begin with a letter"}, line);
    if (!in_section) return fail(Fail{"a key before any section"}, line);
    ConfigEntry e = at;
    while (!r.done() && (alnum(r.peek()) || r.peek() == '-')) e.name += lower(r.get());
    skip_blanks(r);
    const char next = r.peek();
    if (next == '=') {
      r.get();
      std::string v;
      if (auto f = value(r, v)) return fail(*f, line);
      e.value = std::move(v);
    } else if (next == '\n' || next == '#' || next == ';') {
      skip_comment(r);
    } else {
      return fail(Fail{"a key holds a character git refuses"}, line);
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

namespace {

std::string quoted(std::string_view s, bool subsection) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (!subsection && c == '\n') {
      out += "\\n";
      continue;
    }
    if (!subsection && c == '\t') {
      out += "\\t";
      continue;
    }
    if (!subsection && c == '\b') {
      out += "\\b";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string serialize(const std::vector<ConfigEntry>& entries) {
  std::string out;
  const ConfigEntry* last = nullptr;
  for (const auto& e : entries) {
    if (last == nullptr || last->section != e.section || last->has_subsection != e.has_subsection ||
        last->subsection != e.subsection) {
      out += "[" + e.section;
      if (e.has_subsection) out += " " + quoted(e.subsection, true);
      out += "]\n";
    }
    last = &e;
    out += "\t" + e.name;
    if (e.value) out += " = " + quoted(*e.value, false);
    out += "\n";
  }
  return out;
}

namespace {

// A key pattern: section, subsection ("*": any, "": none), name ("*": any).
struct KeyRule {
  std::string_view section;
  std::string_view subsection;
  std::string_view name;
  std::string_view why;  // "" : runs nothing, loads nothing
};

// git-config(1), gitattributes(5), git-credential(1), gitremote-helpers(7).
constexpr std::array<KeyRule, 46> key_rules{{
    // Whole sections whose keys run programs or change what git runs.
    {"include", "*", "*", "includes another config file, whose keys git obeys"},
    {"includeif", "*", "*", "includes another config file, whose keys git obeys"},
    {"alias", "*", "*", "an alias runs a shell command ('!') or passes -c options to git"},
    {"filter", "*", "*", "a filter driver's clean, smudge or process command runs on checkout and add"},
    {"credential", "*", "*", "a credential helper runs (and sees the user's passwords)"},
    {"gpg", "*", "*", "names the signing program git runs"},
    {"difftool", "*", "*", "a diff tool command runs"},
    {"mergetool", "*", "*", "a merge tool command runs"},
    {"extensions", "*", "*", "changes how git reads the repository (worktreeConfig reads config.worktree)"},
    {"protocol", "*", "*", "allows transports that run commands (ext::)"},
    {"url", "*", "*", "rewrites URLs, to a transport that runs commands too"},
    {"trace2", "*", "*", "writes trace files where it names"},
    {"safe", "*", "*", "decides which repositories git trusts"},
    // core: the ones that run or load.
    {"core", "", "fsmonitor", "runs the named program on every status"},
    {"core", "", "hookspath", "takes hooks from another directory"},
    {"core", "", "sshcommand", "the command git runs for ssh"},
    {"core", "", "gitproxy", "a command git runs to connect"},
    {"core", "", "pager", "the pager git runs"},
    {"core", "", "editor", "the editor git runs"},
    {"core", "", "askpass", "the password prompt program git runs"},
    {"core", "", "attributesfile", "loads attributes, which select filter and diff drivers"},
    {"core", "", "worktree", "moves the work tree git checks out into, outside the workspace too"},
    {"core", "", "alternaterefscommand", "a command git runs for alternates"},
    {"core", "", "excludesfile", "loads a file named anywhere on the host"},
    {"sequence", "", "editor", "the editor git runs for rebase -i"},
    {"diff", "", "external", "a diff program git runs"},
    {"diff", "*", "command", "a diff driver's program"},
    {"diff", "*", "textconv", "a program git runs to convert files for diff"},
    {"merge", "*", "driver", "a merge driver's program"},
    {"remote", "*", "uploadpack", "the program git runs for fetch (locally too)"},
    {"remote", "*", "receivepack", "the program git runs for push (locally too)"},
    {"remote", "*", "vcs", "runs the remote helper git-remote-<vcs>"},
    {"uploadpack", "*", "*", "upload-pack hooks run programs (packObjectsHook)"},
    {"receive", "*", "*", "receive-pack settings (procReceiveRefs run hooks)"},
    {"submodule", "*", "update", "a submodule's update may be '!command'"},
    {"http", "*", "*", "cookie files written, certificates and helpers loaded"},
    {"commit", "", "gpgsign", "runs the signing program with the user's key"},
    {"tag", "", "gpgsign", "runs the signing program with the user's key"},
    // Known to run nothing.
    {"user", "", "*", ""},
    {"author", "", "*", ""},
    {"committer", "", "*", ""},
    {"remote", "*", "*", ""},   // url, pushurl, fetch, push, prune, tagopt, mirror (the runners are above)
    {"branch", "*", "*", ""},   // remote, merge, rebase, pushremote, description
    {"submodule", "*", "*", ""},  // url, active, branch (update is above)
    {"init", "", "defaultbranch", ""},
    {"core", "", "*", ""},  // filemode, bare, logallrefupdates, ... (the runners are above)
}};

// Sections with no subsection whose keys only change what git shows or how
// it merges, never what it runs.
constexpr std::array<std::string_view, 13> plain_sections{
    {"pull", "push", "fetch", "rebase", "status", "log", "color", "column", "advice", "gc", "pack", "index", "rerere"}};

bool rule_matches(const KeyRule& rule, const ConfigEntry& e) {
  if (rule.section != e.section) return false;
  if (rule.subsection == "*") {
  } else if (rule.subsection.empty()) {
    if (e.has_subsection) return false;
  } else if (!e.has_subsection || rule.subsection != e.subsection) {
    return false;
  }
  return rule.name == "*" || rule.name == e.name;
}

}  // namespace

std::string config_key_danger(const ConfigEntry& e) {
  for (const auto& rule : key_rules)
    if (rule_matches(rule, e)) return std::string(rule.why);
  if (!e.has_subsection && std::find(plain_sections.begin(), plain_sections.end(), e.section) != plain_sections.end())
    return {};
  if (e.section == "merge" && !e.has_subsection) return {};  // merge.ff, merge.conflictstyle (merge.tool: a name)
  if (e.section == "diff" && !e.has_subsection) return {};   // diff.renames, diff.algorithm (diff.external above)
  return "not on nsrun's list of keys known to run nothing";
}

std::string_view name(ConfigKeyChange::Op op) {
  switch (op) {
    case ConfigKeyChange::Op::added: return "added";
    case ConfigKeyChange::Op::changed: return "changed";
    case ConfigKeyChange::Op::removed: return "removed";
  }
  return "?";
}

bool ConfigReview::any_refused() const {
  return !error.empty() || std::any_of(changes.begin(), changes.end(), [](const auto& c) { return !c.refused.empty(); });
}

namespace {

// Entries are one key when section, subsection and name are the same
// (section and name folded by the parser; a subsection is case-sensitive).
struct KeyOf {
  std::string section, subsection, name;
  bool has_subsection = false;
  auto operator<=>(const KeyOf&) const = default;
};
KeyOf key_of(const ConfigEntry& e) { return {e.section, e.subsection, e.name, e.has_subsection}; }

std::map<KeyOf, std::vector<std::string>> values_by_key(const std::vector<ConfigEntry>& entries) {
  std::map<KeyOf, std::vector<std::string>> out;
  for (const auto& e : entries) out[key_of(e)].push_back(e.value ? *e.value : std::string("(true)"));
  return out;
}

}  // namespace

ConfigReview review_git_config(const std::optional<std::string>& host, std::string_view layer) {
  ConfigReview out;
  ConfigParse old_parse;
  if (host) {
    old_parse = parse_git_config(*host);
    if (!old_parse.error.empty()) {
      out.error = "the host's .git/config does not parse (" + old_parse.error + ")";
      return out;
    }
  }
  ConfigParse new_parse = parse_git_config(layer);
  if (!new_parse.error.empty()) {
    out.error = new_parse.error;
    return out;
  }
  const auto before = values_by_key(old_parse.entries);
  const auto after = values_by_key(new_parse.entries);
  std::vector<KeyOf> refused;
  auto judge = [&](const KeyOf& k, const std::vector<ConfigEntry>& from, ConfigKeyChange c) {
    for (const auto& e : from)
      if (key_of(e) == k) {
        c.key = config_key(e);
        c.refused = config_key_danger(e);
        break;
      }
    if (!c.refused.empty()) refused.push_back(k);
    out.changes.push_back(std::move(c));
  };
  for (const auto& [k, values] : after) {
    auto it = before.find(k);
    if (it == before.end()) judge(k, new_parse.entries, {ConfigKeyChange::Op::added, {}, {}, values, {}});
    else if (it->second != values) judge(k, new_parse.entries, {ConfigKeyChange::Op::changed, {}, it->second, values, {}});
  }
  for (const auto& [k, values] : before)
    if (!after.contains(k)) judge(k, old_parse.entries, {ConfigKeyChange::Op::removed, {}, values, {}, {}});
  std::sort(out.changes.begin(), out.changes.end(),
            [](const ConfigKeyChange& a, const ConfigKeyChange& b) { return a.key < b.key; });
  auto is_refused = [&](const ConfigEntry& e) {
    return std::find(refused.begin(), refused.end(), key_of(e)) != refused.end();
  };
  for (const auto& e : new_parse.entries)
    if (!is_refused(e)) out.result.push_back(e);
  for (const auto& e : old_parse.entries)
    if (is_refused(e)) out.result.push_back(e);
  return out;
}

}  // namespace nsrun
