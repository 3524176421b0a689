#include "ns/credentials.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace nsrun {

Result<std::vector<cap_value_t>> parse_capabilities(const std::vector<std::string>& names) {
  std::vector<cap_value_t> out;
  for (const auto& raw : names) {
    std::string name = raw;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "all") {
      for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) out.push_back(c);
      continue;
    }
    if (!name.starts_with("cap_")) name = "cap_" + name;
    cap_value_t value = 0;
    if (cap_from_name(name.c_str(), &value) != 0)
      return fail(usage_error("--cap-add", fmt::format("{}: unknown capability", raw)));
    out.push_back(value);
  }
  return out;
}

namespace {
bool holds_effective(cap_value_t cap) {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return false;
  cap_flag_value_t value = CAP_CLEAR;
  cap_get_flag(caps, cap, CAP_EFFECTIVE, &value);
  cap_free(caps);
  return value == CAP_SET;
}
}  // namespace

Result<void> drop_capabilities(const std::vector<cap_value_t>& wanted) {
  // Only what this process holds can be kept ("ALL" means all of those):
  // asking the kernel for more is refused outright.
  std::vector<cap_value_t> keep;
  if (!wanted.empty()) {
    cap_t current = cap_get_proc();
    if (current == nullptr) return fail(sys_error("read capabilities"));
    for (cap_value_t c : wanted) {
      cap_flag_value_t v = CAP_CLEAR;
      if (cap_get_flag(current, c, CAP_PERMITTED, &v) == 0 && v == CAP_SET && CAP_IS_SUPPORTED(c) &&
          std::find(keep.begin(), keep.end(), c) == keep.end())
        keep.push_back(c);
    }
    cap_free(current);
  }
  auto kept = [&](cap_value_t c) { return std::find(keep.begin(), keep.end(), c) != keep.end(); };
  // The bounding set must be emptied while CAP_SETPCAP is still effective;
  // it is what keeps a later execve of a setuid or file-capability binary
  // from regaining anything. A caller without CAP_SETPCAP (an unprivileged
  // user on the Landlock rung) cannot touch it, and needs not: with
  // no_new_privs, exec adds nothing.
  if (holds_effective(CAP_SETPCAP)) {
    const int last = static_cast<int>(cap_max_bits()) - 1;
    for (cap_value_t c = 0; c <= last; ++c) {
      if (kept(c)) continue;
      if (cap_drop_bound(c) != 0 && errno != EINVAL)
        return fail(sys_error("drop bounding capability", cap_to_name(c)));
    }
  }
  if (cap_reset_ambient() != 0 && errno != EINVAL) return fail(sys_error("clear ambient capabilities"));

  cap_t caps = cap_init();
  if (caps == nullptr) return fail(sys_error("cap_init"));
  if (!keep.empty()) {
    cap_set_flag(caps, CAP_EFFECTIVE, static_cast<int>(keep.size()), keep.data(), CAP_SET);
    cap_set_flag(caps, CAP_PERMITTED, static_cast<int>(keep.size()), keep.data(), CAP_SET);
    cap_set_flag(caps, CAP_INHERITABLE, static_cast<int>(keep.size()), keep.data(), CAP_SET);
  }
  const int rc = cap_set_proc(caps);
  const int err = errno;
  cap_free(caps);
  if (rc != 0) return fail(sys_error("drop capabilities", {}, err));
  // Kept capabilities survive execve of an ordinary binary only as ambient.
  for (cap_value_t c : keep)
    if (cap_set_ambient(c, CAP_SET) != 0) return fail(sys_error("raise ambient capability", cap_to_name(c)));
  return {};
}

Result<void> set_no_new_privs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail(sys_error("no_new_privs"));
  return {};
}

}  // namespace nsrun
