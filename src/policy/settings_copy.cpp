#include "policy/settings_copy.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <span>
#include <vector>

#include <fmt/core.h>

namespace nsrun {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A URL with a user or a password in it (https://user:token@host/).
bool url_with_userinfo(std::string_view value) {
  for (std::size_t at = value.find("://"); at != std::string_view::npos; at = value.find("://", at + 3)) {
    const std::string_view rest = value.substr(at + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    if (authority.find('@') != std::string_view::npos) return true;
  }
  return false;
}

// npm's keys that can carry a credential: _auth, _authToken, _password,
// username, email, certfile, keyfile, key, cert, otp, and every
// per-registry setting (`//registry.example/:_authToken`). Matched by
// fragment, so a spelling npm adds later is left out too.
bool npm_secret_key(std::string_view key) {
  const std::string k = lower(key);
  if (k.starts_with("//") || k.find(":_") != std::string::npos) return true;
  static constexpr std::array<std::string_view, 10> fragments{"auth", "token", "pass", "secret", "user",
                                                             "email", "cert",  "key",  "otp",    "cred"};
  return std::any_of(fragments.begin(), fragments.end(),
                     [&](std::string_view f) { return k.find(f) != std::string::npos; });
}

struct Line {
  std::string_view key, value;
  bool section = false;
};

// `key = value` or `[section]`; nullopt for anything else.
std::optional<Line> parse_line(std::string_view raw) {
  const std::string_view line = trim(raw);
  if (line.size() >= 2 && line.front() == '[' && line.back() == ']') return Line{line, {}, true};
  const std::size_t eq = line.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return Line{trim(line.substr(0, eq)), trim(line.substr(eq + 1)), false};
}

}  // namespace

bool has_settings_copy(std::string_view file_name) { return file_name == ".npmrc" || file_name == ".pypirc"; }

std::optional<SettingsCopyText> settings_copy(std::string_view file_name, std::string_view text) {
  if (!has_settings_copy(file_name)) return std::nullopt;
  const bool npm = file_name == ".npmrc";
  SettingsCopyText out;
  std::string kept;
  bool in_section = false;
  bool server_list = false;  // .pypirc: the indented names that continue index-servers
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view plain = trim(raw);
    if (plain.empty()) continue;
    auto keep = [&]() -> bool {
      if (raw.find('\0') != std::string_view::npos || raw.find('\r') != std::string_view::npos) return false;
      // A comment may be a setting put aside with its secret.
      if (plain.front() == ';' || plain.front() == '#') return false;
      const bool continued = raw.front() == ' ' || raw.front() == '\t';
      if (continued) return server_list && plain.find_first_of("=:@/") == std::string_view::npos;
      server_list = false;
      const auto line = parse_line(raw);
      if (!line) return false;
      if (line->section) {
        in_section = true;
        // npm reads a section's keys as `section.key`: none is kept, so
        // its header goes too. .pypirc's settings live in sections.
        return !npm;
      }
      if (url_with_userinfo(line->value)) return false;
      if (npm) return !in_section && !npm_secret_key(line->key);
      const std::string k = lower(line->key);
      server_list = k == "index-servers";
      return k == "index-servers" || k == "repository";
    };
    if (keep()) {
      if (raw.front() == ' ' || raw.front() == '\t') kept += "    ";
      kept += plain;
      kept += '\n';
    } else {
      ++out.dropped;
    }
  }
  out.text = fmt::format("; a copy by nsrun: {} line{} that could hold a credential left out\n{}", out.dropped,
                         out.dropped == 1 ? "" : "s", kept);
  return out;
}

namespace {

bool contains_any(std::string_view s, std::span<const std::string_view> fragments) {
  const std::string l = lower(s);
  return std::any_of(fragments.begin(), fragments.end(),
                     [&](std::string_view f) { return l.find(f) != std::string::npos; });
}

// A URL whose userinfo has a password, or a user on anything but ssh (a
// token is often the user alone: https://ghp_x@github.com/); or an
// scp-like `user:pass@host`.
bool git_secret_userinfo(std::string_view s) {
  for (std::size_t at = s.find("://"); at != std::string_view::npos; at = s.find("://", at + 3)) {
    const std::string_view rest = s.substr(at + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?# \t"));
    const std::size_t userinfo_end = authority.rfind('@');
    if (userinfo_end == std::string_view::npos) continue;
    if (authority.substr(0, userinfo_end).find(':') != std::string_view::npos) return true;
    std::size_t scheme_start = at;
    while (scheme_start > 0 && (std::isalnum(static_cast<unsigned char>(s[scheme_start - 1])) != 0 ||
                                s[scheme_start - 1] == '+' || s[scheme_start - 1] == '-' || s[scheme_start - 1] == '.'))
      --scheme_start;
    const std::string scheme = lower(s.substr(scheme_start, at - scheme_start));
    if (scheme != "ssh" && scheme != "git+ssh" && scheme != "ssh+git") return true;
  }
  // user:pass@host with no scheme: a ':' in the word before an '@'.
  for (std::size_t at = s.find('@'); at != std::string_view::npos; at = s.find('@', at + 1)) {
    const std::size_t word = s.find_last_of(" \t/\"'=", at);
    const std::string_view before = s.substr(word == std::string_view::npos ? 0 : word + 1, at - (word == std::string_view::npos ? 0 : word + 1));
    if (before.find(':') != std::string_view::npos) return true;
  }
  return false;
}

// `helper = store`, `cache --timeout 900`, `manager`, `osxkeychain`,
// `libsecret`, ... or empty (which resets the list): nothing that could
// hold a secret. Anything else (`!shell code`, a program with arguments of
// its own) could.
bool plain_credential_helper(std::string_view value) {
  static constexpr std::array<std::string_view, 11> helpers{
      "store", "cache", "manager", "manager-core", "osxkeychain", "libsecret", "wincred", "gnome-keyring",
      "netrc", "oauth", "cache-daemon"};
  static constexpr std::array<std::string_view, 3> options{"--file", "--timeout", "--socket"};
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < value.size();) {
    const std::size_t start = value.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(value.find_first_of(" \t", start), value.size());
    words.push_back(value.substr(start, end - start));
    at = end;
  }
  if (words.empty()) return true;
  if (std::find(helpers.begin(), helpers.end(), words[0]) == helpers.end()) return false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string_view w = words[i];
    const std::string_view name = w.substr(0, w.find('='));
    if (std::find(options.begin(), options.end(), name) == options.end()) return false;
    // `--file PATH` / `--timeout N`: the next word is the option's value.
    if (name.size() == w.size()) ++i;
  }
  return true;
}

}  // namespace

