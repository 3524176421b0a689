#include "landlock/ruleset.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "landlock/abi.hpp"
#include "policy/paths.hpp"
#include "policy/presets.hpp"
#include "seccomp/rules.hpp"
#include "sys/error.hpp"

namespace nsrun::landlock {

uint64_t fs_rights(int abi) {
  if (abi < 1) return 0;
  uint64_t rights = (fs::make_sym << 1) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) rights |= fs::refer;
  if (abi >= 3) rights |= fs::truncate;
  if (abi >= 5) rights |= fs::ioctl_dev;
  return rights;
}

uint64_t net_rights(int abi) { return abi >= 4 ? net::bind_tcp | net::connect_tcp : 0; }

uint64_t scopes(int abi) { return abi >= 6 ? scope::abstract_unix_socket | scope::signal : 0; }

std::string_view name(Enforcement e) {
  switch (e) {
    case Enforcement::full: return "full";
    case Enforcement::partial: return "partial";
    case Enforcement::none: return "none";
  }
  return "?";
}

namespace {

using K = MountOp::Kind;

// The devices a command needs to work at all: the bit buckets and the
// controlling terminal. Writing them changes nothing on the host.
constexpr const char* writable_devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"};

}  // namespace

namespace {

// cannot_express() of `p`, whose mounts (effective_mounts()) are `mounts`.
std::string cannot_express(const Policy& p, const std::vector<MountOp>& mounts) {
  // Identity and privilege: Landlock confines files, it cannot change who
  // the command is or hand it capabilities safely outside a user namespace.
  if (p.uid) return fmt::format("uid {}", *p.uid);
  if (p.gid) return fmt::format("gid {}", *p.gid);
  if (!p.cap_add.empty()) return "capabilities kept inside (--cap-add)";
  if (p.as_pid_1) return "--as-pid-1";
  if (p.proc == ProcMode::none) return "--proc none";

  // Without mounts there is no private /proc, /dev or /sys to keep out of
  // a writable `/`: the command could write host sysctls and, as root,
  // device nodes and cgroups.
  if (p.preset && p.mode == Mode::workspace_write &&
      (contains_private_mounts(p.workspace) ||
       std::any_of(p.writable.begin(), p.writable.end(), [](const std::string& d) { return contains_private_mounts(d); })))
    return "a writable / (this rung has no private /proc, /dev or /sys to keep out of it)";

  // Without a PID namespace or mounts the command sees the host's file
  // system as it is; the policy must say the same, starting from the host's /.
  if (mounts.empty() || (mounts[0].kind != K::ro_bind && mounts[0].kind != K::bind) || mounts[0].source != "/" ||
      mounts[0].dest != "/")
    return "a root other than the host's / (the first mount must bind / on /)";

  std::vector<std::string> writable;
  for (const MountOp& m : mounts) {
    // --network proxy's resolv.conf names the DNS stub of a network
    // namespace; this rung has none. The host's file stays, and its
    // queries are refused (UDP sockets, connect() to port 53): names are
    // resolved by the proxy (CONNECT, socks5h).
    if (p.network == Network::proxy && m.kind == K::ro_bind_data && m.dest == resolver_mount().dest) continue;
    switch (m.kind) {
      case K::ro_bind:
      case K::remount_ro:
        if (m.kind == K::ro_bind && m.source != m.dest) return fmt::format("ro-bind {} -> {}", m.source, m.dest);
        // Landlock rights only add up along a path: nothing below a writable
        // root can be made read-only again.
        for (const auto& w : writable)
          if (at_or_below(m.dest, w)) return fmt::format("{} {} inside the writable {}", name(m.kind), m.dest, w);
        break;
      case K::bind:
        if (m.source != m.dest) return fmt::format("bind {} -> {}", m.source, m.dest);
        // However it came (a policy file's mounts, bwrap's --bind / /).
        if (contains_private_mounts(m.dest))
          return "a writable / (this rung has no private /proc, /dev or /sys to keep out of it)";
        writable.push_back(m.dest);
        break;
      case K::tmpfs:
        // The private /tmp becomes a private directory named by TMPDIR.
        if (m.dest != "/tmp") return fmt::format("tmpfs {}", m.dest);
        break;
      case K::proc:
        if (m.dest != "/proc") return fmt::format("proc {}", m.dest);
        break;
      case K::dev:
        if (m.dest != "/dev") return fmt::format("dev {}", m.dest);
        break;
      default:
        return fmt::format("{} {}", name(m.kind), m.dest);
    }
  }
  return {};
}

}  // namespace

std::string cannot_express(const Policy& p) { return cannot_express(p, effective_mounts(p)); }

std::vector<std::string> hidden_ancestors(const std::vector<std::string>& hidden) {
  std::vector<std::string> out;
  for (const auto& h : hidden) {
    std::string_view plain = h;
    while (plain.size() > 1 && plain.back() == '/') plain.remove_suffix(1);
    for (std::size_t slash = 0; slash != std::string_view::npos && slash < plain.size();
         slash = plain.find('/', slash + 1)) {
      const std::string dir = slash == 0 ? "/" : std::string(plain.substr(0, slash));
      if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
    }
  }
  return out;
}

