#include "cli/explain.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <memory>

#include <fmt/format.h>

#include "launch/launch.hpp"
#include "policy/env.hpp"
#include "sys/fd.hpp"

namespace nsrun {

namespace {

// Hiding is by path: an existing hard link to a hidden file, from outside
// the hidden directory, still reaches its contents (issue 10, item 9). No
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
  Policy p = policy;
  if (p.argv.empty()) p.argv = {"(no command)"};
  preview_layers(p);
  auto prepared = prepare(p);
  if (!prepared) return fail(prepared.error());
  if (policy.preset) {
    out += fmt::format("workspace: {}\n", policy.workspace);
    for (const auto& w : policy.writable) out += fmt::format("writable: {}\n", w);
    out += describe_layers(policy);
  }
  if (!policy.host_backend.empty()) out += fmt::format("host backend: {}\n", policy.host_backend);
  out += describe(prepared->plan);
  out += policy.cap_add.empty() ? "capabilities: all dropped; no_new_privs\n"
                                : fmt::format("capabilities: all dropped but {}; no_new_privs\n", fmt::join(policy.cap_add, " "));
  out += fmt::format("seccomp: {}\n", describe_filter(filter_spec(policy, FilterRung::namespaces), prepared->seccomp));
  // The Landlock rung cannot tell a writable root from the rest of the host
  // for these: its filter refuses them everywhere.
  out += fmt::format("landlock rung: refuses everywhere, writable roots too: {} (Landlock cannot confine them to "
                     "the writable roots)\n",
                     fmt::join(landlock_refused_everywhere(), ", "));
  out += fmt::format("network: {}\n", policy.network == Network::none
                                           ? "none (a new network namespace with only lo up, 127.0.0.1; pathname unix sockets are "
                                             "files, not network: see unix sockets)"
                                           : "share (the host's network)");
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
  std::string names;
  for (const auto& e : prepared->env) names += fmt::format(" {}", e.substr(0, e.find('=')));
  out += fmt::format("environment:{}\n", names.empty() ? " (empty)" : names);
  out += hard_link_warnings(policy);
  if (!policy.argv.empty()) {
    out += fmt::format("command: {}\n", fmt::join(policy.argv, " "));
    out += fmt::format("exec candidates: {}\n", fmt::join(prepared->exec_paths, " "));
  }
  return out;
}

}  // namespace nsrun
