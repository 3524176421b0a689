#include "policy/settings_copy.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

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

}  // namespace nsrun
