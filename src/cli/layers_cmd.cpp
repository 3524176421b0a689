#include "cli/layers_cmd.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/core.h>

#include "cli/native.hpp"
#include "cli/runs_cmd.hpp"
#include "layers/changes.hpp"
#include "layers/dirs.hpp"
#include "layers/session.hpp"
#include "policy/gitdirs.hpp"
#include "policy/protect.hpp"
#include "policy/cow.hpp"
#include "policy/json.hpp"
#include "sys/syscalls.hpp"

namespace nsrun {

int command_error(const Error& e) {
  fmt::print(stderr, "nsrun: {}\n", e.message());
  return e.exit_code();
}

namespace {

int report(const Error& e) { return command_error(e); }

int usage(std::string_view what, std::string_view why) { return report(usage_error(what, why)); }

constexpr std::string_view help_text =
    "usage: nsrun changes ID [--patch|--json] [--cow-dir DIR]   what run ID changed in its workspace\n"
    "       nsrun commit ID [PATH...] [--force] [--json] [--cow-dir DIR]\n"
    "                                       apply run ID's changes (conflicts refused unless --force);\n"
    "                                       exit 3 conflicts, 4 protected, 5 failed (the highest that applies)\n"
    "       nsrun discard ID [--cow-dir DIR]  drop run ID's layer\n"
    "       nsrun runs [--json] | runs prune (--older-than AGE | --all)   list or remove run layers\n"
    "       nsrun home list                   the home layers\n"
    "       nsrun home diff [NAME]            what a home layer holds (default: this workspace's)\n"
    "       nsrun home reset [NAME]           drop a home layer (default: this workspace's)\n";

// commit's exit status, for a caller that branches on it without parsing:
// the worst of what was left undone.
constexpr int exit_conflicts = 3;
constexpr int exit_protected = 4;
constexpr int exit_failed = 5;

std::string_view kind_name(layers::Change::Kind k) {
  switch (k) {
    case layers::Change::Kind::added: return "added";
    case layers::Change::Kind::modified: return "modified";
    case layers::Change::Kind::deleted: return "deleted";
    case layers::Change::Kind::replaced: return "replaced";
  }
  return "added";
}

json::Value change_json(const layers::Change& c) {
  json::Value v = json::Value::object();
  v.set("kind", kind_name(c.kind));
  v.set("path", c.path);
  v.set("dir", c.dir);
  return v;
}

json::Value changes_json(const std::vector<layers::Change>& changes) {
  json::Value list = json::Value::array();
  for (const auto& c : changes) list.push_back(change_json(c));
  return list;
}

// The layer's .git/config, key by key (layers::review_layer_git_config()).
json::Value git_config_json(const ConfigReview& r) {
  json::Value out = json::Value::object();
  if (!r.error.empty()) out.set("error", r.error);
  json::Value keys = json::Value::array();
  auto strings = [](const std::vector<std::string>& v) {
    json::Value a = json::Value::array();
    for (const auto& s : v) a.push_back(s);
    return a;
  };
  for (const auto& c : r.changes) {
    json::Value k = json::Value::object();
    k.set("key", c.key);
    k.set("op", std::string(name(c.op)));
    k.set("before", strings(c.before));
    k.set("after", strings(c.after));
    k.set("refused", c.refused.empty() ? json::Value(nullptr) : json::Value(c.refused));
    keys.push_back(std::move(k));
  }
  out.set("keys", std::move(keys));
  return out;
}

std::string values_words(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + printable(fmt::format("\"{}\"", s), 200);
  return out;
}

// "  config + user.name = "x"" lines; a refused key says why.
std::string git_config_lines(const ConfigReview& r) {
  if (!r.error.empty()) return fmt::format("  config: refused whole: {}\n", printable(r.error));
  std::string out;
  for (const auto& c : r.changes) {
    const char sign = c.op == ConfigKeyChange::Op::added ? '+' : c.op == ConfigKeyChange::Op::removed ? '-' : '~';
    out += fmt::format("  config {} {}", sign, printable(c.key, 200));
    if (c.op != ConfigKeyChange::Op::removed) out += " = " + values_words(c.after);
    if (!c.refused.empty()) out += fmt::format(" (commit refuses it: {})", c.refused);
    out += "\n";
  }
  return out;
}

// A directory the caller names (a workspace, a home), opened through no
// symlink.
Result<Fd> open_exact_dir(const std::string& path) {
  const int fd = sys::openat2(AT_FDCWD, path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS);
  if (fd < 0) return fail(sys_error("open", path));
  return Fd(fd);
}

struct Where {
  Policy policy;  // only its layers part is read
};

// The same bases a launch from here would use.
Where where(const std::string& cow_dir) {
  CallerContext ctx = read_caller_context();
  Where w;
  w.policy.cow_dir = cow_dir;
  w.policy.workspace = ctx.cwd;
  std::string home;
  if (ctx.lookup && ctx.socket_env.home.starts_with('/'))
    if (auto found = ctx.lookup(ctx.socket_env.home); found && found->dir) home = found->real;
  resolve_layers(w.policy, ctx.socket_env.xdg_runtime_dir, ctx.xdg_state_home, home);
  settle_layers(w.policy);
  return w;
}

// Paths given to commit: relative to the workspace, or absolute inside it.
Result<std::vector<std::string>> relative_paths(const std::vector<std::string>& given, const std::string& workspace,
                                                const std::string& cwd) {
  std::vector<std::string> out;
  for (std::string p : given) {
    if (!p.starts_with('/')) p = cwd + "/" + p;
    std::string norm;
    std::string_view rest = p;
    std::vector<std::string> parts;
    while (!rest.empty()) {
      while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
      const std::size_t slash = rest.find('/');
      std::string part(rest.substr(0, slash));
      rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
      if (part.empty() || part == ".") continue;
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
        continue;
      }
      parts.push_back(std::move(part));
    }
    for (const auto& part : parts) norm += "/" + part;
    if (norm.empty()) norm = "/";
    if (norm == workspace) {
      out.emplace_back();
      continue;
    }
    if (!norm.starts_with(workspace + "/"))
      return fail(usage_error("commit", fmt::format("{} is not in the run's workspace {}", printable(p),
                                                    printable(workspace))));
    out.push_back(norm.substr(workspace.size() + 1));
  }
  return out;
}

// The run's own protected set (run.json, written by the launch): a change
// at a protected path, or one that adds, removes or replaces a directory on
// the way to one (".git" holding hooks), is refused.
bool commit_protected(std::string_view path, const std::vector<std::string>& set) {
  return match_protected(path, set) != ProtectMatch::none;
}

struct RunLayer {
  layers::RunInfo info;
  Fd upper;
  Fd workspace;
};

Result<RunLayer> open_run(const std::string& id, const std::string& cow_dir) {
  const Where w = where(cow_dir);
  auto info = layers::find_run(w.policy.layers.run_base, id);
  if (!info) return fail(info.error());
  RunLayer r;
  r.info = std::move(*info);
  auto upper = open_exact_dir(r.info.dir + "/upper");
  if (!upper) return fail(upper.error());
  r.upper = std::move(*upper);
  auto ws = open_exact_dir(r.info.workspace);
  if (!ws) return fail(ws.error());
  r.workspace = std::move(*ws);
  return r;
}

int run_commands(std::string_view verb, std::span<const std::string> args) {
  std::string id, cow_dir;
  bool patch = false, force = false, as_json = false;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--patch" && verb == "changes") patch = true;
    else if (a == "--force" && verb == "commit") force = true;
    else if (a == "--json" && verb != "discard") as_json = true;
    else if (a == "--cow-dir") {
      if (i + 1 >= args.size()) return usage("--cow-dir", "needs a value: DIR");
      cow_dir = args[++i];
    } else if (a == "--") {
      for (++i; i < args.size(); ++i) (id.empty() ? id : paths.emplace_back()) = args[i];
    } else if (a.starts_with("-")) {
      return usage(a, fmt::format("unknown option for nsrun {} (see nsrun {} --help)", verb, verb));
    } else if (id.empty()) {
      id = a;
    } else if (verb == "commit") {
      paths.push_back(a);
    } else {
      return usage(a, fmt::format("nsrun {} takes one run id", verb));
    }
  }
  if (id.empty()) return usage(std::string(verb), "needs a run id (printed on stderr when the run started)");
  if (patch && as_json) return usage("--json", "not with --patch");
  if (!cow_dir.empty() && !cow_dir.starts_with('/')) return usage("--cow-dir", "not an absolute path");

