// The fail-closed ladder on hostile hosts that the tests build around nsrun
// with `nsrun-probe outer` (a masked /proc, a /run/lakebox marker, user or
// PID namespaces refused, Landlock missing), as root and as the
// unprivileged user. Each case checks effects: host files, exit codes, the
// report, `nsrun probe --json`, and that a refused command never ran.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/json.hpp"

using namespace nsrun_test;
namespace json = nsrun::json;

namespace {

// The file of /proc that container runtimes mask and this kernel has.
constexpr const char* masked_file = "/proc/timer_list";

bool is_root() { return geteuid() == 0; }

// `nsrun-probe outer OUTER... -- nsrun ARGS...`
RunResult outer(const std::vector<std::string>& outer_opts, const std::vector<std::string>& args,
                RunOptions opts = {}) {
  std::vector<std::string> argv{probe_path(), "outer"};
  argv.insert(argv.end(), outer_opts.begin(), outer_opts.end());
  argv.push_back("--");
  argv.push_back(nsrun_path());
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, opts);
}

// An outer mount namespace with /proc masked: plain `unshare -m` for root,
// `unshare -Urm` for the unprivileged user.
std::vector<std::string> masked_proc(std::vector<std::string> more = {}) {
  std::vector<std::string> o{is_root() ? "--mountns" : "--userns", "--mask", masked_file};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

long landlock_abi() { return syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U); }

json::Value parse_json(const std::string& text) {
  auto v = json::parse(text);
  INFO(text);
  REQUIRE(v);
  REQUIRE(v->is_object());
  return *v;
}

std::string str(const json::Value& obj, std::string_view key) {
  const json::Value* v = obj.find(key);
  if (v == nullptr || !v->is_string()) return v && v->is_null() ? "null" : "?";
  return v->as_string();
}

const json::Value& rung(const json::Value& doc, std::string_view name) {
  const json::Value* rungs = doc.find("rungs");
  REQUIRE(rungs);
  for (const auto& r : rungs->as_array())
    if (str(r, "name") == name) return r;
  FAIL("no rung " << name << " in " << json::dump(doc));
  return doc;
}

// `nsrun probe --json` under OUTER, from `ws`: it exits `status` (when
// given) and names `reason` for the namespace rung. Returns the document.
json::Value probe_json(const std::vector<std::string>& outer_opts, const TempDir& ws, std::string_view reason,
                       std::optional<int> status = std::nullopt) {
  RunResult p = outer(outer_opts, {"probe", "--json"}, at(ws));
  INFO(p.out << p.err);
  if (status) CHECK(p.exit_code == *status);
  json::Value doc = parse_json(p.out);
  CHECK(str(rung(doc, "namespaces"), "reason") == reason);
  return doc;
}

RunOptions env_at(const TempDir& dir, std::vector<std::string> env = {}) {
  RunOptions o = at(dir);
  o.env = std::move(env);
  return o;
}

}  // namespace

