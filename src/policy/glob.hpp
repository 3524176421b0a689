// Shell-style globs for --env-allow and --env-deny.
#pragma once

#include <string_view>

namespace nsrun {

// fnmatch(pattern, name, 0) == 0 in the C locale, which nsrun runs in:
// `*`, `?`, bracket expressions (`[a-z]`, `[!...]`, `[^...]`,
// `[[:alpha:]]`, `[[=a=]]`, `[[.a.]]`) and backslash escapes, ill-formed
// patterns included. glibc's fnmatch would bring about 35 KB of wide
// character and collation code into the static nsrun for this.
bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace nsrun
