// Linked into the static nsrun only: lean replacements for the reporters of
// fatal errors in libstdc++ and glibc, whose own versions pull in far more
// code than nsrun's errors need.
//
// nsrun is built without exceptions: errors are values here, and nothing
// catches. What libstdc++ would throw (out of memory, a length_error from a
// container, an empty std::function called) ends the program here with a
// plain message, as the uncaught exception did, so libstdc++'s
// exception-raising helpers and the classes and string formatting behind
// them stay out of the binary. The default terminate handler would also
// pull the whole C++ demangler (about 40 KB) to name an exception's type.
#include <errno.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace {

// write(2) only: stdio may be what failed.
void put(const char* s) { (void)!::write(STDERR_FILENO, s, std::strlen(s)); }

[[noreturn]] void die(const char* what) {
  put("nsrun: internal error: "), put(what), put("\n");
  std::abort();
}

}  // namespace

// glibc's own reporter for its internal assertions formats with the wide
// printf (fxprintf), about 25 KB that nothing else here needs. Same text:
// "prog: file:line: function: Assertion `expr' failed."
extern "C" [[noreturn]] void __assert_fail(const char* assertion, const char* file, unsigned line, const char* function) {
  char digits[16];
  char* d = digits + sizeof digits;
  *--d = '\0';
  do *--d = static_cast<char>('0' + line % 10); while ((line /= 10) != 0);
  if (program_invocation_short_name[0] != '\0') put(program_invocation_short_name), put(": ");
  put(file), put(":"), put(d), put(": ");
  if (function != nullptr) put(function), put(": ");
  put("Assertion `"), put(assertion), put("' failed.\n");
  std::abort();
}

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