TEST_CASE("masked /proc: the namespace rung refuses with the way out, the command never runs",
          "[ladder][proc]") {
  require_userns();
  TempDir ws("ws");
  std::string marker = ws / "marker";
  RunResult r = outer(masked_proc(), {"--backend", "namespaces", "--", probe_path(), "write", marker, "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find("proc-masked") != std::string::npos);
  CHECK(r.err.find("masked") != std::string::npos);
  CHECK(r.err.find("NSRUN_HOST_BACKEND") != std::string::npos);
  CHECK(r.err.find("--proc host-bind") != std::string::npos);
  CHECK_FALSE(file_exists(marker));

  SECTION("nsrun probe says proc-masked") {
    probe_json(masked_proc(), ws, "proc-masked");
  }
}

TEST_CASE("masked /proc, no host backend: auto runs the command on Landlock", "[ladder][proc][landlock]") {
  require_userns();
  require_landlock();
  TempDir ws("ws");
  TempDir out("report");
  std::string marker = ws / "marker";
  std::string report = out / "report.json";
  RunResult r = outer(masked_proc(), {"--report", report, "--", probe_path(), "write", marker, "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(marker) == "ran");
  json::Value doc = parse_json(read_file(report));
  CHECK(str(doc, "rung") == "landlock");
  CHECK(str(rung(doc, "namespaces"), "reason") == "proc-masked");
  CHECK(rung(doc, "landlock").find("used")->as_bool());
  CHECK(doc.find("landlock")->find("abi")->as_int() == landlock_abi());
}

TEST_CASE("masked /proc on an allow-listed backend: the host /proc is bound", "[ladder][proc]") {
  require_userns();
  TempDir ws("ws");
  const std::string host_init = read_file("/proc/1/cmdline");
  REQUIRE_FALSE(host_init.empty());

  struct Case {
    std::string name;
    std::vector<std::string> outer_opts;
    std::vector<std::string> env;
  };
  const std::vector<Case> cases{
      {"NSRUN_HOST_BACKEND=lakebox", masked_proc(), {"NSRUN_HOST_BACKEND=lakebox"}},
      {"'  LakeBox  ' counts as lakebox", masked_proc(), {"NSRUN_HOST_BACKEND=  LakeBox  "}},
      {"the marker /run/lakebox without the variable",
       masked_proc({"--run-tmpfs", "--marker", "/run/lakebox"}), {}},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      TempDir out("report");
      std::string report = out / "report.json";
      RunResult r = outer(c.outer_opts,
                          {"--backend", "namespaces", "--report", report, "--", probe_path(), "read", "/proc/1/cmdline"},
                          env_at(ws, c.env));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      // PID 1 in the bound /proc is the outer init, not nsrun's reaper.
      CHECK(r.out == host_init);
      json::Value doc = parse_json(read_file(report));
      CHECK(str(doc, "rung") == "namespaces");
      CHECK(str(doc, "proc") == "host-bind");
      CHECK(str(doc, "host_backend") == "lakebox");
    }
  }

  SECTION("NSRUN_HOST_BACKEND=bare with the marker present: fresh, refused (negative control)") {
    std::string marker = ws / "marker";
    RunResult r = outer(masked_proc({"--run-tmpfs", "--marker", "/run/lakebox"}),
                        {"--backend", "namespaces", "--", probe_path(), "write", marker, "ran"},
                        env_at(ws, {"NSRUN_HOST_BACKEND=bare"}));
    INFO(r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("proc-masked") != std::string::npos);
    CHECK_FALSE(file_exists(marker));
  }
}

TEST_CASE("user namespaces refused: auto moves to Landlock and keeps the promise", "[ladder][landlock]") {
  require_landlock();
  TempDir ws("ws");
  TempDir host("host");
  const std::vector<std::string> deny{"--deny-userns"};

  SECTION("read-only: host writes fail with EACCES and change nothing; TMPDIR works and goes away") {
    std::string outside = host / "outside";
    std::string inside = ws / "inside";
    write_file(host / "kept", "original");
    std::string script = fmt::format(
        "{p} write {o} x; {p} write {i} x; {p} write {k} changed; {p} write \"$TMPDIR/t\" tmp; echo \"$TMPDIR\"",
        fmt::arg("p", shell_quote(probe_path())), fmt::arg("o", shell_quote(outside)),
        fmt::arg("i", shell_quote(inside)), fmt::arg("k", shell_quote(host / "kept")));
    RunResult r = outer(deny, {"--mode", "read-only", "--", "/bin/sh", "-c", script}, at(ws));
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto lines = r.out;
    CHECK(lines.starts_with("error EACCES\nerror EACCES\nerror EACCES\nok\n"));
    CHECK_FALSE(file_exists(outside));
    CHECK_FALSE(file_exists(inside));
    CHECK(read_file(host / "kept") == "original");
    std::string tmpdir = chomp(r.out.substr(r.out.rfind("ok\n") + 3));
    CHECK(tmpdir.find("nsrun-") != std::string::npos);
    CHECK_FALSE(file_exists(tmpdir));
  }

  SECTION("workspace-write: workspace writes land, others fail") {
    std::string outside = host / "outside";
    std::string inside = ws / "inside";
    std::string script = fmt::format("{p} write {i} landed; {p} write {o} x", fmt::arg("p", shell_quote(probe_path())),
                                     fmt::arg("i", shell_quote(inside)), fmt::arg("o", shell_quote(outside)));
    TempDir out("report");
    std::string report = out / "report.json";
    RunResult r = outer(deny, {"--report", report, "--", "/bin/sh", "-c", script}, at(ws));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);  // the refused last write is the script's status
    CHECK(r.out == "ok\nerror EACCES\n");
    CHECK(read_file(inside) == "landed");
    CHECK_FALSE(file_exists(outside));
    json::Value doc = parse_json(read_file(report));
    CHECK(str(doc, "rung") == "landlock");
    CHECK(str(rung(doc, "namespaces"), "reason") == "userns-denied");
    CHECK(str(*doc.find("landlock"), "enforcement") == (landlock_abi() >= 6 ? "full" : "partial"));
  }

  SECTION("ABI >= 6: the command cannot signal a process started outside") {
    if (landlock_abi() < 6) unavailable("landlock-abi6", "Landlock ABI < 6 has no signal scoping");
    std::string token = unique_token("victim");
    Process victim({probe_path(), "sleep-forever", token});
    std::string line = victim.wait_for_line("sleeping ");
    std::string pid = line.substr(std::string("sleeping ").size());
    RunResult r = outer(deny, {"--", probe_path(), "kill", pid, std::to_string(SIGKILL)}, at(ws));
    INFO(r.err);
    CHECK(r.out == "error EPERM\n");
    CHECK(kill(victim.pid(), 0) == 0);  // still alive
  }

  SECTION("--backend namespaces: exit 125 with the reason code, the command never ran") {
    std::string marker = ws / "marker";
    RunResult r = outer(deny, {"--backend", "namespaces", "--", probe_path(), "write", marker, "ran"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 125);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.find("userns-denied") != std::string::npos);
    CHECK_FALSE(file_exists(marker));
  }

  SECTION("nsrun probe --json: namespaces userns-denied, landlock usable") {
    json::Value doc = probe_json(deny, ws, "userns-denied", 0);
    CHECK(str(doc, "selected") == "landlock");
    CHECK(rung(doc, "landlock").find("usable")->as_bool());
    CHECK(rung(doc, "landlock").find("abi")->as_int() == landlock_abi());
  }
}

TEST_CASE("namespaces and Landlock both refused: exit 125 naming both rungs", "[ladder][landlock]") {
  TempDir ws("ws");
  std::string marker = ws / "marker";
  const std::vector<std::string> deny{"--deny-userns", "--deny-landlock"};

  RunResult r = outer(deny, {"--", probe_path(), "write", marker, "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.starts_with("nsrun: no sandbox available: "));
  CHECK(r.err.find("namespaces: userns-denied") != std::string::npos);
  CHECK(r.err.find("landlock: landlock-missing") != std::string::npos);
  CHECK_FALSE(file_exists(marker));

  SECTION("nsrun probe --json names both codes and exits 1") {
    json::Value doc = probe_json(deny, ws, "userns-denied", 1);
    CHECK(str(doc, "selected") == "none");
    CHECK(str(rung(doc, "landlock"), "reason") == "landlock-missing");
  }
  SECTION("full-access still runs") {
    RunResult f = outer(deny, {"--mode", "full-access", "--", probe_path(), "write", marker, "ran"}, at(ws));
    INFO(f.err);
    CHECK(f.exit_code == 0);
    CHECK(read_file(marker) == "ran");
  }
}

TEST_CASE("PID or mount namespaces refused by a limit: named, and Landlock runs the command",
          "[ladder][landlock]") {
  require_userns();
  require_landlock();
  for (auto [sysctl, code] : {std::pair{"max_pid_namespaces=0", "pidns-denied"},
                              std::pair{"max_mnt_namespaces=0", "mntns-denied"},
                              std::pair{"max_user_namespaces=0", "userns-denied"}}) {
    DYNAMIC_SECTION(sysctl) {
      TempDir ws("ws");
      TempDir out("report");
      std::string marker = ws / "marker";
      std::string report = out / "report.json";
      const std::vector<std::string> limit{"--userns", "--sysctl", sysctl};
      probe_json(limit, ws, code);

      RunResult r = outer(limit, {"--report", report, "--", probe_path(), "write", marker, "ran"}, at(ws));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(read_file(marker) == "ran");
      json::Value doc = parse_json(read_file(report));
      CHECK(str(doc, "rung") == "landlock");
      CHECK(str(rung(doc, "namespaces"), "reason") == code);
    }
  }
}

TEST_CASE("--backend landlock: what the rung cannot express is refused, never approximated", "[ladder][landlock]") {
  require_landlock();
  TempDir ws("ws");
  TempDir host("host");
  std::string marker = ws / "marker";
  RunResult r = nsrun_test::nsrun({"--backend", "landlock", "--tmpfs", host.path(), "--", probe_path(), "write", marker, "ran"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("landlock-cannot-express") != std::string::npos);
  CHECK(r.err.find("tmpfs " + host.path()) != std::string::npos);
  CHECK_FALSE(file_exists(marker));
}
