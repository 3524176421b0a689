#include "policy/protect.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include <fmt/core.h>

#include "policy/sockets.hpp"
#include "sys/fd.hpp"
#include "sys/io.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

namespace {

// Each entry runs code (or changes what runs) the next time the user, not
// the sandbox, works in the directory.
constexpr std::array<DefaultPath, 11> protected_defaults{{
    {".git/hooks", "git runs these scripts on commit, checkout, merge, push"},
    {".git/config", "core.hooksPath, core.fsmonitor, core.sshCommand, filter and alias definitions run commands"},
    {".git/commondir", "git takes its config and hooks from the directory named here (any git directory has one)"},
    {".git/config.worktree", "read as .git/config is once extensions.worktreeConfig is set (git sparse-checkout does)"},
    {".git/info/attributes", "selects filter and diff drivers for paths, beside .gitattributes' own"},
    {".envrc", "direnv runs it on entering the directory (once allowed, an edit needs a new allow)"},
    {".vscode", "tasks, launch configurations and settings VS Code runs or obeys when the folder opens"},
    {".idea", "run configurations and tool settings JetBrains IDEs obey when the project opens"},
    {".codex", "Codex's project configuration (commands and sandbox settings it applies)"},
    {".agents", "agent instructions and skills an agent loads and follows"},
    {".claude", "Claude Code's project settings (hooks that run commands, permissions)"},
}};
// Not protected: .gitmodules. It names submodule URLs and paths, not
// commands: git refuses the command-running settings (update=!cmd) from it
// since CVE-2019-19604, and `git submodule` only runs what .git/config says.
// It is a tracked file the command has every reason to edit.

constexpr std::array<DefaultPath, 23> credential_defaults{{
    {".npmrc", "npm registry tokens (_authToken)"},
    {".ssh", "ssh private keys, and hosts they open"},
    {".aws", "AWS access keys and SSO tokens"},
    {".config/gcloud", "Google Cloud credentials and access tokens"},
    {".kube", "Kubernetes cluster credentials (kubeconfig)"},
    {".docker/config.json", "container registry logins"},
    {".netrc", "passwords for FTP, HTTP (curl, git) hosts"},
    {".git-credentials", "git's stored HTTPS passwords and tokens"},
    {".gnupg", "GnuPG private keys (the agent's socket is hidden with the sockets)"},
    {".config/gh", "GitHub CLI's OAuth token (hosts.yml): push, and the API as the user"},
    {".config/hub", "hub's GitHub token"},
    {".claude/.credentials.json", "Claude Code's OAuth tokens"},
    {".codex/auth.json", "Codex's OpenAI API key and ChatGPT tokens"},
    {".pypirc", "PyPI upload tokens (twine)"},
    {".cargo/credentials.toml", "crates.io publish token"},
    {".cargo/credentials", "crates.io publish token (the name before Cargo 1.46)"},
    {".terraform.d/credentials.tfrc.json", "Terraform Cloud and registry API tokens"},
    {".config/op", "1Password CLI's account configuration and session keys"},
    {".password-store", "pass's encrypted passwords (and which keys open them)"},
    {".local/share/keyrings", "GNOME Keyring's stored passwords (login keyring)"},
    {".mozilla", "Firefox profiles: cookies (live sessions), saved passwords"},
    {".config/google-chrome", "Chrome profiles: cookies (live sessions), saved passwords"},
    {".config/chromium", "Chromium profiles: cookies (live sessions), saved passwords"},
}};

constexpr bool below(std::string_view path, std::string_view dir) {
  return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

std::string without_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

std::span<const DefaultPath> default_protected() { return protected_defaults; }
std::span<const DefaultPath> default_credentials() { return credential_defaults; }

std::optional<std::string> normal_relative(std::string_view path) {
  if (path.empty() || path.front() == '/') return std::nullopt;
  std::string out;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    if (!out.empty()) out += '/';
    out += part;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

namespace {

// No default protected path repeats another or lies below another: the
// loop in protected_paths() would keep each of them, in order.
consteval bool defaults_stand_alone() {
  for (std::size_t i = 0; i < protected_defaults.size(); ++i)
    for (std::size_t j = 0; j < protected_defaults.size(); ++j)
      if (i != j && (protected_defaults[i].path == protected_defaults[j].path ||
                     below(protected_defaults[i].path, protected_defaults[j].path)))
        return false;
  return true;
}
static_assert(defaults_stand_alone());

}  // namespace

std::vector<std::string> protected_paths(const Policy& p) {
  // The usual launch names no path of its own: the set is the defaults as
  // they stand (defaults_stand_alone()), without the loop's compares of
  // every pair (tests/unit/computed_once_test.cpp compares the two ways).
  if (p.protect.empty() && p.unprotect.empty()) {
    std::vector<std::string> out;
    if (p.protect_defaults) {
      out.reserve(protected_defaults.size());
      for (const auto& d : protected_defaults) out.emplace_back(d.path);
    }
    return out;
  }
  std::vector<std::string> in;
  if (p.protect_defaults)
    for (const auto& d : protected_defaults) in.emplace_back(d.path);
  auto normal = [](const std::string& s) -> std::string {
    if (!s.empty() && s.front() == '/') return without_slash(s);
    return normal_relative(s).value_or(std::string());
  };
  for (const auto& s : p.protect) in.push_back(normal(s));
  std::vector<std::string> drop;
  for (const auto& s : p.unprotect) drop.push_back(normal(s));
  std::vector<std::string> out;
  for (auto& s : in) {
    if (s.empty() || std::find(drop.begin(), drop.end(), s) != drop.end()) continue;
    if (std::find(out.begin(), out.end(), s) != out.end()) continue;
    out.push_back(std::move(s));
  }
  // A path below another protected one is kept by it already.
  std::vector<std::string> kept;
  for (const auto& s : out)
    if (std::none_of(out.begin(), out.end(), [&](const std::string& o) { return below(s, o); })) kept.push_back(s);
  return kept;
}

// ASCII case folded: a workspace on a case-insensitive file system (vfat,
// exfat, an ext4 casefold directory) reaches .git/hooks as .GIT/Hooks, and
// the layer that commit reads from is case-sensitive.
bool same_folded(std::string_view a, std::string_view b) {
  auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return fold(x) == fold(y); });
}

namespace {

bool below_folded(std::string_view path, std::string_view dir) {
  return path.size() > dir.size() && same_folded(path.substr(0, dir.size()), dir) && path[dir.size()] == '/';
}

}  // namespace

ProtectMatch match_protected(std::string_view rel, std::span<const std::string> set) {
  ProtectMatch m = ProtectMatch::none;
  for (const auto& entry : set) {
    if (entry.empty() || entry.front() == '/') continue;
    if (same_folded(rel, entry) || below_folded(rel, entry)) return ProtectMatch::protected_;
    if (rel.empty() || below_folded(entry, rel)) m = ProtectMatch::ancestor;
  }
  return m;
}

std::vector<std::string> protected_in_root(const std::string& root, std::span<const std::string> set) {
  std::vector<std::string> out;
  const std::string r = without_slash(root);
  for (const auto& entry : set) {
    if (entry.empty()) continue;
    if (entry.front() != '/') {
      out.push_back(entry);
    } else if (r == "/" ? entry.size() > 1 : below(entry, r)) {
      out.push_back(entry.substr(r == "/" ? 1 : r.size() + 1));
    }
  }
  return out;
}

std::vector<std::string> held_in_root(const Policy& p, const std::string& root, std::span<const std::string> set) {
  std::vector<std::string> out = protected_in_root(root, set);
  if (p.workspace_mode == WorkspaceMode::cow && without_slash(root) == without_slash(p.workspace))
    std::erase_if(out, [](const std::string& rel) { return rel == ".git/config"; });
  return out;
}

std::string_view name(ProtectState s) {
  switch (s) {
    case ProtectState::read_only: return "read-only";
    case ProtectState::covered: return "covered";
    case ProtectState::sealed: return "sealed";
    case ProtectState::not_kept: return "not-kept";
    case ProtectState::unreachable: return "unreachable";
  }
  return "?";
}

ProtectDecision missing_below(std::string_view dir) {
  // The writable root itself: sealing it would refuse every new file at the
  // top of the workspace (npm install, sed -i, git init). `.git`: git makes
  // its lock files there (index.lock, HEAD.lock) on every commit.
  if (dir.empty() || dir == ".git") return {ProtectState::not_kept, {}};
  return {ProtectState::sealed, std::string(dir)};
}

std::vector<std::string> writable_roots(const Policy& p) {
  std::vector<std::string> out;
  if (!p.preset || p.mode != Mode::workspace_write) return out;
  if (!p.workspace.empty()) out.push_back(p.workspace);
  for (const auto& w : p.writable)
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  return out;
}

namespace {

// The walk's answer for a missing name whose nearest existing directory is
// `done` (`dir`, or, when `dir` is empty, `at`: the directory the walk
// started from, duplicated only if the decision needs it).
Result<ProtectWalk> missing_walk(int at, Fd dir, std::string_view done, std::string_view rel) {
  ProtectWalk w;
  w.decision = missing_below(done);
  if (w.decision.state == ProtectState::sealed) {
    if (!dir) dir.reset(::fcntl(at, F_DUPFD_CLOEXEC, 3));
    if (!dir) return fail(sys_error("dup", std::string(rel)));
    w.at = std::move(dir);
  }
  return w;
}

std::string_view first_component(std::string_view rel) { return rel.substr(0, rel.find('/')); }

// The walk of `rel` from `from`, a directory reached already (`done`,
// relative to the root; "" and `from` the root itself). With `first_dir`,
// the directory the walk goes into at the root is handed over there
// instead of being closed (ProtectWalker keeps it for the pass).
Result<ProtectWalk> walk_below(int from, std::string done, std::string_view rest, std::string_view rel,
                               DirPinner* pinner, Fd* first_dir) {
  ProtectWalk w;
  // `at` is the directory reached so far: `from` (the caller's, not worth
  // a dup) until a component is opened.
  Fd dir;
  int at = from;
  while (true) {
    const std::size_t slash = rest.find('/');
    const std::string part(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    Fd next(sys::openat2(at, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH));
    if (!next) {
      if (errno != ENOENT) return fail(sys_error("protect", std::string(rel)));
      auto missing = missing_walk(at, std::move(dir), done, rel);
      if (missing) missing->missing_at_root = done.empty();
      return missing;
    }
    struct stat st{};
    if (::fstat(next.get(), &st) != 0) return fail(sys_error("protect", std::string(rel)));
    if (S_ISLNK(st.st_mode) || (!rest.empty() && !S_ISDIR(st.st_mode))) {
      w.decision = {ProtectState::covered, {}};
      w.link = S_ISLNK(st.st_mode);
      w.at = std::move(next);
      return w;
    }
    if (rest.empty()) {
      w.decision = {ProtectState::read_only, {}};
      w.at = std::move(next);
      return w;
    }
    if (pinner)
      if (auto r = pinner->pin(at, part, next); !r) return fail(r.error());
    const bool at_root = done.empty();
    done += at_root ? part : "/" + part;
    if (at_root && first_dir != nullptr) {
      *first_dir = std::move(next);
      at = first_dir->get();
    } else {
      dir = std::move(next);
      at = dir.get();
    }
  }
}

}  // namespace

Result<ProtectWalk> walk_protected(int root, std::string_view rel, DirPinner* pinner) {
  return walk_below(root, "", rel, rel, pinner, nullptr);
}

Result<ProtectWalk> ProtectWalker::walk(int root, std::string_view rel, DirPinner* pinner) {
  const std::string_view first = first_component(rel);
  if (std::find(missing_at_root_.begin(), missing_at_root_.end(), first) != missing_at_root_.end())
  {
    auto w = missing_walk(root, Fd(), "", rel);
    if (w) w->missing_at_root = true;
    return w;
  }
  // A scan (no pinner) goes into a directory at the root once per pass:
  // .git for .git/hooks, config, commondir, config.worktree and
  // info/attributes. The walks below it go on from that fd, so they see
  // the directory the first walk went into, as if they had all run at
  // that instant (a rename of .git meanwhile is seen by the next pass, as
  // one a moment after the pass would be). The executor's walks pin each
  // directory (a bind on itself), so they are not shared.
  const bool below_first = first.size() < rel.size();
  if (pinner == nullptr && below_first)
    for (const auto& [name, fd] : opened_at_root_)
      if (name == first)
        return walk_below(fd.get(), std::string(first), rel.substr(first.size() + 1), rel, nullptr, nullptr);
  Fd first_dir;
  auto w = walk_below(root, "", rel, rel, pinner, pinner == nullptr ? &first_dir : nullptr);
  if (w && w->missing_at_root) missing_at_root_.emplace_back(first);
  if (first_dir) opened_at_root_.emplace_back(std::string(first), std::move(first_dir));
  return w;
}

std::vector<ProtectedPathState> scan_protected(const Policy& p) {
  const std::vector<std::string> set = protected_paths(p);
  if (set.empty()) return {};
  return scan_protected(p, writable_roots(p), set);
}

std::vector<ProtectedPathState> scan_protected(const Policy& p, const std::vector<std::string>& roots,
                                               const std::vector<std::string>& set) {
  std::vector<ProtectedPathState> out;
  if (set.empty()) return out;
  for (const auto& root : roots) {
    Fd top(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    ProtectWalker walker;
    for (const auto& rel : held_in_root(p, root, set)) {
      ProtectedPathState st{root, rel, {ProtectState::unreachable, {}}};
      if (top)
        if (auto w = walker.walk(top.get(), rel, nullptr)) st.decision = w->decision;
      out.push_back(std::move(st));
    }
  }
  return out;
}

std::vector<ProtectedPathState> rescan_not_kept(const std::vector<ProtectedPathState>& before) {
  std::vector<ProtectedPathState> out = before;
  // One root fd and one walker per root, as scan_protected(); `before` holds
  // each root's paths together.
  std::string root;
  Fd top;
  std::optional<ProtectWalker> walker;
  for (auto& st : out) {
    if (st.decision.state != ProtectState::not_kept) continue;
    if (!walker || st.root != root) {
      root = st.root;
      top.reset(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
      walker.emplace();
    }
    st.decision = {ProtectState::unreachable, {}};
    if (top)
      if (auto w = walker->walk(top.get(), st.path, nullptr)) st.decision = w->decision;
  }
  return out;
}

Result<void> validate_protection(const Policy& p) {
  auto bad = [](std::string_view option, const std::string& path, std::string_view why) {
    Error e = usage_error(option, why);
    e.path = path;
    return e;
  };
  auto dot_dot = [](std::string_view path) {
    for (std::size_t i = 0; i <= path.size();) {
      const std::size_t end = std::min(path.find('/', i), path.size());
      if (path.substr(i, end - i) == "..") return true;
      i = end + 1;
    }
    return false;
  };
  const std::vector<std::string> roots = writable_roots(p);
  for (const auto* list : {&p.protect, &p.unprotect}) {
    const std::string_view option = list == &p.protect ? "--protect" : "--unprotect";
    for (const auto& s : *list) {
      if (s.empty()) return fail(usage_error(option, "empty path"));
      if (s.find('\0') != std::string::npos) return fail(bad(option, s, "contains a NUL byte"));
      if (dot_dot(s)) return fail(bad(option, s, "a '..' component (name the path plainly)"));
      if (s.front() != '/') {
        if (!normal_relative(s)) return fail(bad(option, s, "names the writable root itself"));
        continue;
      }
      if (list == &p.protect && !roots.empty() &&
          std::none_of(roots.begin(), roots.end(), [&](const std::string& r) {
            const std::string root = without_slash(r);
            return root == "/" ? without_slash(s) != "/" : below(without_slash(s), root);
          }))
        return fail(bad(option, s, "not inside a writable root (a relative path applies to each of them)"));
    }
  }
  for (const auto& s : p.allow_read)
    if (s.empty() || s.front() != '/') return fail(bad("--allow-read", s, "not an absolute path"));
  for (const auto& s : p.hidden_paths)
    if (s.empty() || s.front() != '/') return fail(bad("hidden_paths", s, "not an absolute path"));
  for (const auto& s : p.allow_read)
    if (dot_dot(s)) return fail(bad("--allow-read", s, "a '..' component (name the path plainly)"));
  // A file shown inside a hidden directory: strictly inside one, named
  // plainly (the rungs open it through no symlink).
  for (const auto& s : p.shown_in_hidden) {
    if (s.empty() || s.front() != '/' || s.ends_with('/') || dot_dot(s))
      return fail(bad("shown_in_hidden", s, "not an absolute path to a file, named plainly"));
    if (std::none_of(p.hidden_paths.begin(), p.hidden_paths.end(), [&](const std::string& h) {
          return h.ends_with('/') && s.starts_with(h) && s.size() > h.size();
        }))
      return fail(bad("shown_in_hidden", s, "not inside a hidden directory"));
  }
  for (const auto& c : p.settings_copies)
    if (std::find(p.hidden_paths.begin(), p.hidden_paths.end(), c.path) == p.hidden_paths.end())
      return fail(bad("settings_copies", c.path, "not one of the hidden paths"));
  return {};
}

std::vector<std::string> credential_homes(std::string_view env_home, const std::optional<std::string>& account_home) {
  std::vector<std::string> out;
  const std::string_view account = account_home ? std::string_view(*account_home) : std::string_view();
  for (const std::string_view h : {env_home, account}) {
    if (h.empty() || h.front() != '/' || h.find('\0') != std::string_view::npos) continue;
    std::string home = without_slash(std::string(h));
    if (std::find(out.begin(), out.end(), home) == out.end()) out.push_back(std::move(home));
  }
  return out;
}

Result<std::vector<std::string>> credentials_to_hide(std::span<const std::string> homes, bool defaults,
                                                     const std::vector<std::string>& allowed,
                                                     const PathLookup& lookup) {
  std::vector<std::string> out;
  if (!defaults) return out;
  // Allowed paths, as given and canonical where they exist.
  std::vector<std::string> allow;
  for (const auto& a : allowed) {
    allow.push_back(without_slash(a));
    if (auto found = lookup(a)) allow.push_back(without_slash(found->real));
  }
  for (const auto& home : homes) {
    if (home.empty() || home.front() != '/') continue;
    const std::string base = without_slash(home);
    for (const auto& c : credential_defaults) {
      const std::string path = base == "/" ? fmt::format("/{}", c.path) : fmt::format("{}/{}", base, c.path);
      auto found = lookup(path);
      if (!found) continue;
      const std::string real = without_slash(found->real);
      bool allowed_here = false;
      for (const auto& a : allow) {
        if (a == path || a == real || below(path, a) || below(real, a)) allowed_here = true;
        // Inside a hidden directory the cover is the directory: a file
        // there is shown on its own (Policy::shown_in_hidden, by the front
        // end); anything else would need the directory allowed.
        else if (found->dir && (below(a, path) || below(a, real))) {
          auto inner = lookup(a);
          if (inner && !inner->dir) continue;
          return fail(usage_error("--allow-read",
                                  fmt::format("{} is inside the hidden {}, and {}: allow the directory itself, or "
                                              "a single file in it",
                                              a, path, inner ? "is a directory" : "does not exist")));
        }
      }
      if (allowed_here) continue;
      std::string entry = found->dir ? real + "/" : real;
      if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(std::move(entry));
    }
  }
  return out;
}

// ---------------------------------------------------------------- git's own paths

namespace {

bool is_dir_beneath(int root, const std::string& rel) {
  Fd fd(sys::openat2(root, rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
  return static_cast<bool>(fd);
}

// The most of a git config file (or a file git reads beside it) nsrun
// reads; git itself has no such limit.
constexpr std::size_t config_cap = std::size_t{1} << 20;

struct Beneath {
  std::optional<std::string> text;  // a regular file's contents
  bool dir = false;
  // A regular file, read or not: one past read_all()'s cap has no text,
  // and is protected all the same, since git reads it whole (unprotected, a
  // gitdir's 1.1 MB config would take `core.fsmonitor = ...` from the
  // command).
  bool file = false;
  // Why a regular file has no text (past the cap, or a read error).
  std::optional<Error> unread;
  bool present() const { return dir || file; }
};

// What a name below `root` is, through no symlink, in one open where it
// can be: a regular file's text (small), or whether it is a directory. A
// missing name (the usual answer for `.git` outside a repository) is one
// system call, a directory three, where reading it and then asking
// is_dir_beneath() took two and five. With
// `ask_dir`, a directory that may not be opened for reading is still a
// directory: asked again as is_dir_beneath() asks.
Beneath look_beneath(int root, const std::string& rel, bool ask_dir = true) {
  Beneath out;
  // O_NONBLOCK: a fifo the command left where a config or an include is
  // looked for must not hang the next launch (only regular files are read).
  Fd fd(sys::openat2(root, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0,
                     RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
  if (!fd) {
    // Not openable for reading (a directory or a file of mode 0, say):
    // still there, and what it is, told by an O_PATH open. A file the
    // caller cannot read is the command's to chmod and fill.
    if (ask_dir && errno != ENOENT) {
      Fd path(sys::openat2(root, rel.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
      struct stat st{};
      if (path && ::fstat(path.get(), &st) == 0) {
        out.dir = S_ISDIR(st.st_mode);
        out.file = S_ISREG(st.st_mode);
      }
    }
    return out;
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return out;
  out.dir = S_ISDIR(st.st_mode);
  out.file = S_ISREG(st.st_mode);
  if (S_ISREG(st.st_mode)) {
    if (auto text = read_all(fd.get(), "read", rel, config_cap)) out.text = std::move(*text);
    else out.unread = text.error();
  }
  return out;
}

// A small file below `root` read through no symlink; nullopt when absent.
std::optional<std::string> read_beneath(int root, const std::string& rel) {
  return look_beneath(root, rel, false).text;
}

// A git config (or commondir) below `root`, read through no symlink;
// nullopt when absent. One that is there but cannot be read whole (past
// the cap: git reads it whole and follows its includes and
// core.hooksPath, which nsrun then cannot) is noted in `unread`, and the
// launch is refused rather than run with its includes unprotected.
// A git config outside the writable roots (the user's own, or one an
// include names there), at an absolute path, following symlinks as git
// does: nullopt when it is not a regular file. One that cannot be read
// whole is noted in `unread`, as read_config_beneath() does.
// O_NONBLOCK|O_NOCTTY: a fifo or a terminal named by a hostile config must
// not hang or take over the launch; only files are read.
std::optional<std::string> read_config_at(const std::string& abs, std::optional<Error>& unread) {
  Fd fd(::open(abs.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st{};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  auto text = read_all(fd.get(), "read", abs, config_cap);
  if (text) return std::move(*text);
  if (!unread) unread = text.error();
  return std::nullopt;
}

// `r` is the root's path (no trailing slash), for the message.
std::optional<std::string> read_config_beneath(int root, const std::string& r, const std::string& rel,
                                               std::optional<Error>& unread) {
  Beneath b = look_beneath(root, rel, false);
  if (b.unread && !unread) {
    unread = std::move(b.unread);
    unread->path = r == "/" ? "/" + rel : r + "/" + rel;
  }
  return std::move(b.text);
}

// `path` (absolute, or relative to `base`, an absolute directory) made
// absolute and lexically normal; then relative to `root` when strictly
// inside it, else nullopt.
std::optional<std::string> inside(const std::string& root, const std::string& base, std::string_view path) {
  std::string full = path.starts_with('/') ? std::string(path) : base + "/" + std::string(path);
  std::vector<std::string> parts;
  std::string_view rest = full;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.emplace_back(part);
  }
  std::string norm;
  for (const auto& part : parts) norm += "/" + part;
  const std::string r = without_slash(root);
  if (r == "/") return norm.size() > 1 ? std::optional(norm.substr(1)) : std::nullopt;
  if (!below(norm, r)) return std::nullopt;
  return norm.substr(r.size() + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// A value as git reads it: quotes joined, escapes undone, a comment ends it.
std::string config_value(std::string_view v) {
  std::string out, pending_space;
  bool quoted = false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (!quoted && (c == '#' || c == ';')) break;
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    if (c == '\\' && i + 1 < v.size()) {
      const char e = v[++i];
      out += pending_space;
      pending_space.clear();
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      continue;
    }
    if (!quoted && (c == ' ' || c == '\t')) {
      if (!out.empty()) pending_space += c;
      continue;
    }
    out += pending_space;
    pending_space.clear();
    out += c;
  }
  return out;
}

// The `path` values of [include] and [includeIf "..."] sections in a git
// config file's text, in order, each with the offset just past its line
// (where git reads the included file). Conditions are not evaluated: a
// file that some condition includes is treated as included (protected the
// more).
std::vector<std::pair<std::size_t, std::string>> include_paths(std::string_view all) {
  std::vector<std::pair<std::size_t, std::string>> found;
  std::string section;
  std::string_view text = all;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::size_t end = all.size() - text.size();
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.starts_with('[')) {
      const std::size_t close = line.find(']');
      if (close == std::string_view::npos) continue;
      section = lower(trim(line.substr(1, close - 1)));
      line = line.substr(close + 1);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    }
    if (section != "include" && !section.starts_with("includeif ") && !section.starts_with("includeif\"")) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    if (lower(trim(line.substr(0, eq))) != "path") continue;
    if (auto v = config_value(line.substr(eq + 1)); !v.empty()) found.emplace_back(end, std::move(v));
  }
  return found;
}

// git's limit on nested includes (config.c's MAX_INCLUDE_DEPTH).
constexpr int max_include_depth = 10;

// A config file's text with the files it includes spliced in where git
// reads them (just after the include line; then "[include]" again, so the
// including file's next lines are not read as the included file's last
// section), recursively up to git's depth, and each included file inside
// `root` added to the protected set through `add`: its contents act as git
// config (core.fsmonitor, core.hooksPath, aliases). `dir` is the including
// file's directory (absolute), against which git resolves a relative
// include. A file inside the root is read through no symlink (a symlink
// there is protected as it is, never followed out); one outside every
// writable root is read-only to the command already and is read only to
// follow its own includes.
template <typename Add>
std::string with_includes(int top, const std::string& root, const std::string& r, const std::string& home,
                          const std::string& dir, const std::string& text, int depth, const Add& add,
                          std::optional<Error>& unread) {
  if (depth >= max_include_depth) return text;
  std::string out;
  std::size_t done = 0;
  for (const auto& [end, p] : include_paths(text)) {
    std::string abs;
    if (p.starts_with("~/")) {
      if (!home.starts_with('/')) continue;
      abs = home + "/" + p.substr(2);
    } else if (p.starts_with('/')) {
      abs = p;
    } else if (!p.starts_with('~') && !p.starts_with("%(")) {
      abs = dir + "/" + p;
    } else {
      continue;
    }
    std::optional<std::string> included;
    if (auto in = inside(root, r, abs)) {
      add(root, *in);
      included = read_config_beneath(top, r, *in, unread);
      abs = r == "/" ? "/" + *in : r + "/" + *in;
    } else {
      included = read_config_at(abs, unread);
    }
    if (!included) continue;
    const std::size_t slash = abs.rfind('/');
    const std::string sub_dir = slash == 0 ? "/" : abs.substr(0, slash);
    out += text.substr(done, end - done);
    out += "\n" + with_includes(top, root, r, home, sub_dir, *included, depth + 1, add, unread) + "\n[include]\n";
    done = end;
  }
  return out + text.substr(done);
}

// core.hooksPath in a git config file's text (the last one wins), or "".
// Included files are spliced in by with_includes().
std::string hooks_path(std::string_view text) {
  std::string found, section;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.starts_with('[')) {
      const std::size_t close = line.find(']');
      if (close == std::string_view::npos) continue;
      section = lower(trim(line.substr(1, close - 1)));
      line = line.substr(close + 1);  // "[core] hooksPath = x" is one line to git
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    }
    if (section != "core") continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    if (lower(trim(line.substr(0, eq))) == "hookspath") found = config_value(line.substr(eq + 1));
  }
  return found;
}

}  // namespace

Result<std::vector<std::string>> git_protected_paths(const std::vector<std::string>& roots, const std::string& home) {
  std::vector<std::string> out;
  std::optional<Error> unread;
  auto add = [&](const std::string& root, const std::string& rel) {
    const std::string abs = without_slash(root) == "/" ? "/" + rel : without_slash(root) + "/" + rel;
    if (std::find(out.begin(), out.end(), abs) == out.end()) out.push_back(abs);
  };
  // The user's own config files, read as git reads them for every
  // repository: only once a root has a git directory (the bench's and
  // most scratch workspaces have none: five system calls fewer there),
  // and then once for all roots.
  std::vector<std::string> global, global_dirs;
  bool global_read = false;
  auto read_global = [&] {
    if (global_read) return;
    global_read = true;
    std::vector<std::string> files;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x == '/') files.push_back(std::string(x) + "/git/config");
    if (home.starts_with('/')) {
      files.push_back(home + "/.config/git/config");
      files.push_back(home + "/.gitconfig");
    }
    for (const auto& f : files) {
      if (auto text = read_config_at(f, unread)) {
        global.push_back(std::move(*text));
        global_dirs.push_back(f.substr(0, f.rfind('/')));
      }
    }
  };
  for (const auto& root : roots) {
    Fd top(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    if (!top) continue;
    const std::string r = without_slash(root);
    // The git directory: .git itself, or where a .git file points.
    std::string gitdir = ".git";
    const Beneath dot_git = look_beneath(top.get(), ".git");
    if (const auto& file = dot_git.text) {
      if (!file->starts_with("gitdir:")) continue;
      const std::string target = trim(std::string_view(*file).substr(7, file->find('\n') - 7));
      auto in = inside(root, r, target);
      if (!in) continue;  // outside every writable root: read-only there anyway
      gitdir = *in;
      for (const char* p : {"hooks", "config", "commondir", "config.worktree", "info/attributes"})
        if (const Beneath b = look_beneath(top.get(), gitdir + "/" + p); b.present()) add(root, gitdir + "/" + p);
    } else if (!dot_git.dir) {
      continue;
    }
    // A commondir already there: config and hooks come from that directory.
    std::string common = gitdir;
    if (auto c = read_config_beneath(top.get(), r, gitdir + "/commondir", unread)) {
      auto in = inside(root, r + "/" + gitdir, trim(std::string_view(*c).substr(0, c->find('\n'))));
      if (in) {
        common = *in;
        add(root, common + "/hooks");
        add(root, common + "/config");
      }
    }
    // core.hooksPath, relative to the worktree's top (where hooks run).
    read_global();
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < global.size(); ++i)
      texts.push_back(with_includes(top.get(), root, r, home, global_dirs[i], global[i], 0, add, unread));
    for (const std::string& c : {common + "/config", gitdir + "/config.worktree"})
      if (auto t = read_config_beneath(top.get(), r, c, unread)) {
        const std::string abs = r == "/" ? "/" + c : r + "/" + c;
        texts.push_back(with_includes(top.get(), root, r, home, abs.substr(0, abs.rfind('/')), *t, 0, add, unread));
      }
    std::string hooks;
    for (const auto& t : texts)
      if (auto h = hooks_path(t); !h.empty()) hooks = h;
    if (!hooks.empty()) {
      std::optional<std::string> in;
      if (hooks.starts_with("~/") && home.starts_with('/')) in = inside(root, home, hooks.substr(2));
      else if (!hooks.starts_with('~')) in = inside(root, r, hooks);
      if (in) {
        add(root, *in);
        // husky 9: the stubs in .husky/_ run the scripts in .husky itself.
        const std::size_t slash = in->rfind('/');
        if (slash != std::string::npos && in->substr(slash + 1) == "_") add(root, in->substr(0, slash));
      }
    }
    // Hook managers whose installed hook runs what a worktree file says:
    // that file decides what the user's next commit runs.
    {
      const std::string hooks_dir = common + "/hooks";
      std::string installed;
      for (const char* h : {"pre-commit", "commit-msg", "pre-push", "post-checkout"})
        if (auto t = read_beneath(top.get(), hooks_dir + "/" + h)) installed += *t;
      if (installed.find("pre-commit.com") != std::string::npos || installed.find("pre_commit") != std::string::npos)
        add(root, ".pre-commit-config.yaml");
      if (installed.find("lefthook") != std::string::npos)
        for (const char* f : {"lefthook.yml", ".lefthook.yml", "lefthook-local.yml", ".lefthook-local.yml", ".lefthook"})
          add(root, f);
    }
    // The git directories of submodules (<common>/modules/NAME, NAME may
    // hold '/') and of linked worktrees (<common>/worktrees/NAME): their
    // config, hooks and commondir as the main one's, where they exist.
    int budget = 256;
    auto module_dirs = [&](auto& self, const std::string& dir, int depth) -> void {
      if (depth > 6 || budget <= 0) return;
      Fd d(sys::openat2(top.get(), dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
      if (!d) return;
      std::unique_ptr<DIR, int (*)(DIR*)> entries(::fdopendir(d.get()), ::closedir);
      if (!entries) return;
      (void)d.release();
      while (dirent* e = ::readdir(entries.get())) {
        const std::string n = e->d_name;
        if (n == "." || n == ".." || --budget <= 0) continue;
        const std::string sub = dir + "/" + n;
        if (!is_dir_beneath(top.get(), sub)) continue;
        if (read_beneath(top.get(), sub + "/HEAD")) {
          for (const char* p : {"hooks", "config", "commondir", "config.worktree"})
            if (const Beneath b = look_beneath(top.get(), sub + "/" + p); b.present()) add(root, sub + "/" + p);
          // What its config includes is its config too.
          if (auto t = read_config_beneath(top.get(), r, sub + "/config", unread))
            (void)with_includes(top.get(), root, r, home, r == "/" ? "/" + sub : r + "/" + sub, *t, 0, add, unread);
          self(self, sub + "/modules", depth + 1);
        } else {
          self(self, sub, depth + 1);
        }
      }
    };
    module_dirs(module_dirs, common + "/modules", 0);
    module_dirs(module_dirs, common + "/worktrees", 5);
  }
  if (unread) {
    Error e = std::move(*unread);
    e.kind = ErrorKind::usage;
    e.detail = fmt::format("a git config nsrun cannot read whole{}; git would follow its includes and "
                           "core.hooksPath, and nsrun could not protect them",
                           e.detail.empty() ? "" : " (" + e.detail + ")");
    return fail(std::move(e));
  }
  return out;
}

}  // namespace nsrun
