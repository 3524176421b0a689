// `nsrun bench`: startup latency of sandboxes, measured side by side.
//
// Rows are command lines that run the same no-op payload: bare, under nsrun
// in several profiles, under peers (bwrap, unshare, any --vs command line).
// They run interleaved, one launch of each per round, with the order
// reversed every other round (A B C C B A ...), so that drift of the machine
// falls on every row alike and launch i of two rows can be paired.
//
// The measuring loop takes its clock and its launcher as parameters: the
// real ones spawn processes, the unit tests' fake ones advance a counter.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/stats.hpp"

namespace nsrun::bench {

struct Row {
  std::string name;               // shown in the table, the JSON and the plot
  std::vector<std::string> argv;  // the whole command line, payload included
  bool nsrun = false;             // an nsrun launch: it writes --report-fd 3
  bool floor = false;             // a floor row: a static program that only execs the payload
  // A floor-sandbox row (tools/nsrun-floor-sandbox.c: the kernel work of a
  // launch with no policy logic): the promise it is the floor of,
  // "workspace-write" or "network-none"; empty for every other row.
  std::string floor_of;
  // The promise this row keeps: it is paired with the floor-sandbox rows of
  // that promise. Empty: with none.
  std::string promise;
  // A row with `binds` extra read-only binds (`--binds N`): N, and the
  // name of the same launch without them. Its cost per bind is launch i's
  // difference to launch i of that row, over N; a bind row of nsrun is
  // paired with the floor-sandbox bind rows of its promise and its N.
  std::size_t binds = 0;
  std::string without_binds;
  bool available = true;          // false: shown with `reason`, not measured
  std::string reason;
};

// What one finished launch left behind.
struct Launch {
  int status = 0;            // as from wait4
  uint64_t cpu_ns = 0;       // user + system time of the launch and its waited-for children
  long maxrss_kib = 0;       // ru_maxrss of the same
  std::string report;        // nsrun rows: the --report-fd JSON line
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // One trial launch with stderr kept: nullopt when it exited 0, otherwise
  // why the row cannot be measured (the first line the command printed).
  virtual std::optional<std::string> check(const Row& row) = 0;
  // Spawns `row` and returns its pid; launches run with stdin, stdout and
  // stderr on /dev/null.
  virtual pid_t spawn(const Row& row) = 0;
  // Waits for any spawned launch; -1 when none is left.
  virtual std::pair<pid_t, Launch> wait_any() = 0;
  // After a launch of the serial pass was waited for: the CPU time of its
  // descendants it did not wait for itself (bwrap exits without reaping
  // its sandbox's PID 1, which built the sandbox and reaped the payload),
  // waited for now. Without this their time reached no rusage the bench
  // sees, and such a row's cpu column left most of its work out.
  virtual uint64_t reap_left_behind() { return 0; }
};

using Clock = std::function<uint64_t()>;  // monotonic nanoseconds

struct Options {
  std::size_t launches = 200;     // measured launches per row
  std::size_t warmup = 10;        // unmeasured rounds first
  std::size_t concurrency = 0;    // 0: no throughput pass; K: K launches in flight
  std::string baseline;           // row name the ratios are against
};

struct PhaseSamples {
  std::string name;
  std::vector<uint64_t> micros;
};

struct RowResult {
  Row row;
  // Per measured round, paired across rows; 0 marks a launch that failed.
  std::vector<uint64_t> wall_ns;
  std::vector<uint64_t> cpu_ns;      // per successful launch
  std::size_t failures = 0;
  Summary latency;                   // over the successful launches
  uint64_t cpu_ns_mean = 0;
  long peak_rss_kib = 0;             // the largest ru_maxrss seen
  std::optional<double> ratio;       // paired median against the baseline
  std::optional<double> overhead_ratio;  // (p50 - bare p50) / (baseline p50 - bare p50)
  std::vector<PhaseSamples> phases;  // nsrun rows: per phase, in launch order
  // Against each measured floor row, in row order: the floor's name and the
  // paired ratio row[i] / floor[i] (every row but the floors themselves).
  std::vector<std::pair<std::string, double>> floor_ratios;
  // The same against each measured floor-sandbox row of this row's promise
  // (and of its number of binds).
  std::vector<std::pair<std::string, double>> sandbox_floor_ratios;
  // Bind rows: per round, (wall_ns[i] - the row without binds' [i]) / binds;
  // 0 where either launch failed or the difference was not positive.
  std::vector<uint64_t> per_bind_ns;
  Summary per_bind;                  // over the non-zero ones
  // Against each floor-sandbox bind row paired with this one: the paired
  // ratio of the per-bind costs, per_bind_ns[i] / floor's per_bind_ns[i].
  std::vector<std::pair<std::string, double>> per_bind_floor_ratios;
  double per_second = 0;             // throughput pass, when asked
};

struct Results {
  Options options;
  std::string payload;
  std::vector<RowResult> rows;
  std::optional<std::size_t> baseline;  // index into rows
  std::optional<std::size_t> bare;      // the row named "bare", if any
};

// Runs the whole measurement: checks each row once, warms up, measures
// serially, then (with options.concurrency) the throughput pass, and
// computes every figure.
Results measure(std::vector<Row> rows, const Options& options, Launcher& launcher, const Clock& clock);

// Fills the figures of `results` from the raw samples (part of measure();
// separate so that tests can feed samples directly).
void compute(Results& results);

// Appends the phase durations of one --report-fd line to `phases`.
void add_phases(std::vector<PhaseSamples>& phases, const std::string& report);

std::string format_table(const Results& results);
std::string to_json(const Results& results);
std::string to_svg(const Results& results);

}  // namespace nsrun::bench