  if (verb == "discard") {
    // Needs no valid run.json: a run whose run.json was damaged can still
    // be dropped.
    const Where w = where(cow_dir);
    const std::string& base_path = w.policy.layers.run_base;
    if (!layers::valid_run_id(id)) return usage("run id", fmt::format("'{}' is not a run id", printable(id)));
    auto base = layers::open_private_dir(base_path, 0700, false);
    if (!base) return usage("run id", fmt::format("no run {} under {} ({})", id, base_path, base.error().message()));
    Fd dir(::openat(base->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return report(sys_error("open", base_path));
    struct stat st{};
    if (::fstatat(dir.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      return usage("run id", fmt::format("no run {} under {}", id, base_path));
    if (auto r = layers::remove_tree(dir.get(), id, base_path + "/" + id); !r) return report(r.error());
    fmt::print(stderr, "nsrun: run {} discarded\n", id);
    return 0;
  }

  auto run = open_run(id, cow_dir);
  if (!run) return report(run.error());
  if (verb == "changes") {
    auto changes = layers::collect(run->upper.get(), run->workspace.get());
    if (!changes) return report(changes.error());
    // The top-level .git/config changed: its keys, as commit will judge them.
    std::optional<ConfigReview> config;
    if (std::any_of(changes->begin(), changes->end(), [](const layers::Change& c) { return c.path == ".git/config"; })) {
      auto reviewed = layers::review_layer_git_config(run->upper.get(), run->workspace.get());
      if (!reviewed) return report(reviewed.error());
      config = std::move(*reviewed);
    }
    // The patch applies everything; the listings sum git's own files up.
    std::vector<layers::GitInternals> git;
    if (!patch) git = layers::split_git_internals(run->upper.get(), *changes);
    if (as_json) {
      json::Value out = json::Value::object();
      out.set("run_id", id);
      json::Value list = changes_json(*changes);
      for (const auto& g : git) {
        json::Value v = json::Value::object();
        v.set("kind", "git-internals");
        v.set("path", g.git_dir);
        v.set("dir", true);
        v.set("entries", static_cast<int64_t>(g.entries));
        v.set("files", static_cast<int64_t>(g.files));
        v.set("bytes", static_cast<int64_t>(g.bytes));
        list.push_back(std::move(v));
      }
      out.set("changes", std::move(list));
      if (config) out.set("git_config", git_config_json(*config));
      fmt::print("{}\n", json::dump(out, false));
      return 0;
    }
    if (!patch) {
      for (const auto& c : *changes) {
        fmt::print("{}", layers::list({c}));
        if (config && c.path == ".git/config") fmt::print("{}", git_config_lines(*config));
      }
      for (const auto& g : git) fmt::print("G {}\n", layers::describe(g));
      return 0;
    }
    auto text = layers::patch(run->upper.get(), run->workspace.get(), *changes);
    if (!text) return report(text.error());
    fmt::print("{}", *text);
    return 0;
  }

  // commit: without the run's protected set nothing is applied (fail closed).
  if (!run->info.protected_set)
    return report(Error{"commit", EINVAL, run->info.dir + "/run.json",
                        "records no protected set (an older nsrun wrote it); nothing committed"});
  char cwd[4096];
  auto rel = relative_paths(paths, run->info.workspace, ::getcwd(cwd, sizeof cwd) ? cwd : "/");
  if (!rel) return report(rel.error());
  layers::CommitOptions options;
  options.paths = std::move(*rel);
  options.force = force;
  options.start = run->info.start;
  // And where git really takes hooks and config from in this workspace now
  // (core.hooksPath, a .git file's gitdir, submodules), as a launch does.
  std::vector<std::string> git_paths;
  const char* home = std::getenv("HOME");
  const std::string& ws = run->info.workspace;
  auto git = git_protected_paths({ws}, home ? home : "");
  if (!git) return report(git.error());
  for (const auto& g : *git)
    git_paths.push_back(g.substr(ws == "/" ? 1 : ws.size() + 1));
  // And git material anywhere in the layer that a later git would obey (a
  // nested .git, a submodule's config and hooks: policy/gitdirs.hpp), with
  // the protected set's .git/config. A tree added as a whole that holds one
  // is refused whole (it is on the way to one).
  const std::vector<std::string>& set = *run->info.protected_set;
  GitArmed armed;
  if (std::find(set.begin(), set.end(), ".git/config") != set.end()) armed = find_git_armed(run->upper.get());
  git_paths.insert(git_paths.end(), armed.armed.begin(), armed.armed.end());
  for (const auto& [path, why] : armed.unread) git_paths.push_back(path);
  options.review_git_config = std::find(set.begin(), set.end(), ".git/config") != set.end();
  options.is_protected = [set, git_paths](std::string_view path) {
    return commit_protected(path, set) || commit_protected(path, git_paths);
  };
  // A run no sandbox runs on any more, and none of whose processes can
  // have outlived it (a PID namespace of its own): files may move out of
  // its layer. Otherwise a process left behind could write on into a moved
  // file after the review (commit_content_test.cpp).
  std::vector<Fd> run_locks;
  options.move = run->info.pid_namespace && layers::run_over(run->info.dir, run_locks);
  auto outcome = layers::commit(run->upper.get(), run->workspace.get(), options);
  if (!outcome) return report(outcome.error());
  if (as_json) {
    json::Value out = json::Value::object();
    out.set("run_id", id);
    out.set("applied", changes_json(outcome->applied));
    out.set("conflicts", changes_json(outcome->conflicts));
    out.set("protected", changes_json(outcome->refused));
    json::Value failed = json::Value::array();
    for (const auto& [c, e] : outcome->failed) {
      json::Value item = change_json(c);
      item.set("error", e.message());
      failed.push_back(std::move(item));
    }
    out.set("failed", std::move(failed));
    if (outcome->git_config) out.set("git_config", git_config_json(outcome->git_config->review));
    fmt::print("{}\n", json::dump(out, false));
  } else {
    fmt::print("{}", layers::list(outcome->applied));
  }
  if (outcome->git_config) {
    const ConfigReview& r = outcome->git_config->review;
    if (!r.error.empty())
      fmt::print(stderr, "nsrun: .git/config: not committed: {}\n", printable(r.error));
    for (const auto& c : r.changes)
      if (!c.refused.empty())
        fmt::print(stderr, "nsrun: .git/config: {} {} not committed: {} (edit the host's file yourself if you want it)\n",
                   printable(c.key, 200), name(c.op), c.refused);
      else if (outcome->git_config->written)
        fmt::print(stderr, "nsrun: .git/config: {} {}: applied\n", printable(c.key, 200), name(c.op));
  }
  for (const auto& c : outcome->refused) {
    // A tree refused for the git material it holds says which, or what in
    // it the commit could not look into.
    auto inside = [&](const std::string& g) {
      return g.size() > c.path.size() && g.starts_with(c.path) && g[c.path.size()] == '/';
    };
    std::string why;
    for (const auto& g : armed.armed)
      if (inside(g)) why += (why.empty() ? " (it holds git material: " : ", ") + printable(g, 256);
    for (const auto& [g, unread] : armed.unread)
      if (inside(g) || g == c.path)
        why += (why.empty() ? " (" : "; ") + fmt::format("the commit cannot look into {}: {}", printable(g, 256), unread);
    fmt::print(stderr, "nsrun: protected path {}: not committed{}\n", printable(c.path),
               why.empty() ? "" : printable(why + ")"));
  }
  for (const auto& c : outcome->conflicts)
    fmt::print(stderr, "nsrun: conflict: {}: changed on the host since the run started; not committed (--force "
                       "applies it)\n",
               printable(c.path));
  for (const auto& [c, e] : outcome->failed) fmt::print(stderr, "nsrun: commit {}: {}\n", printable(c.path), e.message());
  fmt::print(stderr, "nsrun: run {}: {} applied, {} conflicts, {} protected, {} failed\n", id, outcome->applied.size(),
             outcome->conflicts.size(), outcome->refused.size(), outcome->failed.size());
  return !outcome->failed.empty()      ? exit_failed
         : !outcome->refused.empty()   ? exit_protected
         : !outcome->conflicts.empty() ? exit_conflicts
                                       : 0;
}

int home_command(std::span<const std::string> args) {
  if (args.empty()) return usage("home", "needs list, diff or reset");
  const std::string& verb = args[0];
  if (verb != "list" && verb != "diff" && verb != "reset") return usage(verb, "not a home command (list, diff, reset)");
  const Where w = where("");
  const CowLayers& l = w.policy.layers;
  if (l.home_base.empty()) return usage("home", "no home layer directory: set XDG_STATE_HOME or HOME");
  if (args.size() > 2 || (verb == "list" && args.size() > 1)) return usage(verb, "too many arguments");
  const std::string layer = args.size() == 2 ? args[1] : l.home_name;
  if (!valid_layer_name(layer)) return usage(layer, "not a layer name");
  auto base = layers::open_private_dir(l.home_base, 0700, false);
  if (!base) {
    if (base.error().err == ENOENT && verb == "list") return 0;
    return report(base.error());
  }
  Fd dir(::openat(base->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return report(sys_error("open", l.home_base));
  if (verb == "list") {
    auto names = layers::list_dir(dir.get(), l.home_base);
    if (!names) return report(names.error());
    for (const auto& n : *names)
      if (valid_layer_name(n)) fmt::print("{}{}\n", n, n == l.home_name ? " (this workspace)" : "");
    return 0;
  }
  if (verb == "reset") {
    if (::faccessat(dir.get(), layer.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0)
      return usage(layer, fmt::format("no home layer of that name under {}", l.home_base));
    if (auto r = layers::remove_tree(dir.get(), layer, l.home_base + "/" + layer); !r) return report(r.error());
    fmt::print(stderr, "nsrun: home layer {} reset\n", layer);
    return 0;
  }
  if (l.home.empty()) return usage("home diff", "HOME is not a directory");
  auto upper = open_exact_dir(l.home_base + "/" + layer + "/upper");
  if (!upper) return report(upper.error());
  auto home = open_exact_dir(l.home);
  if (!home) return report(home.error());
  auto changes = layers::collect(upper->get(), home->get());
  if (!changes) return report(changes.error());
  fmt::print("{}", layers::list(*changes));
  return 0;
}

}  // namespace

bool is_layers_command(std::string_view verb) {
  return verb == "changes" || verb == "commit" || verb == "discard" || verb == "home" || verb == "runs";
}

std::string run_base_here(const std::string& cow_dir) { return where(cow_dir).policy.layers.run_base; }

int layers_main(std::span<const std::string> args) {
  if (args[0] == "runs") return runs_main(args.subspan(1));
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      fmt::print("{}", help_text);
      return 0;
    }
  if (args[0] == "home") return home_command(args.subspan(1));
  return run_commands(args[0], args.subspan(1));
}

}  // namespace nsrun
