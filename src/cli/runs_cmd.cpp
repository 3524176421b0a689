// `nsrun runs [--json]` and `nsrun runs prune`: the run layers a machine's
// review loop leaves under the run base, listed with their workspace, age,
// size and state, and removed when over.
#include "cli/runs_cmd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "cli/layers_cmd.hpp"
#include "layers/dirs.hpp"
#include "layers/session.hpp"
#include "policy/json.hpp"

namespace nsrun {

namespace {

int report(const Error& e) { return command_error(e); }
int usage(std::string_view what, std::string_view why) { return command_error(usage_error(what, why)); }

constexpr std::string_view help_text =
    "usage: nsrun runs [--json] [--cow-dir DIR]     the run layers: id, state, age, size, workspace\n"
    "       nsrun runs prune (--older-than AGE | --all) [--json] [--cow-dir DIR]\n"
    "                                     remove ended runs (AGE: 30m, 12h, 7d); a running one is never touched\n";

std::string_view state_name(layers::RunState s) {
  switch (s) {
    case layers::RunState::running: return "running";
    case layers::RunState::ended: return "ended";
    case layers::RunState::stopped: return "stopped";
  }
  return "running";
}

struct RunRow {
  std::string id;
  std::string workspace;  // empty: run.json does not say (damaged)
  std::optional<int64_t> started;
  layers::RunState state = layers::RunState::running;
  layers::TreeSize size;
};

// Seconds in "90", "90s", "30m", "12h", "7d".
std::optional<int64_t> parse_age(std::string_view text) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n < 0 || end == text.data()) return std::nullopt;
  const std::string_view unit(end, text.data() + text.size() - end);
  int64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else return std::nullopt;
  if (n > INT64_MAX / scale) return std::nullopt;
  return n * scale;
}

std::string age_text(int64_t s) {
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string size_text(uint64_t b) {
  if (b < 1000) return fmt::format("{}B", b);
  if (b < 1000'000) return fmt::format("{:.1f}kB", static_cast<double>(b) / 1e3);
  if (b < 1000'000'000) return fmt::format("{:.1f}MB", static_cast<double>(b) / 1e6);
  return fmt::format("{:.1f}GB", static_cast<double>(b) / 1e9);
}

int64_t now_sec() {
  struct timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec;
}

json::Value row_json(const RunRow& r, int64_t now) {
  json::Value v = json::Value::object();
  v.set("id", r.id);
  v.set("state", state_name(r.state));
  if (r.workspace.empty()) v.set("workspace", json::Value());
  else v.set("workspace", r.workspace);
  if (r.started) {
    v.set("started_sec", *r.started);
    v.set("age_sec", std::max<int64_t>(0, now - *r.started));
  } else {
    v.set("started_sec", json::Value());
    v.set("age_sec", json::Value());
  }
  v.set("files", static_cast<int64_t>(r.size.files));
  v.set("bytes", static_cast<int64_t>(r.size.bytes));
  return v;
}

int runs(std::span<const std::string> args) {
  bool as_json = false, prune = false, all = false;
  std::optional<int64_t> older;
  std::string cow_dir;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") as_json = true;
    else if (a == "prune" && i == 0) prune = true;
    else if (a == "--all" && prune) all = true;
    else if (a == "--older-than" && prune) {
      if (i + 1 >= args.size()) return usage("--older-than", "needs a value: AGE (30m, 12h, 7d)");
      older = parse_age(args[++i]);
      if (!older) return usage("--older-than", fmt::format("'{}' is not an age (30m, 12h, 7d)", printable(args[i])));
    } else if (a == "--cow-dir") {
      if (i + 1 >= args.size()) return usage("--cow-dir", "needs a value: DIR");
      cow_dir = args[++i];
    } else {
      return usage(printable(a), "unknown argument for nsrun runs (see nsrun runs --help)");
    }
  }
  if (!cow_dir.empty() && !cow_dir.starts_with('/')) return usage("--cow-dir", "not an absolute path");
  if (prune && all == older.has_value()) return usage("runs prune", "needs --older-than AGE or --all (one of them)");

  const std::string base_path = run_base_here(cow_dir);
  if (base_path.empty()) return usage("runs", "no run directory: set XDG_RUNTIME_DIR or HOME, or give --cow-dir DIR");
  std::vector<RunRow> rows;
  std::vector<std::string> pruned;
  auto base = layers::open_private_dir(base_path, 0700, false);
  if (!base && base.error().err != ENOENT) return report(base.error());
  const int64_t now = now_sec();
  if (base) {
    Fd dir(::openat(base->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return report(sys_error("open", base_path));
    auto names = layers::list_dir(dir.get(), base_path);
    if (!names) return report(names.error());
    for (const auto& n : *names) {
      struct stat st{};
      if (!layers::valid_run_id(n) || ::fstatat(dir.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
          !S_ISDIR(st.st_mode))
        continue;
      RunRow row;
      row.id = n;
      if (auto info = layers::find_run(base_path, n)) {
        row.workspace = info->workspace;
        row.started = static_cast<int64_t>(info->start.tv_sec);
      }
      // Held until the row is done: a launch cannot start on a layer
      // being pruned (it makes a layer of its own anyway).
      std::vector<Fd> held;
      row.state = layers::run_state(base_path + "/" + n, held);
      const int64_t started = row.started.value_or(static_cast<int64_t>(st.st_mtime));
      if (prune && row.state == layers::RunState::ended && (all || now - started >= *older)) {
        if (auto r = layers::remove_tree(dir.get(), n, base_path + "/" + n); !r) return report(r.error());
        pruned.push_back(n);
        if (!as_json) fmt::print(stderr, "nsrun: run {} pruned\n", n);
        continue;
      }
      Fd run(::openat(dir.get(), n.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (run) row.size = layers::tree_size(run.get(), "upper");
      rows.push_back(std::move(row));
    }
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RunRow& a, const RunRow& b) { return a.started.value_or(0) < b.started.value_or(0); });
  if (as_json) {
    json::Value out = json::Value::object();
    out.set("run_base", base_path);
    if (prune) {
      json::Value list = json::Value::array();
      for (const auto& id : pruned) list.push_back(id);
      out.set("pruned", std::move(list));
    }
    json::Value list = json::Value::array();
    for (const auto& r : rows) list.push_back(row_json(r, now));
    out.set(prune ? "kept" : "runs", std::move(list));
    fmt::print("{}\n", json::dump(out, false));
    return 0;
  }
  if (prune) {
    fmt::print(stderr, "nsrun: {} pruned, {} kept\n", pruned.size(), rows.size());
    return 0;
  }
  for (const auto& r : rows)
    fmt::print("{:<14} {:<8} {:>5} {:>8} {}\n", r.id, state_name(r.state),
               r.started ? age_text(std::max<int64_t>(0, now - *r.started)) : "?", size_text(r.size.bytes),
               r.workspace.empty() ? "(run.json unreadable)" : printable(r.workspace));
  return 0;
}

}  // namespace

int runs_main(std::span<const std::string> args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      fmt::print("{}", help_text);
      return 0;
    }
  return runs(args);
}

}  // namespace nsrun
