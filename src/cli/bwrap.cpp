#include "cli/bwrap.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "cli/explain.hpp"
#include "launch/launch.hpp"
#include "ns/credentials.hpp"
#include "policy/presets.hpp"
#include "policy/validate.hpp"
#include "sys/io.hpp"

namespace nsrun {

namespace {

// A failure in bwrap's words: message() gives "<text>" or "<text>: <strerror>".
Error said(std::string text, int err = 0) {
  Error e{std::move(text), err, {}, {}, ErrorKind::usage};
  return e;
}

// One row of --help: the option, its arguments, what it does (our words).
struct HelpRow {
  std::string_view option;
  std::string_view help;
};

constexpr HelpRow help_rows[] = {
    {"--help", "Show this text and exit"},
    {"--version", "Show the version and exit"},
    {"--args FD", "Read more arguments, separated by NUL bytes, from FD"},
    {"--argv0 VALUE", "Give the command VALUE as its argv[0]"},
    {"--level-prefix", "Start each diagnostic line with a syslog level such as <3>"},
    {"--unshare-all", "Make every namespace below (user and cgroup only where possible)"},
    {"--share-net", "Keep the caller's network namespace despite an earlier --unshare-all"},
    {"--unshare-user", "Make a user namespace (implied when not run by root)"},
    {"--unshare-user-try", "Make a user namespace if the kernel can"},
    {"--unshare-ipc", "Make an IPC namespace"},
    {"--unshare-pid", "Make a PID namespace"},
    {"--unshare-net", "Make a network namespace (only loopback inside)"},
    {"--unshare-uts", "Make a UTS namespace (hostname)"},
    {"--unshare-cgroup", "Make a cgroup namespace"},
    {"--unshare-cgroup-try", "Make a cgroup namespace if the kernel can"},
    {"--userns FD", "Use the user namespace FD instead of making one (not with --unshare-user)"},
    {"--userns2 FD", "After set-up switch to the user namespace FD (only useful with --userns)"},
    {"--disable-userns", "Keep the command from making user namespaces"},
    {"--assert-userns-disabled", "Refuse to run unless making user namespaces already fails"},
    {"--pidns FD", "Use the PID namespace FD (as the parent of the new one with --unshare-pid)"},
    {"--uid UID", "The uid inside (needs a user namespace)"},
    {"--gid GID", "The gid inside (needs a user namespace)"},
    {"--hostname NAME", "The hostname inside (needs --unshare-uts)"},
    {"--chdir DIR", "Working directory of the command"},
    {"--clearenv", "Start from an empty environment (PWD is still set)"},
    {"--setenv VAR VALUE", "Set VAR to VALUE"},
    {"--unsetenv VAR", "Remove VAR"},
    {"--lock-file DEST", "Hold a read lock on DEST (inside) while the sandbox runs"},
    {"--sync-fd FD", "Keep FD open as long as the sandbox runs"},
    {"--bind SRC DEST", "Bind the host path SRC on DEST, writable"},
    {"--bind-try SRC DEST", "Like --bind; skipped when SRC does not exist"},
    {"--dev-bind SRC DEST", "Like --bind, device nodes usable"},
    {"--dev-bind-try SRC DEST", "Like --dev-bind; skipped when SRC does not exist"},
    {"--ro-bind SRC DEST", "Bind the host path SRC on DEST, read-only"},
    {"--ro-bind-try SRC DEST", "Like --ro-bind; skipped when SRC does not exist"},
    {"--bind-fd FD DEST", "Bind the directory open as FD on DEST"},
    {"--ro-bind-fd FD DEST", "Bind the directory open as FD on DEST, read-only"},
    {"--remount-ro DEST", "Make the mount at DEST read-only"},
    {"--overlay-src SRC", "A lower layer for the next overlay (first given is lowest)"},
    {"--overlay RWSRC WORKDIR DEST", "overlayfs on DEST, writes going to RWSRC (WORKDIR: empty, same fs)"},
    {"--tmp-overlay DEST", "overlayfs on DEST, writes going to a private tmpfs"},
    {"--ro-overlay DEST", "Read-only overlayfs on DEST"},
    {"--exec-label LABEL", "SELinux exec label (refused: nsrun cannot apply labels)"},
    {"--file-label LABEL", "SELinux file label (refused: nsrun cannot apply labels)"},
    {"--proc DEST", "A fresh procfs on DEST"},
    {"--dev DEST", "A minimal /dev on DEST"},
    {"--tmpfs DEST", "An empty tmpfs on DEST"},
    {"--mqueue DEST", "A POSIX message queue filesystem on DEST"},
    {"--dir DEST", "Create the directory DEST"},
    {"--file FD DEST", "Create the file DEST holding what FD gives"},
    {"--bind-data FD DEST", "Bind a file holding what FD gives on DEST"},
    {"--ro-bind-data FD DEST", "Bind a file holding what FD gives on DEST, read-only"},
    {"--symlink SRC DEST", "Create the symlink DEST pointing at SRC"},
    {"--seccomp FD", "Load the compiled seccomp program read from FD (the last one given)"},
    {"--add-seccomp-fd FD", "Load the compiled seccomp program read from FD (repeatable)"},
    {"--block-fd FD", "Before running the command, wait for data (or EOF) on FD"},
    {"--userns-block-fd FD", "After the id maps are written, wait for data (or EOF) on FD"},
    {"--info-fd FD", "Write the child pid and namespace ids to FD as JSON"},
    {"--json-status-fd FD", "Write JSON lines to FD: the child pid, later the exit code"},
    {"--new-session", "Run the command in a new session (setsid)"},
    {"--die-with-parent", "Kill the sandbox when the caller of nsrun dies"},
    {"--as-pid-1", "The command is PID 1 itself (needs --unshare-pid)"},
    {"--cap-add CAP", "Keep CAP (or ALL) inside"},
    {"--cap-drop CAP", "Drop CAP (or ALL) inside"},
    {"--perms OCTAL", "Mode for the next --tmpfs, --dir, --file, --bind-data, --ro-bind-data"},
    {"--size BYTES", "Size of the next --tmpfs"},
    {"--chmod OCTAL PATH", "Change the mode of PATH, which must exist"},
};

std::optional<int> parse_number(std::string_view text, int base = 10) {
  long long v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > INT_MAX) return std::nullopt;
  return static_cast<int>(v);
}

// bwrap's --size: strtoull's syntax (base 0: 0x.. hex, 0.. octal), but a
// digit first, so no sign and no leading space; zero and overflow refused;
// at most what a tmpfs size can hold (SIZE_MAX >> 1, as bwrap).
Result<uint64_t> parse_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front())))
    return fail(said("--size takes a non-zero number of bytes"));
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == nullptr || *end != '\0' || v == 0)
    return fail(said("--size takes a non-zero number of bytes"));
  constexpr uint64_t max_tmpfs_bytes = SIZE_MAX >> 1;
  if (v > max_tmpfs_bytes) return fail(said(fmt::format("--size (for tmpfs) is limited to {}", max_tmpfs_bytes)));
  return static_cast<uint64_t>(v);
}

