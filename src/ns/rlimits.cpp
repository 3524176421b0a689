#include "ns/rlimits.hpp"

#include <sys/resource.h>

#include <fmt/core.h>

namespace nsrun {

Result<void> apply_rlimits(const std::vector<RlimitSetting>& rlimits) {
  for (const auto& r : rlimits) {
    const int resource = rlimit_resource(r.name);
    if (resource < 0) return fail(Error{"rlimit", EINVAL, r.name, {}});
    rlimit value{static_cast<rlim_t>(r.soft), static_cast<rlim_t>(r.hard)};
    if (::setrlimit(static_cast<__rlimit_resource>(resource), &value) != 0)
      return fail(sys_error("rlimit", fmt::format("{}={}:{}", r.name, r.soft, r.hard)));
  }
  return {};
}

}  // namespace nsrun
