#include "cli/bench.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <fmt/core.h>

#include "bench/spawn.hpp"
#include "layers/dirs.hpp"
#include "launch/spec.hpp"
#include "session/paths.hpp"
#include "sys/timeline.hpp"

namespace nsrun {

namespace {

constexpr std::string_view own_rows[] = {"bare",          "floor",    "floor-sandbox", "read-only", "workspace-write",
                                         "network-none",  "network-proxy", "landlock", "landlock-git", "limits", "cow", "home-cow", "session"};

// The C libraries tools/meson.build may build a floor for
// (tools/nsrun-floor-exec.c, one static binary each).
constexpr std::string_view floor_libcs[] = {"glibc", "musl"};

Result<std::size_t> parse_count(std::string_view option, const std::string& text, std::size_t min) {
  std::size_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < min)
    return fail(usage_error(option, fmt::format("'{}' is not a number >= {}", text, min)));
  return n;
}

// PATH lookup done before measuring, so that no row pays for it in the
// timing: the first of execvp's candidates that is an executable file.
std::optional<std::string> resolve(const std::string& name) {
  for (const std::string& candidate : exec_candidates(name, std::getenv("PATH"))) {
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return std::nullopt;
}

std::string self_path() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(n));
}

// Private scratch directories: the workspace of every row (empty, as a
// launch's scan of a writable root after the run costs per directory),
// and beside it, never inside, the directories the bind rows mount.
class Scratch {
 public:
  ~Scratch() {
    // The cow row's run layers (one per launch), through no symlink.
    if (!cow_.empty()) {
      Fd parent(::open(tmp_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (parent) (void)layers::remove_tree(parent.get(), cow_.substr(tmp_.size() + 1), cow_);
    }
    if (!repo_.empty()) {
      Fd parent(::open(tmp_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (parent) (void)layers::remove_tree(parent.get(), repo_.substr(tmp_.size() + 1), repo_);
    }
    for (std::size_t i = binds_; i-- > 0;) ::rmdir(bind_dir(i).c_str());
    if (!binds_dir_.empty()) ::rmdir(binds_dir_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  Result<void> create(std::size_t binds) {
    const char* tmp = std::getenv("TMPDIR");
    tmp_ = tmp && *tmp ? tmp : "/tmp";
    std::string templ = fmt::format("{}/nsrun-bench.XXXXXX", tmp_);
    if (::mkdtemp(templ.data()) == nullptr) return fail(sys_error("mkdtemp", templ));
    dir_ = templ;
    if (binds == 0) return {};
    std::string binds_templ = fmt::format("{}/nsrun-bench-binds.XXXXXX", tmp_);
    if (::mkdtemp(binds_templ.data()) == nullptr) return fail(sys_error("mkdtemp", binds_templ));
    binds_dir_ = binds_templ;
    for (; binds_ < binds; ++binds_)
      if (::mkdir(bind_dir(binds_).c_str(), 0755) != 0) return fail(sys_error("mkdir", bind_dir(binds_)));
    return {};
  }
  const std::string& dir() const { return dir_; }
  // The cow row's --cow-dir: beside the workspace, never inside it.
  Result<std::string> cow_dir() {
    if (!cow_.empty()) return cow_;
    std::string templ = fmt::format("{}/nsrun-bench-cow.XXXXXX", tmp_);
    if (::mkdtemp(templ.data()) == nullptr) return fail(sys_error("mkdtemp", templ));
    cow_ = templ;
    return cow_;
  }
  // The landlock-git row's workspace: the .git a fresh `git init` (git
  // 2.39) makes, in shape and size: config, HEAD, info/exclude and the
  // thirteen sample hooks (about 24 KiB). Made here, without git, so the
  // row does not depend on it.
  Result<std::string> repo_dir() {
    if (!repo_.empty()) return repo_;
    std::string templ = fmt::format("{}/nsrun-bench-repo.XXXXXX", tmp_);
    if (::mkdtemp(templ.data()) == nullptr) return fail(sys_error("mkdtemp", templ));
    repo_ = templ;
    static constexpr std::pair<std::string_view, std::size_t> hooks[] = {
        {"applypatch-msg", 478}, {"commit-msg", 896},        {"fsmonitor-watchman", 4726}, {"post-update", 189},
        {"pre-applypatch", 424}, {"pre-commit", 1643},       {"pre-merge-commit", 416},    {"pre-push", 1374},
        {"pre-rebase", 4898},    {"pre-receive", 544},       {"prepare-commit-msg", 1492}, {"push-to-checkout", 2783},
        {"update", 3650}};
    for (const char* d : {"/.git", "/.git/hooks", "/.git/info", "/.git/objects", "/.git/refs"})
      if (::mkdir((repo_ + d).c_str(), 0755) != 0) return fail(sys_error("mkdir", repo_ + d));
    auto put = [&](const std::string& rel, std::string text, mode_t mode) -> Result<void> {
      Fd f(::open((repo_ + rel).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
      if (!f || ::write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return fail(sys_error("write", repo_ + rel));
      return {};
    };
    if (auto r = put("/.git/HEAD", "ref: refs/heads/main\n", 0644); !r) return fail(r.error());
    if (auto r = put("/.git/config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
                                     "\tlogallrefupdates = true\n", 0644); !r)
      return fail(r.error());
    if (auto r = put("/.git/info/exclude", std::string(240, '#'), 0644); !r) return fail(r.error());
    for (const auto& [name, size] : hooks)
      if (auto r = put(fmt::format("/.git/hooks/{}.sample", name), std::string(size, '#'), 0755); !r)
        return fail(r.error());
    return repo_;
  }
  std::string bind_dir(std::size_t i) const { return fmt::format("{}/{}", binds_dir_, i); }

 private:
  std::string dir_;
  std::string binds_dir_;
  std::string tmp_;
  std::string cow_;
  std::string repo_;
  std::size_t binds_ = 0;
};

bench::Row nsrun_row(const BenchArgs& a, const std::string& ws, std::string name, std::string_view mode,
                     std::vector<std::string> extra) {
  bench::Row r;
  r.name = std::move(name);
  r.nsrun = true;
  r.argv = {a.nsrun, "--mode", std::string(mode), "--workspace", ws, "--report-fd", "3"};
  // Paired with the floor-sandbox rows: every namespace-rung row of this
  // mode keeps at least workspace-write's promise (the Landlock rung builds
  // none of that sandbox).
  if (mode == "workspace-write" && std::find(extra.begin(), extra.end(), "landlock") == extra.end())
    r.promise = "workspace-write";
  // Every row but home-cow keeps the home read-only (the default before
  // the copy-on-write home): its figures stay comparable with
  // earlier runs and measure its own cost, not the home layer's.
  if (std::find(extra.begin(), extra.end(), "--home") == extra.end()) r.argv.insert(r.argv.end(), {"--home", "ro"});
  r.argv.insert(r.argv.end(), extra.begin(), extra.end());
  r.argv.push_back("--");
  r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
  return r;
}

bench::Row peer_row(const BenchArgs& a, const std::string& ws, const std::string& spec, std::vector<std::string>& taken) {
  bench::Row r;
  std::vector<std::string> words;
  if (spec == "bwrap") {
    r.name = "bwrap";
    words = {"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", ws, ws,
             "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"};
    r.promise = "workspace-write";
  } else if (spec == "unshare") {
    r.name = "unshare";
    words = {"unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount", "--ipc", "--uts", "--"};
  } else {
    words = split_command_line(spec).value_or(std::vector<std::string>{});
    if (words.empty()) {
      r.name = spec;
      r.available = false;
      r.reason = "empty or badly quoted command line";
      return r;
    }
    r.name = words.front().substr(words.front().rfind('/') + 1);
  }
  // Two peers of the same program get distinct names: bwrap, bwrap#2...
  const std::string base = r.name;
  for (int k = 2; std::find(taken.begin(), taken.end(), r.name) != taken.end(); ++k) r.name = fmt::format("{}#{}", base, k);
  taken.push_back(r.name);
  bool placed = false;
  for (const std::string& w : words) {
    if (w == "{}") {
      r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
      placed = true;
    } else {
      r.argv.push_back(w == "{ws}" ? ws : w);
    }
  }
  if (!placed) r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
  if (auto path = resolve(r.argv.front())) {
    r.argv.front() = *path;
  } else {
    r.available = false;
    r.reason = fmt::format("{} not found", r.argv.front());
  }
  return r;
}

// A floor program (tools/meson.build) beside this binary or in tools/ below
// its directory (a build tree), else beside the nsrun measured.
std::optional<std::string> find_floor(const BenchArgs& a, const std::string& self, const std::string& file) {
  for (const std::string& bin : {self, a.nsrun}) {
    const std::size_t slash = bin.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string dir = bin.substr(0, slash + 1);
    for (const std::string& c : {dir + file, dir + "tools/" + file}) {
      // Never run setuid or setgid (someone's chmod u+s beside an --nsrun
      // the caller names): the floors are the caller's own programs, and
      // the sandbox's floor binds the directory it is given writable
      // with the caller's id mapped in.
      struct stat st{};
      if (::stat(c.c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) != 0) continue;
      if (::access(c.c_str(), X_OK) == 0) return c;
    }
  }
  return std::nullopt;
}

std::string not_built(const std::string& file, std::string_view libc) {
  return fmt::format("{} not built beside nsrun (tools/meson.build{})", file,
                     libc == "musl" ? "; needs musl-gcc, Debian musl-tools" : "");
}

// The floor row for `libc`: nsrun-floor-<libc>, which only execs the payload.
bench::Row floor_row(const BenchArgs& a, const std::string& self, std::string_view libc) {
  bench::Row r;
  r.name = fmt::format("floor {}", libc);
  r.floor = true;
  const std::string file = fmt::format("nsrun-floor-{}", libc);
  if (auto path = find_floor(a, self, file)) {
    r.argv = {*path};
    r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
  } else {
    r.available = false;
    r.reason = not_built(file, libc);
  }
  return r;
}

// The sandbox's floor for `libc`: nsrun-floor-sandbox-
// <libc>, the kernel work of workspace-write's launch (with `net`, of
// network-none's) and no policy logic, on the same workspace; with `binds`,
// each bound read-only over itself as nsrun's --ro binds them.
bench::Row floor_sandbox_row(const BenchArgs& a, const std::string& self, std::string_view libc, const std::string& ws,
                             bool net, const std::vector<std::string>& binds = {}) {
  bench::Row r;
  r.name = fmt::format("floor-sandbox{} {}", net ? "-net" : "", libc);
  r.floor_of = net ? "network-none" : "workspace-write";
  if (!binds.empty()) {
    r.without_binds = r.name;
    r.name += fmt::format(" +{} ro binds", binds.size());
    r.binds = binds.size();
  }
  const std::string file = fmt::format("nsrun-floor-sandbox-{}", libc);
  auto path = find_floor(a, self, file);
  if (!path) {
    r.available = false;
    r.reason = not_built(file, libc);
    return r;
  }
  // The floor resolves no path and follows no symlink: it gets the
  // workspace as nsrun ends up binding it.
  char real[PATH_MAX];
  r.argv = {*path};
  if (net) r.argv.push_back("--net");
  for (const std::string& dir : binds) r.argv.insert(r.argv.end(), {"--ro", dir});
  r.argv.push_back(::realpath(ws.c_str(), real) ? std::string(real) : ws);
  r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
  return r;
}

// Runs `argv` with stdio on /dev/null and waits: its exit status.
int run_quietly(const std::vector<std::string>& argv) {
  const pid_t pid = ::fork();
  if (pid < 0) return 125;
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> c;
    for (const auto& w : argv) c.push_back(const_cast<char*>(w.c_str()));
    c.push_back(nullptr);
    ::execv(c[0], c.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The session row: a session of the bench's own, started before the
// measurement (as workspace-write's launch, --home ro) and stopped after;
// each launch is one `nsrun exec` of the payload in it.
class BenchSession {
 public:
  BenchSession(const BenchArgs& a, const std::string& ws)
      : nsrun_(a.nsrun), name_(fmt::format("nsrun-bench-{}", ::getpid())) {
    started_ = run_quietly({nsrun_, "session", "start", name_, "--mode", "workspace-write", "--workspace", ws,
                            "--home", "ro"}) == 0;
  }
  ~BenchSession() {
    if (started_) (void)run_quietly({nsrun_, "session", "stop", name_});
  }
  // The same request from a client that is not nsrun
  // (tools/nsrun-session-request.c).
  bench::Row socket_row(const BenchArgs& a, const std::string& self) const {
    bench::Row r;
    r.name = "nsrun session socket";
    r.promise = "workspace-write";
    auto client = find_floor(a, self, "nsrun-session-request");
    if (!client) {
      r.available = false;
      r.reason = "tools/nsrun-session-request was not built (no C compiler)";
      return r;
    }
    r.argv = {*client, session::places().sockets + "/" + name_ + ".sock"};
    r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
    if (!started_) {
      r.available = false;
      r.reason = "nsrun session start failed";
    }
    return r;
  }
  bench::Row row(const BenchArgs& a) const {
    bench::Row r;
    r.name = "nsrun session exec";
    r.argv = {nsrun_, "exec", name_, "--"};
    r.argv.insert(r.argv.end(), a.payload.begin(), a.payload.end());
    r.promise = "workspace-write";
    if (!started_) {
      r.available = false;
      r.reason = "nsrun session start failed";
    }
    return r;
  }

 private:
  std::string nsrun_;
  std::string name_;
  bool started_ = false;
};

bool wanted(const BenchArgs& a, std::string_view row) {
  return a.rows.empty() || std::find(a.rows.begin(), a.rows.end(), row) != a.rows.end();
}

Result<void> write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "we");
  if (f == nullptr) return fail(sys_error("open", path));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return fail(sys_error("write", path));
  return {};
}

}  // namespace

Result<std::vector<std::string>> split_command_line(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) word += text[++i];
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 == text.size()) return fail(usage_error("--vs", "a trailing backslash"));
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word)), word.clear(), in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return fail(usage_error("--vs", fmt::format("unterminated {} quote", quote)));
  if (in_word) out.push_back(std::move(word));
  return out;
}

Result<BenchArgs> parse_bench(std::span<const std::string> args) {
  BenchArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); eq != std::string::npos && arg.starts_with("--")) {
      inline_value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    auto value = [&]() -> Result<std::string> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) return fail(usage_error(arg, "needs a value"));
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      a.help = true;
      return a;
    }
    auto v = arg.starts_with("-") ? value() : Result<std::string>(fail(usage_error(arg, "unexpected argument (see nsrun bench --help)")));
    if (!v) return fail(v.error());
    if (arg == "--launches" || arg == "-n") {
      auto n = parse_count(arg, *v, 1);
      if (!n) return fail(n.error());
      a.options.launches = *n;
    } else if (arg == "--warmup") {
      auto n = parse_count(arg, *v, 0);
      if (!n) return fail(n.error());
      a.options.warmup = *n;
    } else if (arg == "--concurrency") {
      auto n = parse_count(arg, *v, 1);
      if (!n) return fail(n.error());
      a.options.concurrency = *n;
    } else if (arg == "--binds") {
      auto n = parse_count(arg, *v, 0);
      if (!n) return fail(n.error());
      a.binds = *n;
    } else if (arg == "--vs") {
      if (v->empty()) return fail(usage_error(arg, "an empty command line"));
      a.peers.push_back(*v);
    } else if (arg == "--baseline") {
      a.options.baseline = *v;
      a.baseline_given = true;
    } else if (arg == "--rows") {
      std::string_view rest = *v;
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        std::string_view name = rest.substr(0, comma);
        if (std::find(std::begin(own_rows), std::end(own_rows), name) == std::end(own_rows))
          return fail(usage_error(arg, fmt::format("unknown row '{}' (bare, floor, floor-sandbox, read-only, workspace-write, network-none, network-proxy, landlock, landlock-git, limits, cow, home-cow, session)", name)));
        a.rows.emplace_back(name);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else if (arg == "--payload") {
      auto words = split_command_line(*v);
      if (!words) return fail(words.error());
      if (words->empty()) return fail(usage_error(arg, "an empty command line"));
      a.payload = std::move(*words);
    } else if (arg == "--nsrun") {
      a.nsrun = *v;
    } else if (arg == "--json") {
      a.json_path = *v;
    } else if (arg == "--plot") {
      a.plot_path = *v;
    } else {
      return fail(usage_error(arg, "unknown option (see nsrun bench --help)"));
    }
  }
  return a;
}

std::string bench_usage() {
  return
      "usage: nsrun bench [OPTIONS]\n"
      "\n"
      "Measures sandbox start-up latency: spawn to exit of a no-op payload, bare,\n"
      "through the floor (a static program that only execs it, per C library),\n"
      "through the sandbox's floor (floor-sandbox: the kernel work of workspace-write's\n"
      "launch, and network-none's, with no policy logic, per C library),\n"
      "under nsrun (read-only, workspace-write, network-none, network-proxy,\n"
      "landlock, landlock-git, limits, cow: each with --home ro; home-cow: the default\n"
      "copy-on-write home; session: `nsrun exec` in a session started before) and under\n"
      "peers, interleaved launch by launch in one run.\n"
      "\n"
      "options:\n"
      "  --launches N, -n N     measured launches per row (default 200)\n"
      "  --warmup N             unmeasured rounds first (default 10)\n"
      "  --concurrency K        also measure launches/s with K launches in flight\n"
      "  --vs CMDLINE           a peer row; the payload is appended, or put where {}\n"
      "                         stands; {ws} is the bench's workspace. Built-ins:\n"
      "                         --vs bwrap (bwrap's equivalent of workspace-write),\n"
      "                         --vs unshare (util-linux unshare, namespaces only)\n"
      "  --baseline ROW         row the ratios are against (default: the first --vs\n"
      "                         peer, else bare, else the first row)\n"
      "  --rows LIST            nsrun's own rows to run, comma-separated, from\n"
      "                         bare,floor,floor-sandbox,read-only,workspace-write,network-none,\n"
      "                         network-proxy,landlock,landlock-git,limits,cow,home-cow,session\n"
      "  --binds N              add a workspace-write row with N extra read-only binds and\n"
      "                         the sandbox's floor with the same binds: the cost per bind\n"
      "                         of each (runs workspace-write and floor-sandbox too)\n"
      "  --payload CMDLINE      the payload (default /bin/true, else nsrun --bench-noop)\n"
      "  --nsrun PATH           the nsrun binary to measure (default: this one)\n"
      "  --json FILE            write every figure as JSON (see docs/bench.md)\n"
      "  --plot FILE.svg        write the latency CDFs as a self-contained SVG\n";
}

int bench_main(std::span<const std::string> args) {
  auto parsed = parse_bench(args);
  if (!parsed) {
    fmt::print(stderr, "nsrun: bench: {}\n", parsed.error().message());
    return 125;
  }
  BenchArgs a = std::move(*parsed);
  if (a.help) {
    fmt::print("{}", bench_usage());
    return 0;
  }
  const std::string self = self_path();
  if (a.nsrun.empty()) a.nsrun = self;
  if (a.nsrun.empty()) {
    fmt::print(stderr, "nsrun: bench: cannot find nsrun's own binary (no /proc/self/exe); give --nsrun PATH\n");
    return 125;
  }
  if (a.payload.empty()) {
    if (::access("/bin/true", X_OK) == 0) a.payload = {"/bin/true"};
    else a.payload = {self.empty() ? a.nsrun : self, std::string(bench_noop_flag)};
  } else if (auto p = resolve(a.payload.front())) {
    a.payload.front() = *p;
  } else {
    fmt::print(stderr, "nsrun: bench: --payload: {} not found\n", printable(a.payload.front()));
    return 125;
  }

  Scratch scratch;
  if (auto r = scratch.create(a.binds); !r) {
    fmt::print(stderr, "nsrun: bench: {}\n", r.error().message());
    return 125;
  }
  const std::string& ws = scratch.dir();

  std::vector<bench::Row> rows;
  if (wanted(a, "bare")) {
    bench::Row bare;
    bare.name = "bare";
    bare.argv = a.payload;
    rows.push_back(std::move(bare));
  }
  if (wanted(a, "floor"))
    for (std::string_view libc : floor_libcs) rows.push_back(floor_row(a, self, libc));
  // The bind rows' cost per bind is measured against these two rows
  // without binds: with --binds they run whatever --rows says.
  if (wanted(a, "floor-sandbox") || a.binds > 0)
    for (bool net : {false, true})
      if (!net || wanted(a, "floor-sandbox"))
        for (std::string_view libc : floor_libcs) rows.push_back(floor_sandbox_row(a, self, libc, ws, net));
  if (wanted(a, "read-only")) rows.push_back(nsrun_row(a, ws, "nsrun read-only", "read-only", {}));
  if (wanted(a, "workspace-write") || a.binds > 0)
    rows.push_back(nsrun_row(a, ws, "nsrun workspace-write", "workspace-write", {}));
  if (wanted(a, "network-none")) {
    rows.push_back(nsrun_row(a, ws, "nsrun network-none", "workspace-write", {"--network", "none"}));
    rows.back().promise = "network-none";
  }
  // The egress proxy's cost to a launch: its listeners, the socketpair and
  // the thread; nothing is connected.
  if (wanted(a, "network-proxy")) {
    rows.push_back(nsrun_row(a, ws, "nsrun network-proxy", "workspace-write",
                             {"--network", "proxy", "--allow-host", "example.invalid"}));
    rows.back().promise = "network-none";  // a network namespace of its own: network-none's floor at least
  }
  if (wanted(a, "landlock"))
    rows.push_back(nsrun_row(a, ws, "nsrun landlock", "workspace-write", {"--backend", "landlock"}));
  // The Landlock rung in a git repository: its protected paths' snapshot
  // before the command and their verification after (what this row costs
  // beyond the landlock row).
  if (wanted(a, "landlock-git")) {
    auto repo = scratch.repo_dir();
    if (!repo) {
      fmt::print(stderr, "nsrun: bench: {}\n", repo.error().message());
      return 125;
    }
    rows.push_back(nsrun_row(a, *repo, "nsrun landlock-git", "workspace-write", {"--backend", "landlock"}));
  }
  // A memory and a pids limit: the sandbox's cgroup made, PID 1 cloned
  // into it and the cgroup read and removed, where one is delegated.
  if (wanted(a, "limits"))
    rows.push_back(nsrun_row(a, ws, "nsrun limits", "workspace-write",
                             {"--limit-memory", "4G", "--limit-pids", "10000"}));
  // The copy-on-write workspace (a run directory, run.json, an
  // overlay over the workspace), against workspace-write's direct bind.
  if (wanted(a, "cow")) {
    auto cow = scratch.cow_dir();
    if (!cow) {
      fmt::print(stderr, "nsrun: bench: {}\n", cow.error().message());
      return 125;
    }
    rows.push_back(nsrun_row(a, ws, "nsrun cow", "workspace-write", {"--workspace-mode", "cow", "--cow-dir", *cow}));
  }
  // The default launch, a copy-on-write home (the overlay, the
  // layer's work directory made and removed); one named layer for every
  // bench run, so runs leave no layer per scratch workspace.
  if (wanted(a, "home-cow"))
    rows.push_back(nsrun_row(a, ws, "nsrun home-cow", "workspace-write", {"--home", "cow", "--home-layer", "nsrun-bench"}));
  std::optional<BenchSession> session;
  if (wanted(a, "session")) {
    session.emplace(a, ws);
    rows.push_back(session->row(a));
    rows.push_back(session->socket_row(a, self));
  }
  // N read-only binds, under nsrun and under the sandbox's floor, which
  // makes the same system calls for each: their costs per bind side by side.
  if (a.binds > 0) {
    std::vector<std::string> dirs, extra;
    for (std::size_t i = 0; i < a.binds; ++i) {
      dirs.push_back(scratch.bind_dir(i));
      extra.insert(extra.end(), {"--ro", dirs.back()});
    }
    rows.push_back(nsrun_row(a, ws, fmt::format("nsrun +{} ro binds", a.binds), "workspace-write", std::move(extra)));
    rows.back().binds = a.binds;
    rows.back().without_binds = "nsrun workspace-write";
    for (std::string_view libc : floor_libcs) rows.push_back(floor_sandbox_row(a, self, libc, ws, false, dirs));
  }
  std::vector<std::string> taken;
  for (const auto& r : rows) taken.push_back(r.name);
  std::optional<std::string> first_peer;
  for (const std::string& spec : a.peers) {
    rows.push_back(peer_row(a, ws, spec, taken));
    if (!first_peer) first_peer = rows.back().name;
  }
  // Without a peer the baseline is bare, or the first row when --rows
  // leaves bare out (`--rows workspace-write,cow` compares the two).
  if (!a.baseline_given) {
    a.options.baseline = first_peer.value_or("bare");
    if (!first_peer && !wanted(a, "bare") && !rows.empty()) a.options.baseline = rows.front().name;
  }
  if (std::none_of(rows.begin(), rows.end(), [&](const bench::Row& r) { return r.name == a.options.baseline; })) {
    fmt::print(stderr, "nsrun: bench: --baseline: no row named '{}'\n", printable(a.options.baseline));
    return 125;
  }

  auto launcher = bench::process_launcher();
  if (!launcher) {
    fmt::print(stderr, "nsrun: bench: {}\n", launcher.error().message());
    return 125;
  }
  bench::Results res = bench::measure(std::move(rows), a.options, **launcher, &Timeline::now_ns);
  res.payload.clear();
  for (const auto& w : a.payload) {
    if (!res.payload.empty()) res.payload += ' ';
    res.payload += w;
  }

  fmt::print("{}", bench::format_table(res));
  std::fflush(stdout);
  int code = 0;
  if (!a.json_path.empty())
    if (auto r = write_file(a.json_path, bench::to_json(res)); !r)
      fmt::print(stderr, "nsrun: bench: {}\n", r.error().message()), code = 125;
  if (!a.plot_path.empty())
    if (auto r = write_file(a.plot_path, bench::to_svg(res)); !r)
      fmt::print(stderr, "nsrun: bench: {}\n", r.error().message()), code = 125;
  return code;
}

}  // namespace nsrun
