#include "launch/userns.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/core.h>

#include "sys/fd.hpp"

namespace nsrun {

namespace {
// `op` names the file for the ladder, whichever of the two calls failed.
Result<void> write_proc(Operation op, const char* path, std::string_view text) {
  Fd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd) return fail(sys_error_named(op, "open", path, errno));
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail(sys_error_named(op, "write", path, errno));
  return {};
}
}  // namespace

Result<void> write_id_maps(const LaunchPlan& plan) {
  if (!plan.id_maps) return {};
  if (auto r = write_proc(Operation::write_uid_map, "/proc/self/uid_map", fmt::format("{} {} 1\n", plan.uid_map.inside, plan.uid_map.outside)); !r)
    return r;
  if (auto r = write_proc(Operation::write_setgroups, "/proc/self/setgroups", "deny\n"); !r) return r;
  return write_proc(Operation::write_gid_map, "/proc/self/gid_map", fmt::format("{} {} 1\n", plan.gid_map.inside, plan.gid_map.outside));
}

}  // namespace nsrun
