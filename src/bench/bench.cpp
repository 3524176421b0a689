#include "bench/bench.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <fmt/core.h>

#include "bench/numbers.hpp"
#include "policy/json.hpp"

namespace nsrun::bench {

namespace {

bool succeeded(pid_t expected, pid_t got, const Launch& l) {
  return expected > 0 && got == expected && WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0;
}

void record(RowResult& r, bool ok, uint64_t wall, const Launch& l) {
  if (!ok) {
    r.wall_ns.push_back(0);
    ++r.failures;
    return;
  }
  r.wall_ns.push_back(std::max<uint64_t>(wall, 1));
  r.cpu_ns.push_back(l.cpu_ns);
  r.peak_rss_kib = std::max(r.peak_rss_kib, l.maxrss_kib);
  if (r.row.nsrun && !l.report.empty()) add_phases(r.phases, l.report);
}

void throughput(RowResult& r, std::size_t launches, std::size_t k, Launcher& launcher, const Clock& clock) {
  const uint64_t t0 = clock();
  std::size_t spawned = 0, done = 0, in_flight = 0;
  while (done < launches) {
    while (in_flight < k && spawned < launches) {
      ++spawned;
      if (launcher.spawn(r.row) > 0) ++in_flight;
      else ++done;  // a failed spawn still ends that launch
    }
    if (in_flight == 0) continue;
    auto [pid, l] = launcher.wait_any();
    if (pid < 0) break;
    --in_flight;
    ++done;
  }
  r.per_second = per_second(done, clock() - t0);
}

std::string us(uint64_t ns) { return fixed(static_cast<double>(ns) / 1000.0, 1); }

std::string ms(uint64_t ns) { return fixed(static_cast<double>(ns) / 1e6, 2); }

std::string json_string(std::string_view s) { return json::quote(s); }

std::string json_number(std::optional<double> v) { return v ? fixed(*v, 3) : "null"; }

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

uint64_t phase_median(const PhaseSamples& p) {
  std::vector<uint64_t> v = p.micros;
  if (v.empty()) return 0;
  return summarize(std::move(v)).p50;
}

using FloorRatios = std::vector<std::pair<std::string, double>> RowResult::*;
using Figure = Summary RowResult::*;

std::string in_ms(uint64_t ns) { return ms(ns) + " ms"; }

std::string in_us(uint64_t ns) { return us(ns) + " µs"; }

// One "against the floors" section: a line per row that has ratios in
// `ratios` (with `own`, every row with a `figure`, which it shows first),
// then for each floor the difference of the two p50s of `figure`, in
// `unit`, and the paired ratio.
void above_floors(std::string& out, const Results& res, std::size_t w, FloorRatios ratios, Figure figure,
                  std::string (*unit)(uint64_t), bool own, std::string_view title) {
  auto shown = [&](const RowResult& r) { return own ? (r.*figure).n != 0 : !(r.*ratios).empty(); };
  if (std::none_of(res.rows.begin(), res.rows.end(), shown)) return;
  out += fmt::format("\n{}\n", title);
  for (const RowResult& r : res.rows) {
    if (!shown(r)) continue;
    out += fmt::format("{:<{}}", r.row.name, w);
    if (own) out += fmt::format("  {:>8}", unit((r.*figure).p50));
    for (const auto& [name, q] : r.*ratios) {
      const RowResult& f = *std::find_if(res.rows.begin(), res.rows.end(), [&](const RowResult& x) { return x.row.name == name; });
      const uint64_t a = (r.*figure).p50, b = (f.*figure).p50;
      out += fmt::format("  {}: {}{} {}x", name, a < b ? "-" : "+", unit(a < b ? b - a : a - b), fixed(q, 2));
    }
    out += '\n';
  }
}

const RowResult* measured(const Results& res, std::string_view name) {
  for (const RowResult& r : res.rows)
    if (r.row.name == name && r.row.available && r.latency.n != 0) return &r;
  return nullptr;
}

}  // namespace

void add_phases(std::vector<PhaseSamples>& phases, const std::string& report) {
  auto doc = json::parse(report);
  if (!doc || !doc->is_object()) return;
  const json::Value* list = doc->find("phases");
  if (list == nullptr || !list->is_array()) return;
  for (const json::Value& item : list->as_array()) {
    if (!item.is_object()) continue;
    const json::Value* name = item.find("name");
    const json::Value* micros = item.find("micros");
    if (name == nullptr || micros == nullptr || !name->is_string() || !micros->is_int()) continue;
    auto it = std::find_if(phases.begin(), phases.end(), [&](const PhaseSamples& p) { return p.name == name->as_string(); });
    if (it == phases.end()) it = phases.insert(phases.end(), PhaseSamples{name->as_string(), {}});
    it->micros.push_back(static_cast<uint64_t>(micros->as_int()));
  }
}

Results measure(std::vector<Row> rows, const Options& options, Launcher& launcher, const Clock& clock) {
  Results res;
  res.options = options;
  for (Row& row : rows) {
    if (row.available)
      if (auto why = launcher.check(row)) row.available = false, row.reason = *why;
    RowResult r;
    r.row = std::move(row);
    res.rows.push_back(std::move(r));
  }
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < res.rows.size(); ++i)
    if (res.rows[i].row.available) live.push_back(i);