std::string absolute_from(std::string_view base, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  if (base.empty() || base == "/") return "/" + path;
  return fmt::format("{}/{}", base, path);
}

// bwrap's capability sets, applied in command-line order.
using CapSet = std::bitset<64>;

Result<CapSet> cap_bits(const std::string& name) {
  CapSet out;
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "ALL") return out.set();
  auto caps = parse_capabilities({name});
  if (!caps) return fail(said(fmt::format("unknown cap: {}", name)));
  for (int c : *caps) out.set(static_cast<std::size_t>(c));
  return out;
}

class Parser {
 public:
  Parser(const BwrapContext& ctx) : ctx_(ctx) {}

  Result<BwrapInvocation> parse(std::vector<std::string> args) {
    args_ = std::move(args);
    Policy& p = inv_.policy;
    // bwrap's defaults, not nsrun's: only the mount namespace unless asked,
    // the caller's list of mounts and nothing else, no default filter.
    p.preset = false;
    p.follow_symlinks = true;
    p.ns = Namespaces{false, false, false, false, false, false};
    p.hostname.clear();
    p.proc = ProcMode::fresh;
    p.seccomp = SeccompMode::none;
    p.allow_nested_userns = true;
    p.new_session = false;
    p.workspace = ctx_.cwd;

    while (i_ < args_.size()) {
      const std::string arg = args_[i_++];
      if (arg == "--") break;
      if (arg.empty() || arg.front() != '-') {
        --i_;
        break;
      }
      const bool modifier = arg == "--perms" || arg == "--size";
      if (auto r = option(arg); !r) return fail(r.error());
      if (inv_.action != BwrapInvocation::Action::run) return inv_;
      if (!modifier && perms_) return fail(said("--perms must be followed by an option that creates a file"));
      if (!modifier && size_) return fail(said("--size must be followed by --tmpfs"));
      if (arg != "--overlay-src" && !overlay_src_.empty()) return fail(said(overlay_src_dangling));
    }
    if (!overlay_src_.empty()) return fail(said(overlay_src_dangling));
    p.argv.assign(args_.begin() + static_cast<std::ptrdiff_t>(i_), args_.end());
    if (p.argv.empty()) {
      inv_.action = BwrapInvocation::Action::help;
      usage_failure_ = true;
      return fail(said("usage"));
    }
    if (auto r = finish(); !r) return fail(r.error());
    return inv_;
  }

  bool usage_failure() const { return usage_failure_; }

 private:
  static constexpr const char* overlay_src_dangling =
      "--overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or --ro-overlay";

  // bwrap warns as it parses, with the level prefix as set so far.
  void warn(std::string_view text) const {
    if (ctx_.warn) ctx_.warn(fmt::format("{}bwrap: {}", inv_.level_prefix ? "<4>" : "", text));
  }

