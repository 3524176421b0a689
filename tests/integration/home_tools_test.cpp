// Everyday tools that write under $HOME work in a copy-on-write
// home, the second run finds their cache warm, and the real home stays
// byte-identical. Offline: each test builds its own package; no registry is
// reached. A tool this machine (or this user) lacks is a loud skip.
#include "harness.hpp"
#include "manifest.hpp"

#include <catch2/catch_test_macros.hpp>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

using namespace nsrun_test;

namespace {

// A tool the test user can execute, else a loud skip.
void need(const std::string& path, std::string_view what) {
  if (access(path.c_str(), X_OK) != 0) unavailable(what, path + " is not installed or not executable by this user");
}

struct Home {
  TempDir ws{"tools-ws"};
  TempDir state{"tools-state"};
  TempDir home{"tools-home"};
  std::map<std::string, std::string> before;
  Home() {
    write_file(home / ".bashrc", "# real\n");
    make_dir(home / ".config");
    write_file(home / ".config/settings", "keep\n");
    before = manifest(home.path());
  }
  RunResult sandboxed(const std::string& script, std::vector<std::string> env = {}) {
    RunOptions o = at(ws);
    o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path(), "XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
    for (auto& e : env) o.env.push_back(std::move(e));
    o.timeout = 120s;
    return nsrun({"--home", "cow", "--", "sh", "-c", script}, o);
  }
};

// What the npm and pip cases hold: the first run succeeds and prints
// `first_out`, the second finds in the layer what the first left there and
// prints `second_out`, and the real home is byte-identical after both.
void warm_on_second_run(Home& h, const std::string& first_script, std::string_view first_out,
                        const std::string& second_script, std::string_view second_out) {
  RunResult first = h.sandboxed(first_script);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out == first_out);
  RunResult second = h.sandboxed(second_script);
  CHECK(second.out == second_out);
  CHECK(manifest(h.home.path()) == h.before);
}

}  // namespace

TEST_CASE("cow home: npm install of a local tarball, cache warm on the second run", "[cow][home][tools]") {
  require_userns();
  need("/usr/bin/npm", "npm");
  Home h;
  make_dir(h.ws / "fixture");
  write_file(h.ws / "fixture/package.json", R"({"name":"nsrun-fixture","version":"1.0.0","main":"index.js"})");
  write_file(h.ws / "fixture/index.js", "module.exports = 42;\n");
  const std::string npm = "npm --offline --no-audit --no-fund --no-update-notifier";
  // The second run sees the first one's cache in the layer.
  warm_on_second_run(h,
                     "set -e; cd fixture && " + npm + " pack >/dev/null && cd .. && mkdir app && cd app && " + npm +
                         " init -y >/dev/null && " + npm +
                         " install ../fixture/nsrun-fixture-1.0.0.tgz >/dev/null && node -e "
                         "'console.log(require(\"nsrun-fixture\"))'",
                     "42\n", "ls ~/.npm/_cacache >/dev/null && echo warm", "warm\n");
}

TEST_CASE("cow home: pip install --user of a local wheel, there on the second run", "[cow][home][tools]") {
  require_userns();
  need("/usr/bin/python3", "python3");
  if (run({"/usr/bin/python3", "-m", "pip", "--version"}).exit_code != 0) unavailable("pip", "python3 -m pip is missing");
  Home h;
  // A wheel is a zip: built here, by hand, offline.
  const std::string build =
      "import zipfile\n"
      "w = zipfile.ZipFile('nsrun_fixture-1.0-py3-none-any.whl', 'w')\n"
      "w.writestr('nsrun_fixture.py', 'VALUE = 42\\n')\n"
      "w.writestr('nsrun_fixture-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: nsrun-fixture\\nVersion: 1.0\\n')\n"
      "w.writestr('nsrun_fixture-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: nsrun\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n"
      "w.writestr('nsrun_fixture-1.0.dist-info/RECORD', '')\n"
      "w.close()\n";
  write_file(h.ws / "build.py", build);
  REQUIRE(run({"/usr/bin/python3", "build.py"}, at(h.ws)).exit_code == 0);
  warm_on_second_run(
      h,
      "/usr/bin/python3 -m pip install --user --no-index --no-cache-dir --break-system-packages --disable-pip-version-check "
      "./nsrun_fixture-1.0-py3-none-any.whl >/dev/null && /usr/bin/python3 -c 'import nsrun_fixture; print(nsrun_fixture.VALUE)'",
      "42\n", "/usr/bin/python3 -c 'import nsrun_fixture; print(nsrun_fixture.VALUE)'", "42\n");
}

