#include "cli/bwrap.hpp"

#include <dirent.h>
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

#include <fmt/core.h>

#include "cli/explain.hpp"
#include "cli/options.hpp"
#include "launch/launch.hpp"
#include "ns/credentials.hpp"
#include "policy/presets.hpp"
#include "policy/validate.hpp"
#include "sys/io.hpp"

namespace nsrun {

// A failure in bwrap's words: message() gives "<text>" or "<text>: <strerror>".
Error said_bwrap(std::string text, int err) {
  Error e{std::move(text), err, {}, {}, ErrorKind::usage};
  return e;
}

std::optional<int> bwrap_number(std::string_view text, int base) {
  long long v = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > INT_MAX) return std::nullopt;
  return static_cast<int>(v);
}

std::string absolute_from(std::string_view base, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  if (base.empty() || base == "/") return "/" + path;
  return fmt::format("{}/{}", base, path);
}

namespace {

// bwrap's capability sets, applied in command-line order.
using CapSet = std::bitset<64>;

constexpr const char* overlay_src_dangling =
    "--overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or --ro-overlay";

}  // namespace

// ---- the dialect's helpers, called by the option table's setters ----

// bwrap warns as it parses, with the level prefix as set so far.
void BwrapParse::warn(std::string_view text) const {
  if (ctx.warn) ctx.warn(fmt::format("{}bwrap: {}", inv.level_prefix ? "<4>" : "", text));
}

Result<int> BwrapParse::fd(const std::string& text) const {
  auto v = bwrap_number(text);
  if (!v) return fail(said_bwrap(fmt::format("Invalid fd: {}", text)));
  return *v;
}

Result<int> BwrapParse::open_fd(const std::string& text) const {
  auto v = fd(text);
  if (!v) return v;
  if (ctx.fd_open && !ctx.fd_open(*v)) return fail(said_bwrap(fmt::format("Invalid fd: {}", text)));
  return v;
}

bool BwrapParse::closed(int fd) const { return std::find(closed_fds.begin(), closed_fds.end(), fd) != closed_fds.end(); }

Result<std::string> BwrapParse::fd_data(const std::string& text) {
  auto v = fd(text);
  if (!v) return fail(v.error());
  used_fds.push_back(*v);
  if (!ctx.read_fd) return fail(said_bwrap(fmt::format("Can't read from fd {}", *v), EBADF));
  auto data = ctx.read_fd(*v);
  if (!data) return fail(said_bwrap(fmt::format("Can't read from fd {}", *v), data.error().err));
  return data;
}

Result<uint64_t> BwrapParse::cap_bits(const std::string& name) const {
  CapSet out;
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper == "ALL") return out.set().to_ullong();
  auto caps = parse_capabilities({name});
  if (!caps) return fail(said_bwrap(fmt::format("unknown cap: {}", name)));
  for (int c : *caps) out.set(static_cast<std::size_t>(c));
  return out.to_ullong();
}

Result<uint32_t> BwrapParse::octal(const std::string& text, std::string_view option) const {
  auto mode = bwrap_number(text, 8);
  if (!mode || *mode > 07777) return fail(said_bwrap(fmt::format("{} takes an octal argument <= 07777", option)));
  return static_cast<uint32_t>(*mode);
}

// bwrap's --size: strtoull's syntax (base 0: 0x.. hex, 0.. octal), but a
// digit first, so no sign and no leading space; zero and overflow refused;
// at most what a tmpfs size can hold (SIZE_MAX >> 1, as bwrap).
Result<uint64_t> BwrapParse::tmpfs_size(const std::string& text) const {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front())))
    return fail(said_bwrap("--size takes a non-zero number of bytes"));
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == nullptr || *end != '\0' || v == 0)
    return fail(said_bwrap("--size takes a non-zero number of bytes"));
  constexpr uint64_t max_tmpfs_bytes = SIZE_MAX >> 1;
  if (v > max_tmpfs_bytes)
    return fail(said_bwrap(fmt::format("--size (for tmpfs) is limited to {}", max_tmpfs_bytes)));
  return static_cast<uint64_t>(v);
}

// An operation that takes no --perms leaves a pending one pending, which
// the parse loop then refuses.
void BwrapParse::push(MountOp m, bool takes_perms) {
  if (takes_perms) {
    m.perms = perms;
    perms.reset();
  }
  inv.policy.mounts.push_back(std::move(m));
}

Result<void> BwrapParse::bind(MountOp::Kind kind, bool optional, std::span<const std::string> values) {
  MountOp m = mount_op(kind, absolute_from(ctx.cwd, values[0]), absolute_from("/", values[1]));
  m.optional = optional;
  push(std::move(m));
  return {};
}

Result<void> BwrapParse::bind_fd(MountOp::Kind kind, std::span<const std::string> values) {
  auto f = open_fd(values[0]);
  if (!f) return fail(f.error());
  used_fds.push_back(*f);
  MountOp m = mount_op(kind, "", absolute_from("/", values[1]));
  m.source_fd = *f;
  push(std::move(m));
  return {};
}