  Result<std::vector<std::string>> take(const std::string& opt, int n) {
    if (i_ + static_cast<std::size_t>(n) > args_.size()) {
      static constexpr const char* counts[] = {"", "an argument", "two arguments", "three arguments"};
      return fail(said(fmt::format("{} takes {}", opt, counts[n])));
    }
    std::vector<std::string> out(args_.begin() + static_cast<std::ptrdiff_t>(i_),
                                 args_.begin() + static_cast<std::ptrdiff_t>(i_ + n));
    i_ += static_cast<std::size_t>(n);
    return out;
  }

  Result<int> fd(const std::string& text) {
    auto v = parse_number(text);
    if (!v) return fail(said(fmt::format("Invalid fd: {}", text)));
    return *v;
  }

  Result<int> open_fd(const std::string& text) {
    auto v = fd(text);
    if (!v) return v;
    if (ctx_.fd_open && !ctx_.fd_open(*v)) return fail(said(fmt::format("Invalid fd: {}", text)));
    return v;
  }

  Result<std::string> fd_data(const std::string& text) {
    auto v = fd(text);
    if (!v) return fail(v.error());
    if (!ctx_.read_fd) return fail(said(fmt::format("Can't read from fd {}", *v), EBADF));
    auto data = ctx_.read_fd(*v);
    if (!data) return fail(said(fmt::format("Can't read from fd {}", *v), data.error().err));
    return data;
  }

  MountOp op(MountOp::Kind kind, const std::string& dest) { return mount_op(kind, "", absolute_from("/", dest)); }

  // An operation that takes no --perms leaves a pending one pending, which
  // the parse loop then refuses.
  void push(MountOp m, bool takes_perms = false) {
    if (takes_perms) {
      m.perms = perms_;
      perms_.reset();
    }
    inv_.policy.mounts.push_back(std::move(m));
  }

  Result<void> bind(MountOp::Kind kind, bool optional, const std::string& opt) {
    auto a = take(opt, 2);
    if (!a) return fail(a.error());
    MountOp m = op(kind, (*a)[1]);
    m.source = absolute_from(ctx_.cwd, (*a)[0]);
    m.optional = optional;
    push(std::move(m));
    return {};
  }

  Result<void> bind_fd(MountOp::Kind kind, const std::string& opt) {
    auto a = take(opt, 2);
    if (!a) return fail(a.error());
    auto f = open_fd((*a)[0]);
    if (!f) return fail(f.error());
    MountOp m = op(kind, (*a)[1]);
    m.source_fd = *f;
    push(std::move(m));
    return {};
  }

  Result<void> data_op(MountOp::Kind kind, const std::string& opt) {
    auto a = take(opt, 2);
    if (!a) return fail(a.error());
    auto data = fd_data((*a)[0]);
    if (!data) return fail(data.error());
    MountOp m = op(kind, (*a)[1]);
    m.data = std::move(*data);
    push(std::move(m), true);
    return {};
  }

  Result<void> dest_op(MountOp::Kind kind, const std::string& opt, bool takes_perms = false) {
    auto a = take(opt, 1);
    if (!a) return fail(a.error());
    MountOp m = op(kind, (*a)[0]);
    if (kind == MountOp::Kind::tmpfs) {
      m.size = size_;
      size_.reset();
    }
    push(std::move(m), takes_perms);
    return {};
  }

  Result<void> overlay(MountOp::Kind kind, const std::string& opt) {
    const int n = kind == MountOp::Kind::overlay ? 3 : 1;
    auto a = take(opt, n);
    if (!a) return fail(a.error());
    const std::size_t need = kind == MountOp::Kind::ro_overlay ? 2 : 1;
    if (overlay_src_.size() < need)
      return fail(said(fmt::format("{} requires at least {} --overlay-src", opt, need == 2 ? "two" : "one")));
    MountOp m = op(kind, a->back());
    // The kernel lists layers uppermost first; bwrap's command line lowest first.
    m.layers.assign(overlay_src_.rbegin(), overlay_src_.rend());
    overlay_src_.clear();
    if (kind == MountOp::Kind::overlay) {
      m.source = absolute_from(ctx_.cwd, (*a)[0]);
      m.workdir = absolute_from(ctx_.cwd, (*a)[1]);
    }
    push(std::move(m));
    return {};
  }

