#include "probe/backend.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace nsrun {

namespace {
// Single-tenant microVMs that mask /proc, where binding the host's /proc
// gives away nothing another tenant owns. Adding a backend is one entry.
constexpr std::array<std::string_view, 1> proc_bind_allow_list{"lakebox"};
}  // namespace

std::string normalize_backend(std::string_view name) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!name.empty() && space(name.front())) name.remove_prefix(1);
  while (!name.empty() && space(name.back())) name.remove_suffix(1);
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool proc_bind_allowed(std::string_view backend) {
  return std::find(proc_bind_allow_list.begin(), proc_bind_allow_list.end(), backend) !=
         proc_bind_allow_list.end();
}

std::string detect_backend(const std::optional<std::string>& explicit_name, bool marker_present) {
  if (explicit_name) return normalize_backend(*explicit_name);
  return marker_present ? "lakebox" : "";
}

ProcMode resolve_proc_mode(ProcMode requested, std::string_view backend) {
  if (requested != ProcMode::automatic) return requested;
  return proc_bind_allowed(backend) ? ProcMode::host_bind : ProcMode::fresh;
}

}  // namespace nsrun
