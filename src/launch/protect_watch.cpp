#include "launch/protect_watch.hpp"

#include <cstdio>

#include <algorithm>
#include <ctime>
#include <iterator>

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/core.h>

#include "launch/protect_restore.hpp"
#include "policy/gitdirs.hpp"

namespace nsrun {

ProtectWatch watch_protected(const Policy& policy) {
  ProtectWatch w;
  w.roots = writable_roots(policy);
  w.set = protected_paths(policy);
  w.before = scan_protected(policy, w.roots, w.set);
  if (std::find(w.set.begin(), w.set.end(), ".git/config") == w.set.end()) return w;
  // File times come from the coarse clock, never behind it: a file made
  // or changed from now on has a ctime at or after this instant. A file
  // system that keeps whole seconds (FAT two) rounds them down; its root
  // says so (a ctime without nanoseconds), and its instant goes back two
  // seconds.
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  for (const auto& root : w.roots) {
    if (policy.workspace_mode == WorkspaceMode::cow && root == policy.workspace) continue;
    struct statx sx{};
    struct timespec since = now;
    if (::statx(AT_FDCWD, root.c_str(), AT_SYMLINK_NOFOLLOW, STATX_CTIME, &sx) != 0 || sx.stx_ctime.tv_nsec == 0)
      since = {now.tv_sec - 2, 0};
    w.git_roots.push_back(root);
    w.git_since.push_back(since);
  }
  w.home = policy.layers.home;
  return w;
}

std::vector<std::string> held_mounts(const ProtectWatch& watch) {
  std::vector<std::string> out;
  auto join = [](const std::string& root, const std::string& rel) { return root == "/" ? "/" + rel : root + "/" + rel; };
  for (const auto& st : watch.before) {
    if (st.path.empty() || st.path.front() == '/') continue;
    if (st.decision.state == ProtectState::read_only || st.decision.state == ProtectState::covered)
      out.push_back(join(st.root, st.path));
    else if (st.decision.state == ProtectState::sealed && !st.decision.sealed_dir.empty())
      out.push_back(join(st.root, st.decision.sealed_dir));
  }
  return out;
}

namespace {

// The git material the run made or changed anywhere in its writable roots
// (policy/gitdirs.hpp), renamed out of git's way and said.
void report_git(const ProtectWatch& watch, LaunchReport& report) {
  auto held = [&](const std::string& root) {
    std::vector<std::string> out;
    for (const auto& st : watch.before)
      if (st.root == root && (st.decision.state == ProtectState::read_only ||
                              st.decision.state == ProtectState::covered || st.decision.state == ProtectState::sealed))
        out.push_back(st.path);
    return out;
  };
  std::vector<GitFinding> found;
  for (std::size_t i = 0; i < watch.git_roots.size(); ++i) {
    auto more = scan_git_armed({watch.git_roots[i]}, watch.git_since[i], held, watch.home);
    found.insert(found.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  if (found.empty()) return;
  quarantine(found, quarantine_token());
  for (const auto& f : found) {
    std::string path = (f.root == "/" ? "" : f.root) + (f.rel.empty() ? "" : "/" + f.rel);
    if (path.empty()) path = "/";
    if (f.unscanned) {
      fmt::print(stderr, "nsrun: git scan {}: not scanned ({}); git material made there during the run is not "
                         "quarantined\n",
                 printable(path), printable(f.why));
      report.protected_paths.push_back({path, "unscanned", {}, {}});
      continue;
    }
    const std::string_view op = f.created ? "created" : "changed";
    if (f.failed) {
      fmt::print(stderr, "nsrun: git configuration {}: {} during the run, NOT quarantined ({}); look at it before "
                         "running git there\n",
                 printable(path), op, printable(f.failed->message()));
      report.protected_paths.push_back({path, "armed", std::string(op), {}});
      continue;
    }
    fmt::print(stderr, "nsrun: git configuration {}: {} during the run; renamed to {} beside it, out of git's way "
                       "(rename it back to keep it)\n",
               printable(path), op, printable(f.renamed_to));
    report.protected_paths.push_back({path, "quarantined", std::string(op), f.renamed_to});
  }
}

}  // namespace

namespace {

bool command_never_started(const std::optional<Error>& failure) {
  if (!failure) return false;
  switch (failure->kind) {
    case ErrorKind::usage:
    case ErrorKind::not_found:
    case ErrorKind::not_exec: return true;
    case ErrorKind::setup: break;
  }
  switch (failure->phase) {
    case Phase::input:
    case Phase::prepare:
    case Phase::choose_rung:
    case Phase::build:
    case Phase::start_pid1:
    case Phase::confine: return true;
    default: return false;  // from the command's start on, it may have run
  }
}

}  // namespace

namespace {

// The Landlock rung kept the protected paths by snapshot and restore
// (launch/protect_restore.hpp): each thing it found changed is said, in
// the report, the verdict and on stderr, with what was done.
void report_restored(LaunchReport& report) {
  for (const auto& r : report.verdict.protected_restored) {
    const std::string path = printable(r.path);
    std::string words;
    if (r.action == "not-restored")
      words = fmt::format("protected path {}: {} during the run, NOT restored ({}){}; look at it before running git "
                          "or an editor there",
                          path, r.change, printable(r.detail),
                          r.renamed_to.empty() ? "" : fmt::format("; the run's version is {} beside it",
                                                                  printable(r.renamed_to)));
    else if (r.action == "quarantined")
      words = fmt::format("protected path {}: {} during the run; renamed to {} beside it, out of the way", path,
                          r.change, printable(r.renamed_to));
    else if (r.action == "moved-back")
      words = fmt::format("protected path {}: {} during the run; moved back ({}){}", path, r.change,
                          printable(r.detail),
                          r.renamed_to.empty() ? "" : fmt::format("; what stood in its place is {} beside it",
                                                                  printable(r.renamed_to)));
    else
      words = fmt::format("protected path {}: {} during the run; restored from the snapshot taken before it{}", path,
                          r.change,
                          r.renamed_to.empty() ? "" : fmt::format(" (the run's version is {} beside it)",
                                                                  printable(r.renamed_to)));
    fmt::print(stderr, "nsrun: {}\n", words);
    report.protected_paths.push_back({r.path, r.action, r.change, r.renamed_to});
    add_refusal(report.verdict, Refusal{"protected-path", r.path, "--unprotect", 1, words});
  }
}

}  // namespace

void report_protected(const ProtectWatch& watch, const Policy& policy, LaunchReport& report,
                      const std::optional<Error>& failure) {
  report.hidden_credentials = policy.hidden_paths;
  if (watch.before.empty()) return;
  // Only the paths not kept can have been created: one more walk for each
  // of them, none for the others.
  std::vector<ProtectedPathState> after;
  for (const auto& st : watch.before)
    if (st.decision.state == ProtectState::not_kept) {
      after = rescan_not_kept(watch.before);
      break;
    }
  for (std::size_t i = 0; i < watch.before.size(); ++i) {
    const auto& st = watch.before[i];
    ProtectedReport pr{fmt::format("{}/{}", st.root, st.path), std::string(name(st.decision.state)), {}, {}};
    // No mount held it on this rung: a snapshot did, restored after the run.
    const bool snapshot = report.rung == "landlock" && kept_by_snapshot(st);
    if (snapshot) pr.kept = "snapshot";
    if (!snapshot && st.decision.state == ProtectState::not_kept && i < after.size() && after[i].root == st.root &&
        after[i].path == st.path &&
        // The path itself now exists (or a symlink or file stands on its
        // way). `sealed` is only its parent made meanwhile: `git init` makes
        // .git/info, not .git/info/attributes.
        (after[i].decision.state == ProtectState::read_only || after[i].decision.state == ProtectState::covered)) {
      pr.operation = "created";
      fmt::print(stderr,
                 "nsrun: protected path {}: created during the run (direct mode cannot keep a missing path directly "
                 "in a writable root; the copy-on-write workspace can)\n",
                 printable(pr.path));
    }
    report.protected_paths.push_back(std::move(pr));
  }
  report_restored(report);
  if (!watch.git_roots.empty() && !command_never_started(failure)) report_git(watch, report);
}

}  // namespace nsrun