  Result<void> option(const std::string& arg) {
    Policy& p = inv_.policy;
    using K = MountOp::Kind;
    if (arg == "--help") {
      inv_.action = BwrapInvocation::Action::help;
      return {};
    }
    if (arg == "--version") {
      inv_.action = BwrapInvocation::Action::version;
      return {};
    }
    if (arg == "--args") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto v = fd((*a)[0]);
      if (!v) return fail(v.error());
      Result<std::string> data = ctx_.read_fd ? ctx_.read_fd(*v) : fail(Error{"", EBADF, {}, {}});
      if (!data) return fail(said("Can't read --args data", data.error().err));
      std::vector<std::string> more;
      std::string_view rest = *data;
      while (!rest.empty()) {
        const std::size_t nul = rest.find('\0');
        more.emplace_back(rest.substr(0, nul));
        if (nul == std::string_view::npos) break;
        rest.remove_prefix(nul + 1);
      }
      args_.insert(args_.begin() + static_cast<std::ptrdiff_t>(i_), more.begin(), more.end());
      return {};
    }
    if (arg == "--argv0") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      p.argv0 = (*a)[0];
      return {};
    }
    if (arg == "--level-prefix") {
      inv_.level_prefix = true;
      return {};
    }
    if (arg == "--unshare-all") {
      user_try_ = true, cgroup_try_ = true;
      p.ns.ipc = p.ns.pid = p.ns.net = p.ns.uts = true;
      return {};
    }
    if (arg == "--share-net") return p.ns.net = false, Result<void>{};
    if (arg == "--unshare-user") return user_ = true, Result<void>{};
    if (arg == "--unshare-user-try") return user_try_ = true, Result<void>{};
    if (arg == "--unshare-ipc") return p.ns.ipc = true, Result<void>{};
    if (arg == "--unshare-pid") return p.ns.pid = true, Result<void>{};
    if (arg == "--unshare-net") return p.ns.net = true, Result<void>{};
    if (arg == "--unshare-uts") return p.ns.uts = true, Result<void>{};
    if (arg == "--unshare-cgroup") return p.ns.cgroup = true, Result<void>{};
    if (arg == "--unshare-cgroup-try") return cgroup_try_ = true, Result<void>{};
    if (arg == "--userns" || arg == "--userns2" || arg == "--pidns") {
      // As in bwrap, only the number is checked here: a closed or wrong fd
      // is setns()'s error, in bwrap's words.
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto f = fd((*a)[0]);
      if (!f) return fail(f.error());
      (arg == "--userns" ? p.userns_fd : arg == "--userns2" ? p.userns2_fd : p.pidns_fd) = *f;
      return {};
    }
    if (arg == "--disable-userns") return p.disable_userns = true, Result<void>{};
    if (arg == "--assert-userns-disabled") return p.assert_userns_disabled = true, Result<void>{};
    if (arg == "--uid" || arg == "--gid") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto v = parse_number((*a)[0]);
      if (!v) return fail(said(fmt::format("Invalid {}: {}", arg.substr(2), (*a)[0])));
      (arg == "--uid" ? p.uid : p.gid) = static_cast<uint32_t>(*v);
      return {};
    }
    if (arg == "--hostname") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      p.hostname = (*a)[0];
      hostname_set_ = true;
      return {};
    }
    if (arg == "--chdir") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      if (!p.chdir.empty()) warn("Only the last --chdir option will take effect");
      p.chdir = absolute_from("/", (*a)[0]);
      return {};
    }
    if (arg == "--setenv") {
      auto a = take(arg, 2);
      if (!a) return fail(a.error());
      p.env.push_back(EnvOp{EnvOp::Kind::set, (*a)[0], (*a)[1]});
      return {};
    }
    if (arg == "--unsetenv") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      p.env.push_back(EnvOp{EnvOp::Kind::unset, (*a)[0], {}});
      return {};
    }
    if (arg == "--clearenv") {
      // Immediate, as in bwrap: an earlier --setenv is cleared with the rest.
      p.clearenv = true;
      p.env.clear();
      return {};
    }
    if (arg == "--lock-file") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      p.lock_files.push_back(absolute_from("/", (*a)[0]));
      return {};
    }
    if (arg == "--sync-fd") {
      // nsrun outlives the sandbox and never closes it: held open as asked.
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      if (auto f = open_fd((*a)[0]); !f) return fail(f.error());
      return {};
    }
    if (arg == "--bind") return bind(K::bind, false, arg);
    if (arg == "--bind-try") return bind(K::bind, true, arg);
    if (arg == "--dev-bind") return bind(K::dev_bind, false, arg);
    if (arg == "--dev-bind-try") return bind(K::dev_bind, true, arg);
    if (arg == "--ro-bind") return bind(K::ro_bind, false, arg);
    if (arg == "--ro-bind-try") return bind(K::ro_bind, true, arg);
    if (arg == "--bind-fd") return bind_fd(K::bind, arg);
    if (arg == "--ro-bind-fd") return bind_fd(K::ro_bind, arg);
    if (arg == "--remount-ro") return dest_op(K::remount_ro, arg);
    if (arg == "--overlay-src") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      overlay_src_.push_back(absolute_from(ctx_.cwd, (*a)[0]));
      return {};
    }
    if (arg == "--overlay") return overlay(K::overlay, arg);
    if (arg == "--tmp-overlay") return overlay(K::tmp_overlay, arg);
    if (arg == "--ro-overlay") return overlay(K::ro_overlay, arg);
    if (arg == "--exec-label" || arg == "--file-label") {
      if (auto a = take(arg, 1); !a) return fail(a.error());
      // No SELinux: bwrap refuses labels it cannot apply; with SELinux,
      // nsrun cannot apply them either, and running unlabelled would be
      // weaker than asked.
      if (!ctx_.selinux) return fail(said("labeling not supported on this system"));
      unsupported_ = fmt::format("{} is not supported by nsrun: SELinux labels are not applied", arg);
      return {};
    }
    if (arg == "--proc") return dest_op(K::proc, arg);
    if (arg == "--dev") return dest_op(K::dev, arg);
    if (arg == "--tmpfs") return dest_op(K::tmpfs, arg, true);
    if (arg == "--mqueue") return dest_op(K::mqueue, arg);
    if (arg == "--dir") return dest_op(K::dir, arg, true);
    if (arg == "--file") return data_op(K::file, arg);
    if (arg == "--bind-data") return data_op(K::bind_data, arg);
    if (arg == "--ro-bind-data") return data_op(K::ro_bind_data, arg);
    if (arg == "--symlink") {
      auto a = take(arg, 2);
      if (!a) return fail(a.error());
      MountOp m = op(K::symlink, (*a)[1]);
      m.source = (*a)[0];
      push(std::move(m));
      return {};
    }
    if (arg == "--chmod") {
      auto a = take(arg, 2);
      if (!a) return fail(a.error());
      auto mode = parse_number((*a)[0], 8);
      if (!mode || *mode > 07777) return fail(said("--chmod takes an octal argument <= 07777"));
      MountOp m = op(K::chmod, (*a)[1]);
      m.perms = static_cast<uint32_t>(*mode);
      push(std::move(m));
      return {};
    }
    if (arg == "--seccomp" || arg == "--add-seccomp-fd") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto f = fd((*a)[0]);
      if (!f) return fail(f.error());
      const bool single = arg == "--seccomp";
      if (single && added_seccomp_) return fail(said("--seccomp cannot be combined with --add-seccomp-fd"));
      if (!single && single_seccomp_) return fail(said("--add-seccomp-fd cannot be combined with --seccomp"));
      if (single && single_seccomp_) warn("Only the last --seccomp option will take effect");
      if (single) p.seccomp_fds.clear();  // the last --seccomp wins
      (single ? single_seccomp_ : added_seccomp_) = true;
      p.seccomp_fds.push_back(*f);
      return {};
    }
    if (arg == "--block-fd" || arg == "--userns-block-fd" || arg == "--info-fd" || arg == "--json-status-fd") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto f = open_fd((*a)[0]);
      if (!f) return fail(f.error());
      if (arg == "--block-fd") p.block_fd = *f;
      else if (arg == "--userns-block-fd") p.userns_block_fd = *f;
      else if (arg == "--info-fd") p.info_fd = *f;
      else p.json_status_fd = *f;
      return {};
    }
    if (arg == "--new-session") return p.new_session = true, Result<void>{};
    if (arg == "--die-with-parent") return inv_.die_with_caller = true, Result<void>{};
    if (arg == "--as-pid-1") return p.as_pid_1 = true, Result<void>{};
    if (arg == "--cap-add" || arg == "--cap-drop") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      auto bits = cap_bits((*a)[0]);
      if (!bits) return fail(bits.error());
      cap_ops_.emplace_back(arg == "--cap-add", *bits);
      return {};
    }
    if (arg == "--perms") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      if (perms_) return fail(said("--perms given twice for the same action"));
      auto mode = parse_number((*a)[0], 8);
      if (!mode || *mode > 07777) return fail(said("--perms takes an octal argument <= 07777"));
      perms_ = static_cast<uint32_t>(*mode);
      return {};
    }
    if (arg == "--size") {
      auto a = take(arg, 1);
      if (!a) return fail(a.error());
      if (size_) return fail(said("--size given twice for the same action"));
      auto v = parse_size((*a)[0]);
      if (!v) return fail(v.error());
      size_ = *v;
      return {};
    }
    return fail(said(fmt::format("Unknown option {}", arg)));
  }

  // The checks bwrap makes once every option is known.
  Result<void> finish() {
    Policy& p = inv_.policy;
    if (!unsupported_.empty()) return fail(said(unsupported_));
    const bool root = ctx_.uid == 0;
    if (p.userns_fd && user_) return fail(said("--userns not compatible --unshare-user"));
    if (p.userns_fd && user_try_) return fail(said("--userns not compatible --unshare-user-try"));
    // Without setuid, only root can do without a user namespace, or with
    // one it joins (--userns).
    p.ns.user = user_ || user_try_ || (!root && !p.userns_fd);
    if (cgroup_try_ && ctx_.cgroup_ns) p.ns.cgroup = true;
    const bool some_userns = p.ns.user || p.userns_fd;
    if (p.uid && !some_userns) return fail(said("Specifying --uid requires --unshare-user or --userns"));
    if (p.gid && !some_userns) return fail(said("Specifying --gid requires --unshare-user or --userns"));
    // No ladder in this dialect: a bwrap caller gets the namespaces its
    // command line asks for or bwrap's error, never the Landlock rung,
    // which would run the command in the host's user, PID and network
    // namespaces.
    p.backend = Backend::namespaces;
    // --proc without a PID namespace of its own binds the caller's /proc,
    // as bwrap does ("we share the pid namespace anyway"): the kernel gives
    // a fresh procfs only to a PID namespace's owner.
    if (!p.ns.pid && !p.pidns_fd) p.proc = ProcMode::host_bind;
    if (hostname_set_ && !p.ns.uts) return fail(said("Specifying --hostname requires --unshare-uts"));
    if (p.as_pid_1 && !p.ns.pid) return fail(said("Specifying --as-pid-1 requires --unshare-pid"));
    // Nothing would outlive the exec to hold the lock.
    if (p.as_pid_1 && !p.lock_files.empty())
      return fail(said("Specifying --as-pid-1 and --lock-file is not permitted"));
    if (p.disable_userns && !p.ns.user) return fail(said("--disable-userns requires --unshare-user"));
    if (p.userns_block_fd && !p.ns.user) return fail(said("--userns-block-fd requires --unshare-user"));
    if (p.userns_block_fd && !p.info_fd && !p.json_status_fd)
      return fail(said("--userns-block-fd requires --info-fd or --json-status-fd"));
    p.allow_nested_userns = !p.disable_userns;
    if (p.ns.net) p.network = Network::none;
    // bwrap's --proc: a procfs of its own only for a PID namespace of its
    // own; sharing the caller's, it binds the caller's /proc. A fresh one
    // there is refused by the kernel in a new user namespace (it does not
    // own the PID namespace), e.g. root with --unshare-user-try.
    if (!p.ns.pid && !p.pidns_fd) p.proc = ProcMode::host_bind;

    // Capabilities: root (uid 0 inside too) starts from its own effective
    // set, as in bwrap (in a new user namespace it would otherwise get back
    // what the caller lacked), anyone else with none; --cap-add and
    // --cap-drop then apply in order. Only numbers the kernel headers name:
    // the rest of the 64 bits are no capability, and naming them ("41")
    // would make the launch refuse the list.
    CapSet known;
    for (std::size_t c = 0; c <= CAP_LAST_CAP; ++c) known.set(c);
    CapSet caps;
    if (root && p.uid.value_or(0) == 0) caps = known & CapSet(ctx_.effective_caps.value_or(~uint64_t{0}));
    for (const auto& [add, bits] : cap_ops_) caps = add ? (caps | bits) : (caps & ~bits);
    caps &= known;
    p.cap_add.clear();
    if (caps == known) {
      p.cap_add.push_back("ALL");
    } else {
      for (std::size_t c = 0; c < caps.size(); ++c) {
        if (!caps.test(c)) continue;
        char* n = cap_to_name(static_cast<cap_value_t>(c));
        if (n != nullptr) {
          p.cap_add.emplace_back(n);
          cap_free(n);
        }
      }
    }

    // bwrap sets PWD to the working directory, even after --clearenv.
    p.env.push_back(EnvOp{EnvOp::Kind::set, "PWD", p.chdir.empty() ? ctx_.cwd : p.chdir});
    return {};
  }

  const BwrapContext& ctx_;
  BwrapInvocation inv_;
  std::vector<std::string> args_;
  std::size_t i_ = 0;
  std::optional<uint32_t> perms_;
  std::optional<uint64_t> size_;
  std::vector<std::string> overlay_src_;
  std::vector<std::pair<bool, CapSet>> cap_ops_;
  bool user_ = false, user_try_ = false, cgroup_try_ = false, hostname_set_ = false;
  bool single_seccomp_ = false, added_seccomp_ = false;
  bool usage_failure_ = false;
  std::string unsupported_;
};

