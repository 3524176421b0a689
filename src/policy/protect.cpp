#include "policy/protect.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

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

constexpr std::array<DefaultPath, 9> credential_defaults{{
    {".npmrc", "npm registry tokens (_authToken)"},
    {".ssh", "ssh private keys, and hosts they open"},
    {".aws", "AWS access keys and SSO tokens"},
    {".config/gcloud", "Google Cloud credentials and access tokens"},
    {".kube", "Kubernetes cluster credentials (kubeconfig)"},
    {".docker/config.json", "container registry logins"},
    {".netrc", "passwords for FTP, HTTP (curl, git) hosts"},
    {".git-credentials", "git's stored HTTPS passwords and tokens"},
    {".gnupg", "GnuPG private keys (the agent's socket is hidden with the sockets)"},
}};

bool below(std::string_view path, std::string_view dir) {
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

std::vector<std::string> protected_paths(const Policy& p) {
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

namespace {

// ASCII case folded: a workspace on a case-insensitive file system (vfat,
// exfat, an ext4 casefold directory) reaches .git/hooks as .GIT/Hooks, and
// the layer that commit reads from is case-sensitive.
bool same_folded(std::string_view a, std::string_view b) {
  auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return fold(x) == fold(y); });
}

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
// `done` (`dir`, or the root itself when `dir` is empty: the caller's fd,
// duplicated only if the decision needs it).
Result<ProtectWalk> missing_walk(int root, Fd dir, std::string_view done, std::string_view rel) {
  ProtectWalk w;
  w.decision = missing_below(done);
  if (w.decision.state == ProtectState::sealed) {
    if (!dir) dir.reset(::fcntl(root, F_DUPFD_CLOEXEC, 3));
    if (!dir) return fail(sys_error("dup", std::string(rel)));
    w.at = std::move(dir);
  }
  return w;
}

std::string_view first_component(std::string_view rel) { return rel.substr(0, rel.find('/')); }

}  // namespace

