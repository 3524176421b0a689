#include "policy/presets.hpp"

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
}  // namespace

std::vector<MountOp> preset_mounts(const Policy& policy) {
  using K = MountOp::Kind;
  std::vector<MountOp> out;
  if (!policy.preset || policy.mode == Mode::full_access) return out;

  out.push_back(op(K::ro_bind, "/", "/"));
  out.push_back(op(K::dev, "", "/dev"));
  if (policy.proc != ProcMode::none) out.push_back(op(K::proc, "", "/proc"));
  out.push_back(op(K::tmpfs, "", "/tmp"));
  // The writable roots come after the private /tmp so that a workspace under
  // /tmp is not hidden by it. In read-only mode the workspace is bound again,
  // read-only, for the same reason.
  if (policy.mode == Mode::workspace_write) {
    out.push_back(op(K::bind, policy.workspace, policy.workspace));
    for (const auto& dir : policy.writable) out.push_back(op(K::bind, dir, dir));
  } else if (!policy.workspace.empty()) {
    out.push_back(op(K::ro_bind, policy.workspace, policy.workspace));
  }
  return out;
}

std::vector<MountOp> effective_mounts(const Policy& policy) {
  std::vector<MountOp> out;
  for_each_mount(policy, [&](const MountOp& m) { out.push_back(m); });
  return out;
}

}  // namespace nsrun