std::expected<Ruleset, CannotExpress> make_ruleset(const Policy& p, int abi, const Inputs& in) {
  // The preset's list made once for the three walks below.
  const std::vector<MountOp> mounts = effective_mounts(p);
  if (std::string item = cannot_express(p, mounts); !item.empty()) return std::unexpected(CannotExpress{std::move(item)});
  // Landlock cannot take a right back below a writable root: a protected
  // path there that exists stays writable, and a missing one creatable.
  if (!in.protected_present.empty())
    return std::unexpected(CannotExpress{fmt::format(
        "protected path {} (Landlock cannot keep a path inside a writable root read-only; --unprotect it or use "
        "the namespace rung)",
        in.protected_present.front())});
  // A writable root at or above a hidden credential grants reading it.
  std::string inside;
  for (const MountOp& m : mounts) {
    if (m.kind != MountOp::Kind::bind || !inside.empty()) continue;
    for (const auto& h : p.hidden_paths) {
      const std::string_view plain = h.ends_with('/') ? std::string_view(h).substr(0, h.size() - 1) : h;
      if (at_or_below(plain, m.dest)) {
        inside = fmt::format("hidden credential {} inside the writable root {} (--allow-read it, or use the "
                             "namespace rung)",
                             plain, m.dest);
        break;
      }
    }
  }
  if (!inside.empty()) return std::unexpected(CannotExpress{std::move(inside)});

  // --network proxy without a network namespace: Landlock must refuse
  // every TCP connect and bind of the command (ABI 4), so that only
  // nsrun's answer to connect() reaches anything (net/connector.hpp).
  if (p.network == Network::proxy && abi < 4)
    return std::unexpected(CannotExpress{fmt::format(
        "--network proxy (Landlock ABI {} cannot refuse TCP connect and bind; ABI 4 can)", abi)});

  Ruleset r;
  r.abi = abi;
  r.handled_fs = fs_rights(abi);
  const uint64_t all = r.handled_fs;
  const uint64_t device = (fs::read_file | fs::write_file | fs::truncate | fs::ioctl_dev) & all;

  const uint64_t reading = fs::read_file | fs::read_dir | fs::execute;
  if (p.hidden_paths.empty()) {
    r.rules.push_back({"/", reading, false, "read and execute everywhere"});
  } else {
    // Rights only add up along a path, so a hidden path is kept unreadable
    // by granting reading on everything beside it instead of on "/": the
    // directories above it may only be listed (which the hidden directory
    // inherits: its names show, its contents do not), every other entry of
    // theirs is readable. An entry made in one of them later is not.
    const std::vector<std::string> above = hidden_ancestors(p.hidden_paths);
    auto hidden_or_above = [&](const std::string& path) {
      if (std::find(above.begin(), above.end(), path) != above.end()) return true;
      return std::any_of(p.hidden_paths.begin(), p.hidden_paths.end(), [&](const std::string& h) {
        const std::string_view plain = h.ends_with('/') ? std::string_view(h).substr(0, h.size() - 1) : h;
        return plain == path;
      });
    };
    std::size_t entries = 0;
    for (const auto& [dir, names] : in.listings) entries += names.size();
    r.rules.reserve(above.size() + entries + p.shown_in_hidden.size() + std::size(writable_devices) +
                    in.terminals.size() + 1 + mounts.size());
    for (const auto& dir : above) {
      auto listed = in.listings.find(dir);
      if (listed == in.listings.end())
        return std::unexpected(CannotExpress{fmt::format("hidden credentials below {} (it cannot be listed)", dir)});
      r.rules.push_back({dir, fs::read_dir, false, "list only: a hidden credential is below", false, true});
      for (const auto& listed_name : listed->second) {
        const bool directory = listed_name.size() > 1 && listed_name.ends_with('/');
        const std::string_view entry = directory ? std::string_view(listed_name).substr(0, listed_name.size() - 1)
                                                 : std::string_view(listed_name);
        // dir/entry, or /entry below "/".
        std::string path;
        path.reserve(dir.size() + 1 + entry.size());
        if (dir != "/") path = dir;
        path += '/';
        path += entry;
        // Opened through no symlink: an entry swapped for a link after it
        // was listed would carry the right to the link's target (a hidden
        // path); the launch then fails instead.
        if (!hidden_or_above(path))
          r.rules.push_back({std::move(path), reading, true, "read and execute", true, directory, !directory});
      }
    }
  }
  // A file inside a hidden directory that --allow-read names: readable
  // itself, and only it (the directory has no rule; a rule on the file is
  // on its inode, opened through no symlink, with one link).
  for (const auto& f : p.shown_in_hidden) {
    PathRule rule{f, fs::read_file, false, "shown inside a hidden directory (--allow-read)", true, false, true};
    rule.one_link = true;
    r.rules.push_back(std::move(rule));
  }
  std::vector<std::string> devices(std::begin(writable_devices), std::end(writable_devices));
  for (const auto& t : in.terminals)
    if (std::find(devices.begin(), devices.end(), t) == devices.end()) devices.push_back(t);
  for (const auto& d : devices) r.rules.push_back({d, device, true, "device"});
  if (!in.tmpdir.empty()) r.rules.push_back(tmpdir_rule(r, in.tmpdir));
  for (const MountOp& m : mounts)
    if (m.kind == MountOp::Kind::bind) r.rules.push_back({m.dest, all, m.optional, "writable root", !p.follow_symlinks});

  // What the kernel cannot enforce at this ABI, in the order of the ABIs
  // that added it.
  if (abi < 3) r.dropped.push_back("truncate");
  if (p.network == Network::none || p.ns.net) {
    r.handled_net = net_rights(abi);
    if (abi < 4) r.dropped.push_back("network-tcp");
    // Landlock speaks only of TCP: UDP, raw and other sockets stay open.
    r.dropped.push_back("network-other");
  } else if (p.network == Network::proxy) {
    // No port rule: no TCP connect or bind at all. The rung's filter keeps
    // the rest (UDP, raw and other families; connect() goes to nsrun).
    r.handled_net = net_rights(abi);
  }
  if (abi < 5) r.dropped.push_back("ioctl-dev");
  r.scoped = scopes(abi);
  if (abi < 6) {
    r.dropped.push_back("scope-signal");
    r.dropped.push_back("scope-abstract-unix");
  }
  // Kept by refusing more than the promise asks: enforcement stays full.
  for (auto what : landlock_refused_everywhere()) r.refused.emplace_back(what);
  r.enforcement = r.dropped.empty() ? Enforcement::full : Enforcement::partial;
  return r;
}