Result<void> BwrapParse::data_op(MountOp::Kind kind, std::span<const std::string> values) {
  auto data = fd_data(values[0]);
  if (!data) return fail(data.error());
  MountOp m = mount_op(kind, "", absolute_from("/", values[1]));
  m.data = std::move(*data);
  push(std::move(m), true);
  return {};
}

Result<void> BwrapParse::dest_op(MountOp::Kind kind, const std::string& dest, bool takes_perms) {
  MountOp m = mount_op(kind, "", absolute_from("/", dest));
  if (kind == MountOp::Kind::tmpfs) {
    m.size = size;
    size.reset();
  }
  push(std::move(m), takes_perms);
  return {};
}

Result<void> BwrapParse::overlay(MountOp::Kind kind, std::string_view option, std::span<const std::string> values) {
  const std::size_t need = kind == MountOp::Kind::ro_overlay ? 2 : 1;
  if (overlay_src.size() < need)
    return fail(said_bwrap(fmt::format("{} requires at least {} --overlay-src", option, need == 2 ? "two" : "one")));
  MountOp m = mount_op(kind, "", absolute_from("/", values.back()));
  // The kernel lists layers uppermost first; bwrap's command line lowest first.
  m.layers.assign(overlay_src.rbegin(), overlay_src.rend());
  overlay_src.clear();
  if (kind == MountOp::Kind::overlay) {
    m.source = absolute_from(ctx.cwd, values[0]);
    m.workdir = absolute_from(ctx.cwd, values[1]);
  }
  push(std::move(m));
  return {};
}

Result<void> BwrapParse::args_from_fd(const std::string& text) {
  auto v = fd(text);
  if (!v) return fail(v.error());
  if (closed(*v)) return fail(said_bwrap("Can't read --args data", EBADF));
  Result<std::string> data = ctx.read_fd ? ctx.read_fd(*v) : fail(Error{"", EBADF, {}, {}});
  if (!data) return fail(said_bwrap("Can't read --args data", data.error().err));
  used_fds.push_back(*v);
  closed_fds.push_back(*v);
  std::vector<std::string> more;
  std::string_view rest = *data;
  while (!rest.empty()) {
    const std::size_t nul = rest.find('\0');
    more.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(next), more.begin(), more.end());
  return {};
}

Result<void> BwrapParse::selinux_label(std::string_view option) {
  // No SELinux: bwrap refuses labels it cannot apply; with SELinux,
  // nsrun cannot apply them either, and running unlabelled would be
  // weaker than asked.
  if (!ctx.selinux) return fail(said_bwrap("labeling not supported on this system"));
  unsupported = fmt::format("{} is not supported by nsrun: SELinux labels are not applied", option);
  return {};
}

namespace {

Error said(std::string text) { return said_bwrap(std::move(text)); }

class Parser {
 public:
  Parser(const BwrapContext& ctx) : ctx_(ctx) {}

