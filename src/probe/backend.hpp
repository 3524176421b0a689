// Host backends: where nsrun runs, as far as /proc is concerned. Detection
// happens in nsrun before any namespace is made, never inside the sandbox.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "policy/policy.hpp"

namespace nsrun {

// Trimmed and lower-cased: "  LakeBox " -> "lakebox".
std::string normalize_backend(std::string_view name);

// Backends whose /proc may be bound into the sandbox.
bool proc_bind_allowed(std::string_view backend);

// Precedence: an explicit name (option or NSRUN_HOST_BACKEND, authoritative
// even when not on the allow-list), else "lakebox" when the marker exists,
// else none (empty).
std::string detect_backend(const std::optional<std::string>& explicit_name, bool marker_present);

// The marker file that identifies a Lakebox microVM.
inline constexpr const char* lakebox_marker = "/run/lakebox";

// auto -> host-bind on an allow-listed backend, fresh elsewhere.
ProcMode resolve_proc_mode(ProcMode requested, std::string_view backend);

}  // namespace nsrun
