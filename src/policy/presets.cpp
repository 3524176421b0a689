#include "policy/presets.hpp"

#include <algorithm>

namespace nsrun {

MountOp mount_op(MountOp::Kind kind, std::string source, std::string dest) {
  MountOp m;
  m.kind = kind;
  m.source = std::move(source);
  m.dest = std::move(dest);
  return m;
}

namespace {
constexpr auto op = mount_op;

// An overlay whose lower layer is `dir` itself and whose upper and work
// directories are `layer`'s. Before the launch made them (explain, policy)
// the upper is empty: a read-only overlay, never a writable bind.
MountOp layer_mount(const std::string& dir, const LayerDirs& layer) {
  MountOp m = op(MountOp::Kind::overlay, layer.upper, dir);
  m.layers = {dir};
  m.workdir = layer.work;
  m.layer = true;
  if (layer.upper.empty()) m.kind = MountOp::Kind::ro_overlay;
  return m;
}

MountOp workspace_mount(const Policy& policy) {
  if (policy.workspace_mode == WorkspaceMode::cow) {
    // The run layer is scratch until `nsrun commit`: `volatile` spares the
    // unmount a sync of the whole file system the upper directory is on
    // (everyone's dirty data; most of a cow launch's cost on a busy disk).
    // The price: the command's fsync() there is a no-op, and a host crash
    // may lose the layer's newest writes. Each launch has a fresh work
    // directory, so overlayfs's after-crash refusal never trips.
    MountOp m = layer_mount(policy.workspace, policy.layers.workspace);
    m.volatile_upper = m.kind == MountOp::Kind::overlay;
    return m;
  }
  return op(MountOp::Kind::bind, policy.workspace, policy.workspace);
}

// --home: `ro` adds nothing (the read-only root shows $HOME as it is).
void home_mounts(std::vector<MountOp>& out, const Policy& policy) {
  const std::string& home = policy.layers.home;
  if (home.empty() || contains_private_mounts(home)) return;
  if (policy.home == HomeMode::rw) out.push_back(op(MountOp::Kind::bind, home, home));
  if (policy.home != HomeMode::cow) return;
  out.push_back(layer_mount(home, policy.layers.home_layer));
  // --allow-read re-exposes a path read-only: in the layer it would be
  // writable, and a write would copy it (a key, a token) up into the
  // layer. The real one, bound read-only over the layer, is neither.
  for (const auto& a : policy.allow_read) {
    if (a.size() <= home.size() || !a.starts_with(home) || a[home.size()] != '/') continue;
    MountOp m = op(MountOp::Kind::ro_bind, a, a);
    m.optional = true;
    out.push_back(std::move(m));
  }
}
}  // namespace

bool contains_private_mounts(std::string_view root) { return root == "/"; }

std::vector<MountOp> preset_mounts(const Policy& policy) {
  using K = MountOp::Kind;
  std::vector<MountOp> out;
  if (!policy.preset || policy.mode == Mode::full_access) return out;
  // Room for every step below (at most 11, the writable roots and the
  // home's --allow-read binds): none is moved again as the list grows.
  out.reserve(11 + policy.writable.size() + policy.allow_read.size());

  const bool writing = policy.mode == Mode::workspace_write;
  out.push_back(op(K::ro_bind, "/", "/"));
  // A writable root that contains the private /dev, /proc and /tmp (only
  // `/`: validate() refuses a path that resolves to it by another name) is
  // bound before them. Its bind is recursive, so it brings the host's /proc,
  // /dev and /tmp along; bound after them it covered them, and the command
  // saw every host process and, as root, wrote host sysctls in /proc/sys.
  bool whole_host = false;
  if (writing) {
    whole_host = contains_private_mounts(policy.workspace) ||
                 std::any_of(policy.writable.begin(), policy.writable.end(),
                             [](const std::string& d) { return contains_private_mounts(d); });
  }
  if (whole_host) {
    out.push_back(op(K::bind, "/", "/"));
    // The host's sysfs came along writable too: as root (uid 0 mapped to
    // the host's 0) its files are the owner's to write, and cgroupfs below
    // it moves processes and limits. Kernel knobs are not host files the
    // user asked to write; the sandbox keeps them read-only.
    MountOp sys = op(K::ro_bind, "/sys", "/sys");
    sys.optional = true;
    out.push_back(std::move(sys));
    // Without a procfs of its own (--proc none) the host's stays what it is
    // under the read-only root: read-only, not writable sysctls.
    if (policy.proc == ProcMode::none) {
      MountOp proc = op(K::ro_bind, "/proc", "/proc");
      proc.optional = true;
      out.push_back(std::move(proc));
    }
  }
  out.push_back(op(K::dev, "", "/dev"));
  if (policy.proc != ProcMode::none) out.push_back(op(K::proc, "", "/proc"));
  out.push_back(op(K::tmpfs, "", "/tmp"));
  // The other writable roots come after the private /tmp so that a
  // workspace under /tmp is not hidden by it. In read-only mode the
  // workspace is bound again, read-only, for the same reason (never `/`:
  // the root bind above is that already, and a second one would cover the
  // private mounts).
  // The home layer comes first, so the workspace and the writable roots
  // that live inside $HOME keep their direct binds on top of it.
  home_mounts(out, policy);
  if (writing) {
    if (!contains_private_mounts(policy.workspace)) out.push_back(workspace_mount(policy));
    for (const auto& dir : policy.writable)
      if (!contains_private_mounts(dir)) out.push_back(op(K::bind, dir, dir));
  } else if (!policy.workspace.empty() && !contains_private_mounts(policy.workspace)) {
    out.push_back(op(K::ro_bind, policy.workspace, policy.workspace));
  }
  // nsrun's own layer directories are none of the command's business: the
  // other runs' uppers, the other workspaces' homes.
  const bool run_layer = writing && policy.workspace_mode == WorkspaceMode::cow;
  const bool home_layer = policy.home == HomeMode::cow && !policy.layers.home.empty();
  if (run_layer && !policy.layers.run_base.empty()) out.push_back(op(K::hide, "", policy.layers.run_base));
  if (home_layer && !policy.layers.home_base.empty()) out.push_back(op(K::hide, "", policy.layers.home_base));
  return out;
}

MountOp resolver_mount() {
  MountOp m;
  m.kind = MountOp::Kind::ro_bind_data;
  m.dest = "/etc/resolv.conf";
  // One attempt per query is enough on loopback; TCP is served too.
  m.data = "# nsrun --network proxy: the egress DNS stub\nnameserver 127.0.0.1\noptions attempts:1 timeout:5\n";
  m.perms = 0644;
  return m;
}

std::vector<MountOp> effective_mounts(const Policy& policy) {
  // for_each_mount()'s order, the preset's steps moved rather than copied.
  std::vector<MountOp> out = preset_mounts(policy);
  out.reserve(out.size() + policy.mounts.size() + 1);
  out.insert(out.end(), policy.mounts.begin(), policy.mounts.end());
  if (policy.network == Network::proxy) out.push_back(resolver_mount());
  return out;
}

}  // namespace nsrun