  Result<BwrapInvocation> parse(std::vector<std::string> args) {
    args_ = std::move(args);
    Policy& p = inv_.policy;
    // bwrap's defaults, not nsrun's: only the mount namespace unless asked,
    // the caller's list of mounts and nothing else, no default filter.
    p.preset = false;
    p.home = HomeMode::ro;  // bwrap has no home overlay: $HOME is what the caller's mounts make it
    p.home_given = true;
    p.limits.no_core_dumps = false;  // bwrap leaves RLIMIT_CORE as it finds it
    p.follow_symlinks = true;
    p.ns = Namespaces{false, false, false, false, false, false};
    p.hostname.clear();
    p.proc = ProcMode::fresh;
    p.seccomp = SeccompMode::none;
    p.allow_nested_userns = true;
    p.new_session = false;
    p.workspace = ctx_.cwd;

    // What each option does is its entry in the option table
    // (src/cli/options.cpp); this loop is bwrap's argument syntax: no
    // --name=value, values in the arguments that follow, options in order.
    while (i_ < args_.size()) {
      const std::string arg = args_[i_++];
      if (arg == "--") break;
      if (arg.empty() || arg.front() != '-') {
        --i_;
        break;
      }
      const OptionSpec* opt = find_option(Dialect::bwrap, arg);
      if (opt == nullptr) return fail(said(fmt::format("Unknown option {}", arg)));
      const auto n = static_cast<std::size_t>(opt->arity);
      if (i_ + n > args_.size()) {
        static constexpr const char* counts[] = {"", "an argument", "two arguments", "three arguments"};
        return fail(said(fmt::format("{} takes {}", arg, counts[n])));
      }
      const std::vector<std::string> values(args_.begin() + static_cast<std::ptrdiff_t>(i_),
                                            args_.begin() + static_cast<std::ptrdiff_t>(i_ + n));
      i_ += n;
      OptionCall call{p, values, opt->bwrap.name, nullptr, &state_};
      if (auto r = opt->set(call); !r) return fail(r.error());
      if (inv_.action != BwrapInvocation::Action::run) return inv_;
      if (!opt->modifier && state_.perms) return fail(said("--perms must be followed by an option that creates a file"));
      if (!opt->modifier && state_.size) return fail(said("--size must be followed by --tmpfs"));
      if (arg != "--overlay-src" && !state_.overlay_src.empty()) return fail(said(overlay_src_dangling));
    }
    if (!state_.overlay_src.empty()) return fail(said(overlay_src_dangling));
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
  // The checks bwrap makes once every option is known.
  Result<void> finish() {
    Policy& p = inv_.policy;
    if (!state_.unsupported.empty()) return fail(said(state_.unsupported));
    const bool root = ctx_.uid == 0;
    if (p.userns_fd && state_.user) return fail(said("--userns not compatible --unshare-user"));
    if (p.userns_fd && state_.user_try) return fail(said("--userns not compatible --unshare-user-try"));
    // Without setuid, only root can do without a user namespace, or with
    // one it joins (--userns).
    p.ns.user = state_.user || state_.user_try || (!root && !p.userns_fd);
    if (state_.cgroup_try && ctx_.cgroup_ns) p.ns.cgroup = true;
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
    if (state_.hostname_set && !p.ns.uts) return fail(said("Specifying --hostname requires --unshare-uts"));
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
    // Without --cap-add/--cap-drop bwrap never calls capset() for root's
    // command: its inheritable set stays as it was (the caller's, or empty
    // in a new user namespace), and so does its ambient set.
    p.cap_grant_inheritable = !(root && state_.cap_ops.empty());
    for (const auto& [add, bits] : state_.cap_ops) caps = add ? (caps | CapSet(bits)) : (caps & ~CapSet(bits));
    caps &= known;
    p.cap_add.clear();
    if (caps == known) {
      p.cap_add.push_back("ALL");
    } else {
      for (std::size_t c = 0; c < caps.size(); ++c) {
        if (!caps.test(c)) continue;
        p.cap_add.push_back(capability_name(static_cast<cap_value_t>(c)));
      }
    }

    pass_inherited_fds();

    // bwrap sets PWD to the working directory, even after --clearenv.
    p.env.push_back(EnvOp{EnvOp::Kind::set, "PWD", p.chdir.empty() ? ctx_.cwd : p.chdir});
    return {};
  }

  // bwrap closes only the fds its options use up: every other fd it was
  // given without close-on-exec reaches the command (`sh -c 'echo >&7'
  // 7>file`), at the same number. The status and blocking fds and the
  // namespaces' fds are kept from it too (bwrap leaves --userns, --userns2,
  // --pidns and --userns-block-fd open in the sandbox; stricter, and
  // nothing a command could want from them); --sync-fd reaches it only
  // with --as-pid-1, as in bwrap.
  void pass_inherited_fds() {
    Policy& p = inv_.policy;
    std::vector<int> used = state_.used_fds;
    for (const auto& fd : {p.info_fd, p.json_status_fd, p.block_fd, p.userns_block_fd, p.userns_fd, p.userns2_fd,
                           p.pidns_fd})
      if (fd) used.push_back(*fd);
    if (state_.sync_fd && !p.as_pid_1) used.push_back(*state_.sync_fd);
    for (int fd : ctx_.inherited_fds)
      if (fd > 2 && std::find(used.begin(), used.end(), fd) == used.end()) p.pass_fds.push_back(fd);
  }

  const BwrapContext& ctx_;
  BwrapInvocation inv_;
  std::vector<std::string> args_;
  std::size_t i_ = 0;
  BwrapParse state_{ctx_, inv_, args_, i_};
  bool usage_failure_ = false;
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

namespace {

// The fds above 2 open without close-on-exec. /proc/self/fd's own fd is
// close-on-exec (opendir), so it never counts itself; without /proc, every
// number below the fd limit is asked.
std::vector<int> fds_without_cloexec() {
  std::vector<int> out;
  auto consider = [&out](int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (fd > 2 && flags >= 0 && (flags & FD_CLOEXEC) == 0) out.push_back(fd);
  };
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir))
      if (auto fd = bwrap_number(entry->d_name)) consider(*fd);
    ::closedir(dir);
  } else {
    const long limit = ::sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < std::min<long>(limit > 0 ? limit : 1024, INT_MAX); ++fd) consider(fd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BwrapContext read_bwrap_context() {
  BwrapContext ctx;
  // First, before anything here opens an fd of its own.
  ctx.inherited_fds = fds_without_cloexec();
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
  out += option_help(Dialect::bwrap, "    ", 28);
  out += fmt::format(
      "\nThis is nsrun speaking bubblewrap {}'s command line: the same options, run\n"
      "with nsrun's own namespace code. See nsrun --help and docs/bwrap.md.\n",
      bwrap_compat_version);
  return out;
}

bool is_bwrap_option(std::string_view arg) { return find_option(Dialect::bwrap, arg) != nullptr; }

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
  // bwrap passes its child's death on as its own status, silently, in
  // set-up too.
  return run(inv->policy, [level, unshare_user](const Error& e, const std::optional<Error>& cause) {
    say(level, bwrap_message(cause ? *cause : e, unshare_user));
    return bwrap_failure_status;
  }, SetupDeath::as_status);
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