Result<ProtectWalk> walk_protected(int root, std::string_view rel, DirPinner* pinner) {
  ProtectWalk w;
  // `at` is the directory reached so far: the root itself (the caller's,
  // not worth a dup) until the first component is opened.
  Fd dir;
  int at = root;
  std::string done;
  std::string_view rest = rel;
  while (true) {
    const std::size_t slash = rest.find('/');
    const std::string part(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    Fd next(sys::openat2(at, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH));
    if (!next) {
      if (errno != ENOENT) return fail(sys_error("protect", std::string(rel)));
      auto missing = missing_walk(root, std::move(dir), done, rel);
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
    done += done.empty() ? part : "/" + part;
    dir = std::move(next);
    at = dir.get();
  }
}

Result<ProtectWalk> ProtectWalker::walk(int root, std::string_view rel, DirPinner* pinner) {
  const std::string_view first = first_component(rel);
  if (std::find(missing_at_root_.begin(), missing_at_root_.end(), first) != missing_at_root_.end())
  {
    auto w = missing_walk(root, Fd(), "", rel);
    if (w) w->missing_at_root = true;
    return w;
  }
  auto w = walk_protected(root, rel, pinner);
  if (w && w->missing_at_root) missing_at_root_.emplace_back(first);
  return w;
}

std::vector<ProtectedPathState> scan_protected(const Policy& p) {
  std::vector<ProtectedPathState> out;
  const std::vector<std::string> set = protected_paths(p);
  if (set.empty()) return out;
  for (const auto& root : writable_roots(p)) {
    Fd top(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    ProtectWalker walker;
    for (const auto& rel : protected_in_root(root, set)) {
      ProtectedPathState st{root, rel, {ProtectState::unreachable, {}}};
      if (top)
        if (auto w = walker.walk(top.get(), rel, nullptr)) st.decision = w->decision;
      out.push_back(std::move(st));
    }
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
  return {};
}

Result<std::vector<std::string>> credentials_to_hide(const std::string& home, bool defaults,
                                                     const std::vector<std::string>& allowed,
                                                     const PathLookup& lookup) {
  std::vector<std::string> out;
  if (!defaults || home.empty() || home.front() != '/') return out;
  const std::string base = without_slash(home);
  // Allowed paths, as given and canonical where they exist.
  std::vector<std::string> allow;
  for (const auto& a : allowed) {
    allow.push_back(without_slash(a));
    if (auto found = lookup(a)) allow.push_back(without_slash(found->real));
  }
  for (const auto& c : credential_defaults) {
    const std::string path = fmt::format("{}/{}", base, c.path);
    auto found = lookup(path);
    if (!found) continue;
    const std::string real = without_slash(found->real);
    bool allowed_here = false;
    for (const auto& a : allow) {
      if (a == path || a == real || below(path, a) || below(real, a)) allowed_here = true;
      // Inside a hidden directory: the cover is the directory, whole.
      else if (found->dir && (below(a, path) || below(a, real)))
        return fail(usage_error("--allow-read", fmt::format("{} is inside the hidden {}: allow the directory itself",
                                                            a, path)));
    }
    if (allowed_here) continue;
    std::string entry = found->dir ? real + "/" : real;
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(std::move(entry));
  }
  return out;
}

// ---------------------------------------------------------------- git's own paths

namespace {

// A small file below `root` read through no symlink; nullopt when absent.
std::optional<std::string> read_beneath(int root, const std::string& rel) {
  Fd fd(sys::openat2(root, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
  if (!fd) return std::nullopt;
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  auto text = read_all(fd.get(), "read", rel, 1 << 20);
  if (!text) return std::nullopt;
  return *text;
}

bool is_dir_beneath(int root, const std::string& rel) {
  Fd fd(sys::openat2(root, rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
  return static_cast<bool>(fd);
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

// core.hooksPath in a git config file's text (the last one wins), or "".
// include.path and includeIf are not followed (docs/hardening.md).
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

std::vector<std::string> git_protected_paths(const std::vector<std::string>& roots, const std::string& home) {
  std::vector<std::string> out;
  auto add = [&](const std::string& root, const std::string& rel) {
    const std::string abs = without_slash(root) == "/" ? "/" + rel : without_slash(root) + "/" + rel;
    if (std::find(out.begin(), out.end(), abs) == out.end()) out.push_back(abs);
  };
  // The user's own config files, read as git reads them for every repository.
  std::vector<std::string> global;
  {
    std::vector<std::string> files;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x == '/') files.push_back(std::string(x) + "/git/config");
    if (home.starts_with('/')) {
      files.push_back(home + "/.config/git/config");
      files.push_back(home + "/.gitconfig");
    }
    for (const auto& f : files) {
      Fd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) continue;
      if (auto text = read_all(fd.get(), "read", f, 1 << 20)) global.push_back(*text);
    }
  }
  for (const auto& root : roots) {
    Fd top(sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
    if (!top) continue;
    const std::string r = without_slash(root);
    // The git directory: .git itself, or where a .git file points.
    std::string gitdir = ".git";
    if (auto file = read_beneath(top.get(), ".git")) {
      if (!file->starts_with("gitdir:")) continue;
      const std::string target = trim(std::string_view(*file).substr(7, file->find('\n') - 7));
      auto in = inside(root, r, target);
      if (!in) continue;  // outside every writable root: read-only there anyway
      gitdir = *in;
      for (const char* p : {"hooks", "config", "commondir", "config.worktree", "info/attributes"})
        if (read_beneath(top.get(), gitdir + "/" + p) || is_dir_beneath(top.get(), gitdir + "/" + p))
          add(root, gitdir + "/" + p);
    } else if (!is_dir_beneath(top.get(), ".git")) {
      continue;
    }
    // A commondir already there: config and hooks come from that directory.
    std::string common = gitdir;
    if (auto c = read_beneath(top.get(), gitdir + "/commondir")) {
      auto in = inside(root, r + "/" + gitdir, trim(std::string_view(*c).substr(0, c->find('\n'))));
      if (in) {
        common = *in;
        add(root, common + "/hooks");
        add(root, common + "/config");
      }
    }
    // core.hooksPath, relative to the worktree's top (where hooks run).
    std::vector<std::string> texts = global;
    if (auto t = read_beneath(top.get(), common + "/config")) texts.push_back(*t);
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
            if (read_beneath(top.get(), sub + "/" + p) || is_dir_beneath(top.get(), sub + "/" + p))
              add(root, sub + "/" + p);
          self(self, sub + "/modules", depth + 1);
        } else {
          self(self, sub, depth + 1);
        }
      }
    };
    module_dirs(module_dirs, common + "/modules", 0);
    module_dirs(module_dirs, common + "/worktrees", 5);
  }
  return out;
}

}  // namespace nsrun
