// Linked into the static nsrun only, which is built without exceptions:
// errors are values here, and nothing catches. What libstdc++ would throw
// (out of memory, a length_error from a container, an empty std::function
// called) ends the program here with a plain message, as the uncaught
// exception did, so libstdc++'s exception-raising helpers and the classes
// and string formatting behind them stay out of the binary. The default
// terminate handler would also pull the whole C++ demangler (about 40 KB)
// to name an exception's type.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace {

[[noreturn]] void die(const char* what) {
  // write(2) only: stdio may be what failed.
  static const char prefix[] = "nsrun: internal error: ";
  (void)!::write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!::write(STDERR_FILENO, what, std::strlen(what));
  (void)!::write(STDERR_FILENO, "\n", 1);
  std::abort();
}

}  // namespace

namespace __gnu_cxx {
void __verbose_terminate_handler() { die("uncaught C++ exception"); }
}  // namespace __gnu_cxx

void* operator new(std::size_t size) {
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  die("out of memory");
}

namespace std {
[[noreturn]] void __throw_bad_alloc() { die("out of memory"); }
[[noreturn]] void __throw_bad_array_new_length() { die("out of memory"); }
[[noreturn]] void __throw_length_error(const char* what) { die(what); }
[[noreturn]] void __throw_logic_error(const char* what) { die(what); }
[[noreturn]] void __throw_out_of_range_fmt(const char* what, ...) { die(what); }
[[noreturn]] void __throw_runtime_error(const char* what) { die(what); }
[[noreturn]] void __throw_bad_function_call() { die("empty std::function called"); }
}  // namespace std