// What a mount step names, for the words only: "tmpfs" in "mount tmpfs
// on", the source in "mount /src on"; "on" for the destination's own step
// ("mount on"), as it always read.
std::string_view mounted(std::string_view step) {
  constexpr std::string_view head = "mount ", tail = " on";
  if (step.size() < head.size()) return step;
  if (step.size() < head.size() + tail.size()) return step.substr(head.size());
  return step.substr(head.size(), step.size() - head.size() - tail.size());
}

std::string with_errno(std::string text, int err) {
  if (err == 0) return text;
  return fmt::format("{}: {}", text, std::strerror(err));
}

bool leveled(std::span<const std::string> args) {
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "--level-prefix") return true;
  }
  return false;
}

void say(bool level_prefix, std::string_view text) {
  fmt::print(stderr, "{}bwrap: {}\n", level_prefix ? "<3>" : "", printable(text));
}

// bwrap --die-with-parent also ties bwrap itself to its caller.
void die_with_caller() {
  const pid_t caller = ::getppid();
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != caller) ::raise(SIGKILL);
}

}  // namespace

BwrapContext read_bwrap_context() {
  BwrapContext ctx;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) != nullptr) ctx.cwd = buf;
  ctx.uid = ::getuid();
  if (ctx.uid == 0) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    // Unreadable: none, never more than the caller has.
    ctx.effective_caps = ::syscall(SYS_capget, &header, data) == 0
                             ? (uint64_t{data[1].effective} << 32) | data[0].effective
                             : 0;
  }
  ctx.cgroup_ns = ::access("/proc/self/ns/cgroup", F_OK) == 0;
  ctx.selinux = ::access("/sys/fs/selinux/enforce", F_OK) == 0;
  ctx.read_fd = [](int fd) { return read_all(fd, "read", std::to_string(fd), max_input_bytes); };
  ctx.fd_open = [](int fd) { return ::fcntl(fd, F_GETFD) >= 0; };
  ctx.warn = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  return ctx;
}

