#pragma once
// Lexical path containment, shared by the checks that ask "is this path in
// that tree". Both arguments are absolute and normalised (no "." or ".."
// components, no trailing '/'); nothing here touches the file system.

#include <string_view>

namespace nsrun {

// `path` is `dir` itself or lies below it; "/" holds every path.
inline bool at_or_below(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

}  // namespace nsrun