// A directory: the supervisor has just made it (mkdir), and nobody else can
// rename it in the sticky TMPDIR base. Opened with O_DIRECTORY, no fstat.
PathRule tmpdir_rule(const Ruleset& r, const std::string& dir) {
  return {dir, r.handled_fs, false, "private TMPDIR", false, true};
}

}  // namespace nsrun::landlock

namespace nsrun::landlock {

namespace {

// Rights by the kernel's names (LANDLOCK_ACCESS_FS_*, lower case).
std::string rights(uint64_t access, uint64_t handled) {
  static constexpr std::pair<uint64_t, std::string_view> each[] = {
      {fs::execute, "execute"},       {fs::write_file, "write-file"}, {fs::read_file, "read-file"},
      {fs::read_dir, "read-dir"},     {fs::remove_dir, "remove-dir"}, {fs::remove_file, "remove-file"},
      {fs::make_char, "make-char"},   {fs::make_dir, "make-dir"},     {fs::make_reg, "make-reg"},
      {fs::make_sock, "make-sock"},   {fs::make_fifo, "make-fifo"},   {fs::make_block, "make-block"},
      {fs::make_sym, "make-sym"},     {fs::refer, "refer"},           {fs::truncate, "truncate"},
      {fs::ioctl_dev, "ioctl-dev"},
  };
  if (access != 0 && access == handled) return "every handled right";
  std::string out;
  for (const auto& [bit, label] : each)
    if ((access & bit) != 0) out += fmt::format("{}{}", out.empty() ? "" : " ", label);
  return out.empty() ? "none" : out;
}

std::string list(const std::vector<std::string>& items) {
  return items.empty() ? std::string("none") : fmt::format("{}", fmt::join(items, ", "));
}

}  // namespace

std::string describe(const Ruleset& r) {
  std::string out = fmt::format("landlock: ABI {}, enforcement {}\n", r.abi, name(r.enforcement));
  out += fmt::format("landlock handles: {}\n", rights(r.handled_fs, 0));
  for (const PathRule& rule : r.rules)
    out += fmt::format("landlock allows {}{}: {} ({}{})\n", printable(rule.path), rule.optional ? " (if it exists)" : "",
                       rights(rule.access, r.handled_fs), rule.why, rule.no_symlinks ? "; opened through no symlink" : "");
  out += "landlock allows the private TMPDIR (made at launch under $TMPDIR): every handled right\n";
  if (r.handled_net != 0)
    out += fmt::format("landlock network: TCP {} refused\n",
                       (r.handled_net & net::connect_tcp) != 0 ? "bind and connect" : "bind");
  std::vector<std::string> scoped;
  if ((r.scoped & scope::signal) != 0) scoped.emplace_back("signals");
  if ((r.scoped & scope::abstract_unix_socket) != 0) scoped.emplace_back("abstract unix sockets");
  out += fmt::format("landlock scopes (nothing outside the sandbox reachable): {}\n", list(scoped));
  out += fmt::format("not enforced at this ABI: {}\n", list(r.dropped));
  out += fmt::format("refused everywhere, writable roots too: {}\n", list(r.refused));
  return out;
}

}  // namespace nsrun::landlock