Result<BwrapInvocation> parse_bwrap(std::span<const std::string> args, const BwrapContext& ctx) {
  Parser parser(ctx);
  auto inv = parser.parse(std::vector<std::string>(args.begin(), args.end()));
  if (!inv && parser.usage_failure()) {
    Error e = inv.error();
    e.detail = "no command";
    return fail(e);
  }
  return inv;
}

std::string bwrap_message(const Error& e, bool unshare_user) {
  // Every operation is named, and none by a default: a new one does not
  // compile until someone decides how bwrap would word its failure.
  switch (e.op) {
    case Operation::find_source:
      // validate() found a bind's or overlay's path unusable (bwrap looks
      // the source up first).
      if (e.path.empty()) return e.message();
      return fmt::format("Can't find source path {}: {}", e.path, e.detail);
    case Operation::bind:
    case Operation::overlay_source:
      if (e.err == ENOENT) return with_errno(fmt::format("Can't find source path {}", e.path), e.err);
      return with_errno(fmt::format("Can't bind mount {}", e.path), e.err);
    case Operation::mount_bind:
      return with_errno(fmt::format("Can't bind mount {} on /newroot{}", mounted(e.step), e.path), e.err);
    case Operation::mount_data:
      return with_errno(fmt::format("Can't bind mount data on /newroot{}", e.path), e.err);
    case Operation::mount_proc:
    case Operation::mount_fs:
    case Operation::mount_layer:
    case Operation::mount_dest:
      return with_errno(fmt::format("Can't mount {} on /newroot{}", mounted(e.step), e.path), e.err);
    case Operation::clone:
      // bwrap's words, in bwrap's order: the user-namespace explanations
      // only when one was being made.
      if (unshare_user && e.err == EINVAL)
        return "Creating new namespace failed, likely because the kernel does not support user namespaces.  "
               "bwrap must be installed setuid on such systems.";
      if (unshare_user && e.err == EPERM)
        return "No permissions to create a new namespace, likely because the kernel does not allow "
               "non-privileged user namespaces. On e.g. debian this can be enabled with "
               "'sysctl kernel.unprivileged_userns_clone=1'.";
      if (e.err == ENOSPC)
        return "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)";
      return with_errno("Creating new namespace failed", e.err);
    case Operation::write_uid_map: return with_errno("setting up uid map", e.err);
    case Operation::write_gid_map: return with_errno("setting up gid map", e.err);
    case Operation::write_setgroups: return with_errno("error writing to setgroups", e.err);
    case Operation::exec: return with_errno(fmt::format("execvp {}", e.path), e.err);
    case Operation::chdir: return with_errno(fmt::format("Can't chdir to {}", e.path), e.err);
    case Operation::symlink:
      if (e.err == 0 && !e.detail.empty()) return fmt::format("Can't make symlink at {}: {}", e.path, e.detail);
      return with_errno(fmt::format("Can't make symlink at {}", e.path), e.err);
    case Operation::chmod: return with_errno(fmt::format("Can't chmod {}", e.path), e.err);
    case Operation::mkdir: return with_errno(fmt::format("Can't mkdir {}", e.path), e.err);
    case Operation::create: return with_errno(fmt::format("Can't create file at {}", e.path), e.err);
    case Operation::remount: return with_errno(fmt::format("Can't remount readonly on /newroot{}", e.path), e.err);
    case Operation::sethostname: return with_errno("sethostname", e.err);
    case Operation::seccomp_load:
      if (e.err == EINVAL)
        return "Unable to set up system call filtering as requested: prctl(PR_SET_SECCOMP) reported EINVAL. "
               "(Hint: this requires a kernel configured with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER.)";
      return with_errno("prctl(PR_SET_SECCOMP)", e.err);
    case Operation::seccomp_read:
      if (e.err == EINVAL) return "Invalid seccomp data, must be multiple of 8";
      return with_errno("Can't read seccomp data", e.err);
    case Operation::setns_userns:
      if (e.err == EINVAL)
        return "Joining the specified user namespace failed, it might not be a descendant of the current user "
               "namespace.";
      return with_errno("Joining specified user namespace failed", e.err);
    case Operation::setuid: return with_errno(fmt::format("unable to switch to uid {}", e.path), e.err);
    case Operation::setgid: return with_errno(fmt::format("unable to switch to gid {}", e.path), e.err);
    case Operation::setns_userns2: return with_errno("Setting userns2 failed", e.err);
    case Operation::setns_pidns: return with_errno("Setting pidns failed", e.err);
    case Operation::assert_userns_disabled: return "creation of new user namespaces was not disabled as requested";
    case Operation::info_fd: return with_errno("Write to info_fd", e.err);
    case Operation::json_status_fd: return with_errno("Write to json_status_fd", e.err);
    case Operation::lock_open: return with_errno(fmt::format("Unable to open lock file {}", e.path), e.err);
    case Operation::lock_lock: return with_errno(fmt::format("Unable to lock file {}", e.path), e.err);
    case Operation::block_fd: return with_errno("Reading from --block-fd", e.err);
    case Operation::userns_block_fd: return with_errno("Reading from --userns-block-fd", e.err);
    // No wording of bwrap's own: nsrun's message.
    case Operation::other:
    case Operation::socketpair:
    case Operation::receive:
    case Operation::die_with_parent:
    case Operation::loopback_up:
    case Operation::make_private:
    case Operation::open:
    case Operation::dup:
    case Operation::write:
    case Operation::stat:
    case Operation::statfs:
    case Operation::bind_fd:
    case Operation::staging:
    case Operation::pivot_root:
    case Operation::chroot:
    case Operation::detach:
    case Operation::read_capabilities:
    case Operation::drop_bounding:
    case Operation::clear_ambient:
    case Operation::drop_capabilities:
    case Operation::raise_ambient:
    case Operation::no_new_privs:
    case Operation::landlock_create:
    case Operation::landlock_rule:
    case Operation::landlock_add_rule:
    case Operation::landlock_restrict:
    case Operation::close_range:
    case Operation::pass_fd:
    case Operation::setsid:
    case Operation::fork:
    case Operation::write_report:
      return e.message();
  }
  return e.message();
}

