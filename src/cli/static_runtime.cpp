// Linked into the static nsrun only. libstdc++'s default terminate handler
// demangles the exception's type name, which pulls the whole C++ demangler
// (about 40 KB) into a binary that never throws on purpose: errors are
// values here. This one says what happened in plain words and aborts.
#include <unistd.h>

#include <cstdlib>

namespace __gnu_cxx {
[[noreturn]] void __verbose_terminate_handler() {
  static const char msg[] = "nsrun: internal error: uncaught C++ exception\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  std::abort();
}
}  // namespace __gnu_cxx
