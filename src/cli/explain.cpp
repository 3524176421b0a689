#include "cli/explain.hpp"

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include <memory>

#include <fmt/format.h>

#include "landlock/ruleset.hpp"
#include "launch/rung.hpp"
#include "launch/spec.hpp"
#include "ns/credentials.hpp"
#include "policy/env.hpp"
#include "policy/protect.hpp"
#include "sys/fd.hpp"

namespace nsrun {

namespace {

// Hiding is by path: an existing hard link to a hidden file, from outside
// the hidden directory, still reaches its contents. No
// mount can cover an inode under every name it has, so `explain` names the
// regular files with more than one link: the hidden path itself, and the
// regular files directly inside a hidden directory (not deeper: a tree
// walk of $HOME would make explain slow; the docs say so).
std::string hard_link_warnings(const Policy& policy) {
  constexpr int most = 20;  // per hidden path, then a count
  std::string out;
  for (const MountOp& m : policy.mounts) {
    if (m.kind != MountOp::Kind::hide) continue;
    Fd fd(::open(m.dest.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st{};
    if (!fd || ::fstat(fd.get(), &st) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      if (st.st_nlink > 1)
        out += fmt::format("warning: --hide {}: a regular file with {} links; its other names are not hidden\n",
                           printable(m.dest), st.st_nlink);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    const int dir_fd = ::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) continue;
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dir_fd), ::closedir);
    if (!dir) {
      ::close(dir_fd);
      continue;
    }
    int found = 0;
    while (dirent* e = ::readdir(dir.get())) {
      if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;
      struct stat f{};
      if (::fstatat(dir_fd, e->d_name, &f, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(f.st_mode) || f.st_nlink < 2)
        continue;
      if (++found <= most)
        out += fmt::format("warning: --hide {}: {} has {} links; its names outside {} are not hidden\n",
                           printable(m.dest), printable(e->d_name), f.st_nlink, printable(m.dest));
    }
    if (found > most)
      out += fmt::format("warning: --hide {}: {} more files with several links\n", printable(m.dest),
                         found - most);
  }
  return out;
}

std::string_view reason_of(std::span<const DefaultPath> set, std::string_view path) {
  for (const auto& d : set)
    if (d.path == path) return d.why;
  return "--protect";
}

// Each protected path, how the namespace rung keeps it and
// why it is protected; each hidden credential and why.
std::string protection_lines(const Policy& policy) {
  std::string out;
  const auto states = scan_protected(policy);
  if (!states.empty()) out += "protected paths (namespace rung; now):\n";
  bool not_kept = false, present = false;
  for (const auto& st : states) {
    std::string how;
    switch (st.decision.state) {
      case ProtectState::read_only: how = "read-only (bound on itself; cannot be written, removed or replaced)"; break;
      case ProtectState::covered: how = "covered (a symlink or a non-directory on the way: not followed, sealed)"; break;
      case ProtectState::sealed:
        how = fmt::format("missing, uncreatable ({} is sealed: its entries are the real ones, no new name in it)",
                          st.decision.sealed_dir);
        break;
      case ProtectState::not_kept:
        how = "missing, NOT KEPT: direct mode cannot stop its creation without a placeholder on the host";
        break;
      case ProtectState::unreachable: how = "unreachable (the root cannot be opened without a symlink)"; break;
    }
    not_kept = not_kept || st.decision.state == ProtectState::not_kept;
    present = present || st.decision.state == ProtectState::read_only || st.decision.state == ProtectState::covered ||
              st.decision.state == ProtectState::sealed;
    out += fmt::format("  {}/{}: {}; {}\n", printable(st.root), printable(st.path), how,
                       reason_of(default_protected(), st.path));
  }
  if (not_kept)
    out += "  a path NOT KEPT that the command creates is reported after the run (stderr, report \"protected\"); "
           "the copy-on-write workspace keeps it\n";
  if (present)
    out += "  landlock rung: refuses (landlock-cannot-express) while a protected path exists or is sealed\n";
  if (policy.hidden_paths.empty()) {
    out += policy.hide_defaults ? "hidden credentials: none of the default ones exists\n"
                                : "hidden credentials: none (--hide-defaults none)\n";
  } else {
    out += "hidden credentials (reads fail; both rungs):\n";
    for (const auto& h : policy.hidden_paths) {
      const bool copied = policy.settings_copy &&
                          std::any_of(policy.settings_copies.begin(), policy.settings_copies.end(),
                                      [&](const SettingsCopy& c) { return c.path == h; });
      out += fmt::format("  {}{}\n", printable(h),
                         copied ? " (namespace rung: a read-only copy without its credential lines; "
                                  "Landlock rung: hidden whole; --no-settings-copy hides it whole)"
                                : "");
      for (const auto& f : policy.shown_in_hidden)
        if (h.ends_with('/') && f.starts_with(h))
          out += fmt::format("    but {} is shown, read-only (--allow-read; itself only: a regular file with one "
                             "link, through no symlink)\n",
                             printable(f));
    }
    out += "  (the default set, with reasons:";
    for (const auto& d : default_credentials()) out += fmt::format(" ~/{}: {};", d.path, d.why);
    out += ")\n";
    out += "  (git's config files, ~/.gitconfig, ~/.config/git/config and $XDG_CONFIG_HOME/git/config, are "
           "listed only when an entry could hold a secret: credential.*, include.*, a token, a password, a URL "
           "with a user or password; docs/hardening.md)\n";
  }
  return out;
}

}  // namespace

Result<std::string> explain(const Policy& policy) {
  // Without the preset the mount list is exactly the one given (the bwrap
  // dialect): the mode and workspace decide nothing then.
  std::string out = policy.preset ? fmt::format("mode: {}\n", name(policy.mode))
                                  : std::string("mode: none (the mount list below is exactly as given)\n");
  if (policy.mode == Mode::full_access) {
    out += "confinement: none (full-access runs the command directly)\n";
    return out;
  }
  // The layer directories a launch would make, named, not made.
  Policy previewed = policy;
  preview_layers(previewed);
  auto prepared = prepare(previewed);
  if (!prepared) return fail(prepared.error());
  if (policy.preset) {
    out += fmt::format("workspace: {}\n", policy.workspace);
    for (const auto& w : policy.writable) out += fmt::format("writable: {}\n", w);
    out += describe_layers(previewed);
  }
  if (!policy.host_backend.empty()) out += fmt::format("host backend: {}\n", policy.host_backend);
  // The plan of the rung that would run: the first of the ladder's that
  // --backend allows, the namespace rung's unless --backend landlock pins
  // the other (auto falls to Landlock only when the host refuses
  // namespaces, which `nsrun probe` tells).
  for (const auto& rung : rungs()) {
    if (!rung_allowed(policy.backend, rung->name())) continue;
    if (auto r = rung->explain(previewed, *prepared, out); !r) return fail(r.error());
    break;
  }
  if (policy.unix_sockets == UnixSockets::none)
    out += "unix sockets: none (socket(AF_UNIX) refused by the filter on both rungs; socketpair works; abstract "
           "sockets and sockets in the private /tmp are refused too)\n";
  else if (policy.hidden_sockets.empty())
    out += "unix sockets: hide-known (none of the well-known host sockets exists); other host sockets are "
           "reachable\n";
  else
    out += fmt::format("unix sockets: hide-known, covered on the namespace rung: {}; the Landlock rung cannot "
                       "cover them and refuses socket(AF_UNIX) instead (socketpair works); other host sockets "
                       "are reachable\n",
                       printable(fmt::format("{}", fmt::join(policy.hidden_sockets, " "))));
  // The limits as the namespace rung would keep them.
  out += prepared->limits.decisions.empty()
             ? std::string("limits: none\n")
             : fmt::format("limits (namespace rung; --limits {}):\n{}", name(policy.limits.mode),
                           describe(prepared->limits));
  out += fmt::format("refused calls: {}\n", prepared->seccomp_notify.empty()
                                                 ? "refused by the filter, not observed (no --report or --verdict)"
                                                 : "sent to nsrun, recorded and refused (SECCOMP_RET_USER_NOTIF)");
  if (policy.watch_writes)
    out += fmt::format("write watch: on ({}: write-intent calls go to nsrun, which reads their paths and always "
                       "lets them continue; attempts outside the writable roots are listed as observations)\n",
                       prepared->watch_writes.empty() ? "its rules join the notifying filter (one listener per task)"
                                                      : "a filter of its own, loaded before the plain one");
  out += protection_lines(policy);
  std::string names;
  for (const auto& e : prepared->env) names += fmt::format(" {}", e.substr(0, e.find('=')));
  out += fmt::format("environment:{}\n", names.empty() ? " (empty)" : names);
  if (wants_offline_environment(policy)) {
    std::string offline;
    for (const auto& [key, value] : offline_environment()) offline += fmt::format(" {}={}", key, value);
    out += fmt::format("offline switches (--network none; --no-offline-env leaves them):{}\n", offline);
  }
  out += hard_link_warnings(policy);
  if (!policy.argv.empty()) {
    out += fmt::format("command: {}\n", fmt::join(policy.argv, " "));
    out += fmt::format("exec candidates: {}\n", fmt::join(prepared->exec_paths, " "));
  }
  return out;
}

}  // namespace nsrun