std::string bwrap_usage(std::string_view prog) {
  std::string out = fmt::format("usage: {} [OPTIONS...] [--] COMMAND [ARGS...]\n\n", prog);
  for (const auto& row : help_rows) out += fmt::format("    {:<28} {}\n", row.option, row.help);
  out += fmt::format(
      "\nThis is nsrun speaking bubblewrap {}'s command line: the same options, run\n"
      "with nsrun's own namespace code. See nsrun --help and docs/bwrap.md.\n",
      bwrap_compat_version);
  return out;
}

bool is_bwrap_option(std::string_view arg) {
  for (const auto& row : help_rows)
    if (row.option.substr(0, row.option.find(' ')) == arg) return true;
  return false;
}

std::string bwrap_version_text() {
  return fmt::format("bubblewrap {} (nsrun {}, bwrap-compatible)\n", bwrap_compat_version, NSRUN_VERSION);
}

int bwrap_main(std::string_view prog, std::span<const std::string> args) {
  const bool level = leveled(args);
  auto inv = parse_bwrap(args, read_bwrap_context());
  if (!inv) {
    if (inv.error().detail == "no command" && inv.error().step == "usage") {
      fmt::print(stderr, "{}", bwrap_usage(prog));
      return bwrap_failure_status;
    }
    say(level, inv.error().message());
    return bwrap_failure_status;
  }
  switch (inv->action) {
    case BwrapInvocation::Action::help: fmt::print("{}", bwrap_usage(prog)); return 0;
    case BwrapInvocation::Action::version: fmt::print("{}", bwrap_version_text()); return 0;
    case BwrapInvocation::Action::run: break;
  }
  if (auto r = validate(inv->policy, true); !r) {
    say(level, bwrap_message(r.error()));
    return bwrap_failure_status;
  }
  if (inv->die_with_caller) die_with_caller();
  // A refusal of the (pinned) namespace rung is told as bwrap tells the
  // failure behind it.
  const bool unshare_user = inv->policy.ns.user;
  return run(inv->policy, [level, unshare_user](const Error& e, const std::optional<Error>& cause) {
    say(level, bwrap_message(cause ? *cause : e, unshare_user));
    return bwrap_failure_status;
  });
}

int bwrap_explain_main(std::span<const std::string> args) {
  auto inv = parse_bwrap(args, read_bwrap_context());
  if (!inv) {
    fmt::print(stderr, "nsrun: explain --bwrap: {}\n", inv.error().message());
    return 125;
  }
  if (inv->action != BwrapInvocation::Action::run) {
    fmt::print(stderr, "nsrun: explain --bwrap: nothing to explain\n");
    return 125;
  }
  if (auto r = validate(inv->policy, false); !r) {
    fmt::print(stderr, "nsrun: explain --bwrap: {}\n", printable(bwrap_message(r.error())));
    return 125;
  }
  auto text = explain(inv->policy);
  if (!text) {
    fmt::print(stderr, "nsrun: explain --bwrap: {}\n", printable(bwrap_message(text.error())));
    return 125;
  }
  fmt::print("dialect: bwrap {}\n{}", bwrap_compat_version, *text);
  return 0;
}

}  // namespace nsrun
