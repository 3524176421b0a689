// Errors are values. An Error names the launch step that failed, the path it
// was working on and the errno the kernel gave, so that one line can tell the
// user exactly what went wrong, even when the failure happened in a child
// process and crossed a socket to reach the parent.
#pragma once

#include <cerrno>
#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

namespace nsrun {

// What the failure means for the exit status and for the ladder.
enum class ErrorKind : unsigned char {
  setup,       // nsrun could not build the sandbox (exit 125)
  usage,       // bad input: options, policy, paths (exit 125, nothing ran)
  not_found,   // the command was not found (exit 127)
  not_exec,    // the command was found but could not be executed (exit 126)
};

struct Error {
  std::string step;    // the named launch step or the option / field at fault
  int err = 0;         // errno, 0 when the failure is not a system call's
  std::string path;    // the path concerned, may be empty
  std::string detail;  // anything else worth saying, may be empty
  ErrorKind kind = ErrorKind::setup;

  // "<step> <path>: <detail or strerror>", printable() (one line).
  std::string message() const;
  int exit_code() const;
};

template <class T = void>
using Result = std::expected<T, Error>;

// A failed system call: captures errno at the call site.
Error sys_error(std::string_view step, std::string_view path = {}, int err = errno);

// Bad input: an option, a policy field or a path that cannot be used.
Error usage_error(std::string_view what, std::string_view why);

inline std::unexpected<Error> fail(Error e) { return std::unexpected<Error>(std::move(e)); }

// Text as nsrun prints it, always one line: control bytes (a newline or an
// escape sequence in a path) are written as \n, \t, \r or \xHH, so a
// file name cannot forge a second message or drive the terminal; text
// longer than `max` bytes keeps its head and tail around an ellipsis ("…"),
// so the step and the errno at either end stay visible. Backslashes are
// left alone: applying it twice changes nothing.
inline constexpr std::size_t printable_max = 8192;
std::string printable(std::string_view text, std::size_t max = printable_max);

// The error with each string field cut to at most `max` bytes (an ellipsis
// marks a cut), for a channel whose messages have a size limit.
Error bounded(const Error& e, std::size_t max);

// Serialisation for the child -> parent channel.
std::string encode(const Error& e);
Result<Error> decode_error(std::string_view bytes);

}  // namespace nsrun