  const std::size_t rounds = options.warmup + options.launches;
  for (std::size_t round = 0; round < rounds; ++round) {
    // A B C, then C B A: a drift that is linear in time costs every row the same.
    for (std::size_t k = 0; k < live.size(); ++k) {
      RowResult& r = res.rows[live[round % 2 == 0 ? k : live.size() - 1 - k]];
      const uint64_t t0 = clock();
      const pid_t pid = launcher.spawn(r.row);
      std::pair<pid_t, Launch> done{-1, Launch{}};
      if (pid > 0) done = launcher.wait_any();
      const uint64_t t1 = clock();
      if (pid > 0) done.second.cpu_ns += launcher.reap_left_behind();
      if (round < options.warmup) continue;
      record(r, succeeded(pid, done.first, done.second), t1 - t0, done.second);
    }
  }
  if (options.concurrency > 0)
    for (std::size_t i : live) throughput(res.rows[i], options.launches, options.concurrency, launcher, clock);
  compute(res);
  return res;
}

void compute(Results& res) {
  res.baseline.reset();
  res.bare.reset();
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    RowResult& r = res.rows[i];
    std::vector<uint64_t> ok;
    for (uint64_t v : r.wall_ns)
      if (v != 0) ok.push_back(v);
    r.latency = summarize(std::move(ok));
    r.cpu_ns_mean = r.cpu_ns.empty() ? 0 : summarize(r.cpu_ns).mean;
    if (!r.row.available || r.latency.n == 0) continue;
    if (r.row.name == res.options.baseline) res.baseline = i;
    if (r.row.name == "bare") res.bare = i;
  }
  // A bind row's cost per bind, launch by launch against the same launch
  // without the binds, which ran in the same round.
  for (RowResult& r : res.rows) {
    r.per_bind_ns.clear();
    r.per_bind = Summary{};
    const RowResult* plain = r.row.binds == 0 ? nullptr : measured(res, r.row.without_binds);
    if (plain == nullptr || !r.row.available || r.latency.n == 0) continue;
    std::vector<uint64_t> ok;
    for (std::size_t i = 0; i < std::min(r.wall_ns.size(), plain->wall_ns.size()); ++i) {
      const uint64_t a = r.wall_ns[i], b = plain->wall_ns[i];
      r.per_bind_ns.push_back(a != 0 && b != 0 && a > b ? std::max<uint64_t>((a - b) / r.row.binds, 1) : 0);
      if (r.per_bind_ns.back() != 0) ok.push_back(r.per_bind_ns.back());
    }
    r.per_bind = summarize(std::move(ok));
  }
  for (RowResult& r : res.rows) {
    r.ratio.reset();
    r.overhead_ratio.reset();
    r.floor_ratios.clear();
    r.sandbox_floor_ratios.clear();
    r.per_bind_floor_ratios.clear();
    if (!r.row.available || r.latency.n == 0) continue;
    if (!r.row.floor)
      for (const RowResult& f : res.rows)
        if (f.row.floor && f.row.available && f.latency.n != 0)
          if (auto q = paired_ratio(r.wall_ns, f.wall_ns)) r.floor_ratios.emplace_back(f.row.name, *q);
    if (r.row.floor_of.empty() && !r.row.promise.empty())
      for (const RowResult& f : res.rows) {
        if (f.row.floor_of != r.row.promise || f.row.binds != r.row.binds || !f.row.available || f.latency.n == 0)
          continue;
        if (auto q = paired_ratio(r.wall_ns, f.wall_ns)) r.sandbox_floor_ratios.emplace_back(f.row.name, *q);
        if (r.per_bind.n != 0 && f.per_bind.n != 0)
          if (auto q = paired_ratio(r.per_bind_ns, f.per_bind_ns)) r.per_bind_floor_ratios.emplace_back(f.row.name, *q);
      }
    if (res.baseline) r.ratio = paired_ratio(r.wall_ns, res.rows[*res.baseline].wall_ns);
    if (res.baseline && res.bare && &r != &res.rows[*res.bare]) {
      const double bare = static_cast<double>(res.rows[*res.bare].latency.p50);
      const double base = static_cast<double>(res.rows[*res.baseline].latency.p50) - bare;
      if (base > 0) r.overhead_ratio = (static_cast<double>(r.latency.p50) - bare) / base;
    }
  }
}