std::string git_config_secret(const ConfigEntry& e) {
  if (e.section == "credential") {
    // A user name is not a secret; a helper is one of git's own or a
    // keyring's, with only its known options, or it is shell code or a
    // program whose arguments may carry a token.
    if (e.name == "username") return "";
    if (e.name == "helper" && e.value && plain_credential_helper(*e.value)) return "";
    return "credential.*: a helper that is not one of the plain ones can print a password";
  }
  // An include names a path, not a secret: the file it names is looked at
  // by the same rule.
  if (e.section == "include" || e.section == "includeif") return "";
  static constexpr std::array<std::string_view, 12> name_fragments{
      "token", "pass", "secret", "auth", "cred", "cookie", "key", "user", "header", "cert", "otp", "private"};
  const bool signing_key = e.section == "user" && e.name == "signingkey";
  if (!signing_key && contains_any(e.name, name_fragments))
    return "a key whose name could hold a secret (token, pass, auth, key, user, header, ...)";
  if (e.has_subsection && git_secret_userinfo(e.subsection)) return "a subsection with a URL holding a password or user";
  if (e.value) {
    if (git_secret_userinfo(*e.value)) return "a URL with a password or user";
    static constexpr std::array<std::string_view, 20> value_fragments{
        "password", "passwd",  "passphrase", "sshpass", "token",  "secret", "authorization",
        "bearer",   "ghp_",    "gho_",       "ghu_",    "ghs_",   "ghr_",   "github_pat_",
        "glpat-",   "xoxb-",   "xoxp-",      "npm_",    "pypi-",  "akia"};
    if (contains_any(*e.value, value_fragments)) return "a value naming a password, token, secret or header";
  }
  return "";
}

std::vector<std::string> git_config_includes(std::string_view text) {
  std::vector<std::string> out;
  for (auto& e : parse_git_config(text).entries)
    if ((e.section == "include" || e.section == "includeif") && e.name == "path" && e.value && !e.value->empty())
      out.push_back(std::move(*e.value));
  return out;
}

std::optional<SettingsCopyText> git_config_copy(std::string_view text) {
  ConfigParse parsed = parse_git_config(text);
  if (!parsed.error.empty()) {
    SettingsCopyText out;
    out.dropped = 1;
    out.text = "# a copy by nsrun: the file could not be read plainly, so none of it is kept\n";
    return out;
  }
  SettingsCopyText out;
  std::vector<ConfigEntry> kept;
  for (auto& e : parsed.entries) {
    if (git_config_secret(e).empty()) kept.push_back(std::move(e));
    else ++out.dropped;
  }
  if (out.dropped == 0) return std::nullopt;
  out.text = fmt::format("# a copy by nsrun: {} entr{} that could hold a credential left out\n{}", out.dropped,
                         out.dropped == 1 ? "y" : "ies", serialize(kept));
  return out;
}

}  // namespace nsrun