TEST_CASE("cow home: cargo build of a path-only crate", "[cow][home][tools]") {
  require_userns();
  need("/root/.cargo/bin/cargo", "cargo");
  Home h;
  make_dir(h.ws / "crate");
  make_dir(h.ws / "crate/src");
  make_dir(h.ws / "crate/dep");
  make_dir(h.ws / "crate/dep/src");
  write_file(h.ws / "crate/Cargo.toml",
             "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ndep = { path = \"dep\" }\n");
  write_file(h.ws / "crate/src/main.rs", "fn main() { println!(\"{}\", dep::value()); }\n");
  write_file(h.ws / "crate/dep/Cargo.toml", "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
  write_file(h.ws / "crate/dep/src/lib.rs", "pub fn value() -> u32 { 42 }\n");
  const std::vector<std::string> env = {"RUSTUP_HOME=/root/.rustup", "CARGO_HOME=", "PATH=/root/.cargo/bin:/usr/bin:/bin"};
  RunResult first = h.sandboxed("cd crate && cargo run --offline -q", env);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out == "42\n");
  RunResult second = h.sandboxed("cd crate && cargo build --offline 2>&1", env);
  CHECK(second.exit_code == 0);
  CHECK(second.out.find("Compiling") == std::string::npos);
  CHECK(manifest(h.home.path()) == h.before);
}

TEST_CASE("cow home: a ccache-wrapped compile hits the cache on the second run", "[cow][home][tools]") {
  require_userns();
  need("/usr/bin/ccache", "ccache");
  need("/usr/bin/gcc", "gcc");
  Home h;
  write_file(h.ws / "x.c", "int f(void) { return 42; }\n");
  const std::string compile = "ccache /usr/bin/gcc -c x.c -o x.o";
  RunResult first = h.sandboxed(compile);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  RunResult second = h.sandboxed("rm -f x.o && " + compile + " && ccache --print-stats");
  INFO(second.out << second.err);
  REQUIRE(second.exit_code == 0);
  CHECK((second.out.find("direct_cache_hit\t1") != std::string::npos ||
         second.out.find("preprocessed_cache_hit\t1") != std::string::npos));
  CHECK(manifest(h.home.path()) == h.before);
}

TEST_CASE("cow home on the Landlock rung: caches redirected, the home read-only, stated in the report",
          "[cow][home][landlock]") {
  require_landlock();
  need("/usr/bin/ccache", "ccache");
  need("/usr/bin/gcc", "gcc");
  Home h;
  write_file(h.ws / "x.c", "int f(void) { return 42; }\n");
  const std::string report = h.ws / "report.json";
  RunOptions o = at(h.ws);
  o.env = {"HOME=" + h.home.path(), "XDG_STATE_HOME=" + h.state.path(), "XDG_RUNTIME_DIR=", "XDG_CACHE_HOME="};
  const std::string script = "ccache /usr/bin/gcc -c x.c -o x.o && ccache --print-stats; echo evil >> ~/.bashrc; echo rc=$?";
  RunResult first = nsrun({"--backend", "landlock", "--home", "cow", "--report", report, "--", "sh", "-c", script}, o);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("rc=") != std::string::npos);
  CHECK(first.out.find("rc=0") == std::string::npos);
  CHECK(first.err.find("no overlay on the Landlock rung") != std::string::npos);
  const std::string json = read_file(report);
  CHECK(json.find("\"home\":\"cache-redirect\"") != std::string::npos);
  CHECK(json.find("\"CCACHE_DIR\"") != std::string::npos);
  RunResult second = nsrun({"--backend", "landlock", "--home", "cow", "--", "sh", "-c", "rm x.o && " + script}, o);
  INFO(second.out << second.err);
  CHECK((second.out.find("direct_cache_hit\t1") != std::string::npos ||
         second.out.find("preprocessed_cache_hit\t1") != std::string::npos));
  CHECK(manifest(h.home.path()) == h.before);
}