std::string format_table(const Results& res) {
  const Options& o = res.options;
  std::string out = fmt::format("nsrun bench: payload {}; {} launches per row after {} warm-up rounds, interleaved\n",
                                res.payload, o.launches, o.warmup);
  out += fmt::format("baseline for ratios: {}\n\n",
                     res.baseline ? res.rows[*res.baseline].row.name : std::string("none (not measured)"));
  std::size_t w = 4;
  for (const RowResult& r : res.rows) w = std::max(w, r.row.name.size());
  out += fmt::format("{:<{}}  {:>7} {:>7} {:>7} {:>7} {:>7}  {:>8} {:>8}  {:>7} {:>9}{}\n", "row", w, "min", "p50",
                     "p90", "p99", "max", "cpu", "peakRSS", "ratio", "overhead", o.concurrency ? "   launch/s" : "");
  out += fmt::format("{:<{}}  {:>7} {:>7} {:>7} {:>7} {:>7}  {:>8} {:>8}  {:>7} {:>9}{}\n", "", w, "ms", "ms", "ms",
                     "ms", "ms", "ms", "KiB", "paired", "ratio", o.concurrency ? fmt::format("  K={:>5}", o.concurrency) : "");
  for (const RowResult& r : res.rows) {
    if (!r.row.available) {
      out += fmt::format("{:<{}}  unavailable ({})\n", r.row.name, w, r.row.reason);
      continue;
    }
    if (r.latency.n == 0) {
      out += fmt::format("{:<{}}  every launch failed\n", r.row.name, w);
      continue;
    }
    const Summary& s = r.latency;
    auto ratio = [](const std::optional<double>& v) { return v ? fixed(*v, 2) + "x" : std::string("-"); };
    out += fmt::format("{:<{}}  {:>7} {:>7} {:>7} {:>7} {:>7}  {:>8} {:>8}  {:>7} {:>9}{}{}\n", r.row.name, w, ms(s.min),
                       ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max), ms(r.cpu_ns_mean), r.peak_rss_kib, ratio(r.ratio),
                       ratio(r.overhead_ratio), o.concurrency ? fmt::format("  {:>9}", fixed(r.per_second, 0)) : "",
                       r.failures ? fmt::format("  ({} failed)", r.failures) : "");
  }
  out +=
      "\nratio: median over launches i of row[i] / baseline[i]; overhead ratio: (p50 - bare p50) / (baseline p50 - bare p50);\n"
      "cpu: mean user+system time of the launch and every descendant (those it left unreaped too); peakRSS: largest "
      "ru_maxrss of a launch.\n";

  // How far above the floor: a static program that only execs the payload;
  // then above the sandbox's floor: the kernel work of the same promise.
  above_floors(out, res, w, &RowResult::floor_ratios, &RowResult::latency, in_ms, false,
               "above the floor (a static program that only execs the payload): p50 - floor p50, paired ratio");
  above_floors(out, res, w, &RowResult::sandbox_floor_ratios, &RowResult::latency, in_ms, false,
               "above the sandbox's floor (the kernel work of the same promise, no policy: nsrun-floor-sandbox):\n"
               "p50 - floor p50, paired ratio");
  above_floors(out, res, w, &RowResult::per_bind_floor_ratios, &RowResult::per_bind, in_us, true,
               "per read-only bind: (launch i - launch i of the same row without the binds) / binds, p50;\n"
               "against the sandbox's floor with the same binds: p50 - floor p50, paired ratio");

  // Phases: one column per nsrun row, one line per phase, medians in µs.
  std::vector<const RowResult*> ns;
  std::vector<std::string> names;
  for (const RowResult& r : res.rows) {
    if (!r.row.nsrun || r.phases.empty()) continue;
    ns.push_back(&r);
    for (const PhaseSamples& p : r.phases)
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  if (ns.empty()) return out;
  out += "\nnsrun phases (median µs, from --report-fd):\n";
  std::size_t cw = 8;
  auto short_name = [](const std::string& n) { return n.starts_with("nsrun ") ? n.substr(6) : n; };
  for (const RowResult* r : ns) cw = std::max(cw, short_name(r->row.name).size());
  out += fmt::format("{:<12}", "phase");
  for (const RowResult* r : ns) out += fmt::format(" {:>{}}", short_name(r->row.name), cw);
  out += '\n';
  for (const std::string& name : names) {
    out += fmt::format("{:<12}", name);
    for (const RowResult* r : ns) {
      auto it = std::find_if(r->phases.begin(), r->phases.end(), [&](const PhaseSamples& p) { return p.name == name; });
      out += fmt::format(" {:>{}}", it == r->phases.end() ? std::string("-") : std::to_string(phase_median(*it)), cw);
    }
    out += '\n';
  }
  return out;
}

