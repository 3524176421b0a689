// The one option table of nsrun's command lines: the native
// CLI, the bwrap dialect, the Policy JSON field each option mirrors,
// `--help` of both dialects and the man page check
// (tests/unit/options_test.cpp) all read it. Front ends keep only their
// loop (how arguments are split) and the checks made once every option
// is known; what an option means is its entry in src/cli/options.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/bwrap.hpp"
#include "cli/native.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"

namespace nsrun {

enum class Dialect { native, bwrap };

// The native dialect's state between options, besides the Policy.
struct NativeParse {
  Invocation& inv;
  std::optional<std::string> host_backend;  // --host-backend, resolved after the loop
};

// The bwrap dialect's state between options: what bwrap keeps pending
// (--perms, --size, --overlay-src apply to the next option), what it
// decides only once every option is known, and the argument list itself
// (--args inserts into it). Its helpers are in src/cli/bwrap.cpp and
// speak bwrap's words.
struct BwrapParse {
  BwrapParse(const BwrapContext& c, BwrapInvocation& i, std::vector<std::string>& a, std::size_t& n)
      : ctx(c), inv(i), args(a), next(n) {}

  const BwrapContext& ctx;
  BwrapInvocation& inv;
  std::vector<std::string>& args;
  std::size_t& next;  // index in `args` of the next unread argument

  std::optional<uint32_t> perms;
  std::optional<uint64_t> size;
  std::vector<std::string> overlay_src;
  std::vector<std::pair<bool, uint64_t>> cap_ops;  // (add?, capability bits), in order
  bool user = false, user_try = false, cgroup_try = false, hostname_set = false;
  bool single_seccomp = false, added_seccomp = false;
  // The caller's fds that options use up (--args, --file, --bind-data,
  // --bind-fd, --seccomp, ...): bwrap closes them before the exec, so of
  // the fds it inherited the command gets all but these.
  std::vector<int> used_fds;
  // Of those, the ones bwrap reads and closes while it parses (--args,
  // --add-seccomp-fd): a later option naming one finds it closed.
  std::vector<int> closed_fds;
  std::optional<int> sync_fd;  // --sync-fd: the command keeps it only with --as-pid-1
  std::string unsupported;  // an option accepted for now, refused once all are read

  void warn(std::string_view text) const;
  Result<int> fd(const std::string& text) const;
  Result<int> open_fd(const std::string& text) const;
  Result<std::string> fd_data(const std::string& text);
  bool closed(int fd) const;
  Result<uint64_t> cap_bits(const std::string& name) const;
  Result<uint32_t> octal(const std::string& text, std::string_view option) const;
  Result<uint64_t> tmpfs_size(const std::string& text) const;
  // Mount operations, in command-line order; `values` as the option got them.
  Result<void> bind(MountOp::Kind kind, bool optional, std::span<const std::string> values);
  Result<void> bind_fd(MountOp::Kind kind, std::span<const std::string> values);
  Result<void> data_op(MountOp::Kind kind, std::span<const std::string> values);
  Result<void> dest_op(MountOp::Kind kind, const std::string& dest, bool takes_perms = false);
  Result<void> overlay(MountOp::Kind kind, std::string_view option, std::span<const std::string> values);
  void push(MountOp m, bool takes_perms = false);
  Result<void> args_from_fd(const std::string& text);
  // --exec-label / --file-label: refused, now or once all options are read.
  Result<void> selinux_label(std::string_view option);
};

// bwrap's words for a refused option ("bwrap: " is added when printed).
Error said_bwrap(std::string text, int err = 0);
// A number as bwrap reads one (fds, ids, modes): digits only, at most INT_MAX.
std::optional<int> bwrap_number(std::string_view text, int base = 10);
// `path` made absolute against `base` (bwrap: the caller's cwd for host
// paths, / for paths inside).
std::string absolute_from(std::string_view base, const std::string& path);

// One call of an option's setter.
struct OptionCall {
  Policy& policy;
  std::span<const std::string> values;  // exactly `arity` of them
  std::string_view name;                // the option's name in the caller's dialect
  NativeParse* native = nullptr;        // set in the native dialect
  BwrapParse* bwrap = nullptr;          // set in the bwrap dialect
};

using OptionSetter = std::function<Result<void>(OptionCall&)>;

// How an option is spelled and described in one dialect; an empty name: not
// in that dialect.
// Made at compile time (consteval): the option table's strings cost no
// strlen at start-up.
struct Spelling {
  constexpr Spelling() = default;
  consteval Spelling(std::string_view n, std::string_view m, std::string_view h) : name(n), metavar(m), help(h) {}

  std::string_view name;     // "--ro"
  std::string_view metavar;  // what follows it, for --help: "DIR", "SRC DEST"
  std::string_view help;     // one line
};

struct OptionSpec {
  Spelling native;
  std::string_view native_short;  // "-h"; empty: none
  Spelling bwrap;
  // The key of the Policy's row (policy_fields(), policy/policy_json.hpp)
  // this option sets to the same value (a list option appends to that
  // list); empty: the option has no 1:1 field. tests/unit/policy_fields_test.cpp
  // checks that the row exists and that option and row give the same Policy.
  std::string_view json;
  int arity = 0;          // values that follow the option
  OptionSetter set;
  bool modifier = false;  // bwrap --perms/--size: applies to the next option
};

std::span<const OptionSpec> option_table();

// The entry `arg` names in `dialect` (long or short spelling), or null.
const OptionSpec* find_option(Dialect dialect, std::string_view arg);

// The option of `dialect` that `arg` is most likely a typo or an
// abbreviation of, for "did you mean"; nullopt when none is close.
std::optional<std::string_view> nearest_option(Dialect dialect, std::string_view arg);

// The option list of --help: one line per option of `dialect`, each
// indented by `indent` and its "NAME METAVAR" padded to `width`.
// One line per option of the dialect, in table order; only those named in
// `only` when it is not empty.
std::string option_help(Dialect dialect, std::string_view indent, std::size_t width,
                        std::span<const std::string_view> only = {});

// Every option name of `dialect`, in table order, in lines indented by
// `indent` and no longer than `columns`.
std::string option_names(Dialect dialect, std::string_view indent, std::size_t columns);

}  // namespace nsrun
