// The launch report (--report PATH, --report-fd N): one JSON object saying
// which rung ran the command, why the others did not, and how long each
// launch phase took. Reason codes are stable; docs/ladder.md lists them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launch/watch.hpp"
#include "net/egress.hpp"
#include "policy/json.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

struct RungReport {
  std::string name;      // "namespaces", "landlock"
  bool used = false;
  std::string reason;    // stable code when not used: "userns-denied", "not-tried", ...
  std::string detail;    // the error message behind the reason, if any
};

// A protected path: how the rung kept it, and what nsrun saw
// happen to it. Refusals (EROFS, EBUSY) are the kernel's answers to the
// command and are not seen by nsrun; a missing path that direct mode does
// not keep and that exists after the run is ("created").
struct ProtectedReport {
  std::string path;
  std::string kept;       // read-only, covered, sealed, not-kept, unreachable; git scan: quarantined, armed, unscanned
  std::string operation;  // "", "created" or (git scan) "changed"
  std::string renamed_to; // quarantined: the name it has now, in the same directory
};

struct LaunchReport {
  std::string rung;                    // the rung that ran the command, "unconfined", or "none"
  Mode mode = Mode::workspace_write;
  ProcMode proc = ProcMode::fresh;     // resolved
  std::string host_backend;
  SeccompMode seccomp = SeccompMode::standard;
  int landlock_abi = 0;                // 0: not probed or missing
  std::string landlock_enforcement;    // "full", "partial", "" when Landlock was not used
  std::vector<std::string> landlock_dropped;  // what this ABI cannot enforce ("truncate", ...)
  std::vector<std::string> landlock_refused;  // refused everywhere, writable roots too ("file-metadata", ...)
  std::vector<RungReport> rungs;
  std::vector<PhaseTime> phases;
  std::vector<ProtectedReport> protected_paths;  // "protected"
  std::vector<std::string> hidden_credentials;   // "hidden_credentials": Policy::hidden_paths
  int exit_code = 125;
  std::optional<Error> error;
  // How the command ended, what it used, each limit's
  // enforcement and the refused system calls (launch/watch.hpp).
  Verdict verdict;
  bool seccomp_filter = true;          // a filter with refusals was loaded (else no denials can happen)
  // Copy-on-write layers (src/layers/): the run id for nsrun changes /
  // commit / discard, and what the home was ("ro", "cow", "rw",
  // "cache-redirect" on the Landlock rung). Empty: not in the report.
  struct Layers {
    std::string run_id;
    std::string run_layer;        // its upper directory
    std::string home;
    std::string home_layer;       // its upper directory, or the redirect's directory
    std::vector<std::string> redirected;  // cache-redirect: the variables set
  } layers;
  std::optional<std::vector<egress::Decision>> network;  // --network proxy
};

// The report's "schema_version" (docs/report.schema.json).
inline constexpr int report_schema_version = 1;

json::Value to_json(const LaunchReport& report);

// Where the report goes, opened before the command starts and held until it
// is written. A path is opened with the caller's privileges, so it must not
// become a way for the command to write elsewhere: the command could plant a
// symlink, a hard link or a FIFO at the name while it runs
// (`ln -sf /etc/important r.json`). The file is therefore opened before
// clone, without following a symlink in its last component, and the report
// is written through that descriptor; the parent directory is resolved once
// and everything after goes through its fd.
class ReportSink {
 public:
  // Nothing to write to: write() does nothing.
  ReportSink() = default;

  // Opens (creating it, mode 0644 less the umask, when missing) the file
  // `--report` names and checks `--report-fd`. Refused, as a usage error:
  // a symlink, anything not a regular file, a file with other hard links
  // (truncating it would change them too), a descriptor not open for writing.
  static Result<ReportSink> open(const Policy& policy);
  // The same, for a report written after the command while other commands
  // of its sandbox may still run (a session's exec): a file in a directory
  // those may write (`policy`'s writable roots and binds) is refused too.
  static Result<ReportSink> open_outside_writable(const Policy& policy);

  // Writes the report. When the name no longer refers to the file opened
  // before the run (the command removed or replaced it), the report is put
  // in place with a rename of a fresh file, which replaces the entry without
  // writing through it; the file held from before is left as it is.
  Result<void> write(const LaunchReport& report);
  // A report made elsewhere by nsrun (a session's, to_json() there).
  Result<void> write(const json::Value& report);

  bool empty() const { return !file_ && fd_ < 0; }
  // The file opened for a path, taken out (for --network-log).
  Fd take_file() { return std::move(file_); }

 private:
  static Result<ReportSink> open(const Policy& policy, bool outside_writable);
  Result<void> write_file(std::string_view text);
  Result<void> replace_entry(std::string_view text);

  std::string path_;  // as given, for messages
  Fd dir_;            // the parent directory, O_PATH
  std::string name_;  // the last component
  Fd file_;           // the report file, opened before the run
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int fd_ = -1;       // --report-fd, not owned
};

// --network-log FILE: opened under the same rules as --report (no symlink,
// a regular file with one link, the parent resolved once) and emptied.
Result<Fd> open_network_log(const Policy& policy);

// Splits a report path into its parent directory and its last component;
// fails for a path that names no file ("", "dir/", ".", "..").
Result<std::pair<std::string, std::string>> split_report_path(std::string_view path);

}  // namespace nsrun