std::string to_json(const Results& res) {
  const Options& o = res.options;
  std::string out = "{\n";
  out += fmt::format("  \"tool\": \"nsrun bench\",\n  \"version\": {},\n", json_string(NSRUN_VERSION));
  out += fmt::format("  \"payload\": {},\n", json_string(res.payload));
  out += fmt::format("  \"launches\": {},\n  \"warmup\": {},\n  \"concurrency\": {},\n", o.launches, o.warmup, o.concurrency);
  out += fmt::format("  \"baseline\": {},\n", res.baseline ? json_string(res.rows[*res.baseline].row.name) : "null");
  out += "  \"rows\": [";
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    const RowResult& r = res.rows[i];
    out += i == 0 ? "\n    {" : ",\n    {";
    out += fmt::format("\"name\": {}, \"command\": [", json_string(r.row.name));
    for (std::size_t a = 0; a < r.row.argv.size(); ++a) out += (a ? ", " : "") + json_string(r.row.argv[a]);
    out += fmt::format("], \"nsrun\": {}, \"floor\": {}, \"floor_of\": {}, \"promise\": {}, \"available\": {}, \"reason\": {},\n",
                       r.row.nsrun, r.row.floor, r.row.floor_of.empty() ? "null" : json_string(r.row.floor_of),
                       r.row.promise.empty() ? "null" : json_string(r.row.promise), r.row.available,
                       r.row.available ? "null" : json_string(r.row.reason));
    const Summary& s = r.latency;
    out += fmt::format("     \"launches\": {}, \"failures\": {},\n", s.n, r.failures);
    out += fmt::format("     \"latency_us\": {{\"min\": {}, \"p50\": {}, \"p90\": {}, \"p99\": {}, \"max\": {}, \"mean\": {}}},\n",
                       us(s.min), us(s.p50), us(s.p90), us(s.p99), us(s.max), us(s.mean));
    out += fmt::format("     \"cpu_us_mean\": {}, \"peak_rss_kib\": {}, \"ratio\": {}, \"overhead_ratio\": {},\n",
                       us(r.cpu_ns_mean), r.peak_rss_kib, json_number(r.ratio), json_number(r.overhead_ratio));
    auto ratios = [&](std::string_view key, const std::vector<std::pair<std::string, double>>& list) {
      out += fmt::format("{}: {{", json_string(key));
      for (std::size_t f = 0; f < list.size(); ++f)
        out += fmt::format("{}{}: {}", f ? ", " : "", json_string(list[f].first), json_number(list[f].second));
      out += "}";
    };
    out += "     ";
    ratios("floor_ratios", r.floor_ratios);
    out += ", ";
    ratios("sandbox_floor_ratios", r.sandbox_floor_ratios);
    out += ",\n";
    out += fmt::format("     \"binds\": {}, \"without_binds\": {}, \"per_bind_us\": ", r.row.binds,
                       r.row.binds ? json_string(r.row.without_binds) : "null");
    out += r.per_bind.n == 0 ? std::string("null")
                             : fmt::format("{{\"n\": {}, \"min\": {}, \"p50\": {}, \"max\": {}, \"mean\": {}}}",
                                           r.per_bind.n, us(r.per_bind.min), us(r.per_bind.p50), us(r.per_bind.max),
                                           us(r.per_bind.mean));
    out += ", ";
    ratios("per_bind_floor_ratios", r.per_bind_floor_ratios);
    out += ",\n";
    out += fmt::format("     \"launches_per_s\": {},\n",
                       o.concurrency && r.row.available ? json_number(r.per_second) : "null");
    out += "     \"phases_us\": [";
    for (std::size_t p = 0; p < r.phases.size(); ++p) {
      const PhaseSamples& ph = r.phases[p];
      Summary ps = summarize(ph.micros);
      out += fmt::format("{}{{\"name\": {}, \"p50\": {}, \"mean\": {}}}", p ? ", " : "", json_string(ph.name), ps.p50, ps.mean);
    }
    out += "],\n     \"samples_us\": [";
    for (std::size_t k = 0; k < r.wall_ns.size(); ++k) out += (k ? ", " : "") + us(r.wall_ns[k]);
    out += "]}";
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string to_svg(const Results& res) {
  // The layout is in whole pixels; only positions of data have fractions.
  constexpr int W = 940, H = 500, left = 70, right = 330, top = 40, bottom = 60;
  constexpr int pw = W - left - right, ph = H - top - bottom;
  static constexpr const char* colours[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                            "#e6ab02", "#a6761d", "#666666", "#1f78b4", "#b2182b"};
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const RowResult& r : res.rows)
    if (r.row.available && r.latency.n) lo = std::min(lo, r.latency.min), hi = std::max(hi, r.latency.max);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      W, H);
  out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\">nsrun bench: launch latency CDF ({} launches per row, payload {})</text>\n",
                     left, res.options.launches, xml_escape(res.payload));
  if (hi == 0) return out + "<text x=\"70\" y=\"80\">no row was measured</text>\n</svg>\n";
  // Log scale on whole half decades around the data, so rows far apart stay readable.
  const int kmin = half_decades_floor(lo);
  const int kmax = std::max(half_decades_ceil(hi), kmin + 1);
  const double lmin = kmin / 2.0, lmax = kmax / 2.0;
  auto x_of = [&](double ms_) { return left + (approx_log10(ms_) - lmin) / (lmax - lmin) * pw; };
  auto y_of = [&](double f) { return top + (1.0 - f) * ph; };
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", left, top, pw, ph);
  int first_decade = kmin / 2;
  if (2 * first_decade > kmin) --first_decade;  // round down, also below 1 ms
  for (int d = first_decade; 2 * d <= kmax; ++d)
    for (int m : {1, 2, 5}) {
      double p = 1;
      for (int i = 0; i < std::abs(d); ++i) p *= 10;
      const double v = d >= 0 ? m * p : m / p;
      const double lv = approx_log10(v);
      if (lv < lmin - 1e-9 || lv > lmax + 1e-9) continue;
      const std::string x = fixed(x_of(v), 1);
      out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#ddd\"/>\n", x, top, top + ph);
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x, top + ph + 16, tick_label(m, d));
    }
  static constexpr std::pair<double, const char*> fractions[] = {
      {0.0, "0"}, {0.25, "0.25"}, {0.5, "0.5"}, {0.75, "0.75"}, {1.0, "1"}};
  for (const auto& [f, label] : fractions) {
    const std::string y = fixed(y_of(f), 1);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"{}/>\n", left, y, left + pw, y,
                       f == 0.5 ? " stroke-dasharray=\"4 3\" stroke-width=\"1.5\"" : "");
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6, fixed(y_of(f) + 4, 1), label);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">launch latency, ms (log scale)</text>\n",
                     left + pw / 2, H - 18);
  out += fmt::format("<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">fraction of launches</text>\n",
                     top + ph / 2);
  int shown = 0;
  for (const RowResult& r : res.rows) {
    if (!r.row.available || r.latency.n == 0) continue;
    const char* colour = colours[static_cast<std::size_t>(shown) % std::size(colours)];
    std::vector<uint64_t> v;
    for (uint64_t s : r.wall_ns)
      if (s) v.push_back(s);
    std::sort(v.begin(), v.end());
    std::string pts = fmt::format("{},{}", fixed(x_of(static_cast<double>(v.front()) / 1e6), 1), fixed(y_of(0), 1));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string x = fixed(x_of(static_cast<double>(v[i]) / 1e6), 1);
      pts += fmt::format(" {0},{1} {0},{2}", x, fixed(y_of(static_cast<double>(i) / v.size()), 1),
                         fixed(y_of(static_cast<double>(i + 1) / v.size()), 1));
    }
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", colour, pts);
    const int ly = top + 10 + 20 * shown;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/>\n", left + pw + 15,
                       ly, left + pw + 40, colour);
    out += fmt::format("<text x=\"{}\" y=\"{}\">{} (p50 {} ms)</text>\n", left + pw + 46, ly + 4, xml_escape(r.row.name),
                       ms(r.latency.p50));
    ++shown;
  }
  return out + "</svg>\n";
}

}  // namespace nsrun::bench
