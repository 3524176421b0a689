// The native command line: validation before anything runs, `nsrun policy`
// and its JSON round trip, `nsrun explain`, and the options that shape the
// command's process (working directory, environment). Also the static build.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

std::string lower(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

TEST_CASE("each validation error exits 125 with one line naming the option and runs nothing",
          "[cli][validation]") {
  require_userns();
  TempDir ws("ws");
  TempDir host("host");
  std::string marker = ws / "marker";
  std::vector<std::string> payload{"--", probe_path(), "write", marker, "ran"};

  write_file(host / "unknown-field.json", R"({"no_such_field": 1})");
  write_file(host / "wrong-type.json", R"({"mode": 3})");
  write_file(host / "not-json.json", "{ this is not json");

  struct Case {
    std::string name;
    std::vector<std::string> options;
    std::string names;  // what the message must mention (lower-cased match); empty: anything
    bool with_payload = true;
  };
  std::vector<Case> cases{
      {"--workspace relative", {"--workspace", "relative/dir"}, "--workspace"},
      {"--workspace missing", {"--workspace", host / "missing"}, "--workspace"},
      {"--writable relative", {"--writable", "relative/dir"}, "--writable"},
      {"--writable missing", {"--writable", host / "missing"}, "--writable"},
      {"--ro relative", {"--ro", "relative/dir"}, "--ro"},
      {"--hide relative", {"--hide", "relative/dir"}, "--hide"},
      {"--tmpfs relative", {"--tmpfs", "relative/dir"}, "--tmpfs"},
      {"--mode unknown", {"--mode", "bogus"}, "--mode"},
      {"--proc unknown", {"--proc", "bogus"}, "--proc"},
      {"--chdir relative", {"--chdir", "relative/dir"}, "--chdir"},
      {"unknown option", {"--no-such-option"}, "--no-such-option"},
      {"--policy missing file", {"--policy", host / "missing.json"}, "--policy"},
      {"--policy unknown field", {"--policy", host / "unknown-field.json"}, "no_such_field"},
      {"--policy wrong type", {"--policy", host / "wrong-type.json"}, "mode"},
      {"--policy not JSON", {"--policy", host / "not-json.json"}, ""},
      {"empty command after --", {"--"}, "command", false},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      std::vector<std::string> args = c.options;
      if (c.with_payload) args.insert(args.end(), payload.begin(), payload.end());
      RunResult r = nsrun(args, at(ws));
      INFO("nsrun " << join(args));
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.starts_with("nsrun: "));
      CHECK(r.err.ends_with("\n"));
      CHECK(count_lines(r.err) == 1);
      CHECK(lower(r.err).find(lower(c.names)) != std::string::npos);
      CHECK(r.out.empty());
      CHECK_FALSE(file_exists(marker));
    }
  }
}

TEST_CASE("the policy and explain subcommands validate too", "[cli][validation]") {
  TempDir ws;
  for (std::string sub : {"policy", "explain"}) {
    DYNAMIC_SECTION(sub) {
      RunResult r = nsrun({sub, "--mode", "bogus"}, at(ws));
      INFO("stderr: " << r.err);
      CHECK(r.exit_code == 125);
      CHECK(r.err.starts_with("nsrun: "));
      CHECK(count_lines(r.err) == 1);
      CHECK(r.err.find("--mode") != std::string::npos);
    }
  }
}

TEST_CASE("nsrun policy prints the resolved Policy as JSON", "[cli][policy]") {
  TempDir ws;
  SECTION("the default mode") {
    RunResult r = nsrun({"policy"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.starts_with("{"));
    CHECK(r.out.find(R"("mode": "workspace-write")") != std::string::npos);
    // The workspace defaults to the current directory, resolved.
    CHECK(r.out.find(ws.path()) != std::string::npos);
  }
  SECTION("--mode read-only") {
    RunResult r = nsrun({"policy", "--mode", "read-only"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.starts_with("{"));
    CHECK(r.out.find(R"("mode": "read-only")") != std::string::npos);
  }
}

TEST_CASE("the policy JSON fed back with --policy gives the same policy", "[cli][policy]") {
  TempDir ws("ws");
  TempDir extra("extra");
  make_dir(ws / "protected");
  struct Case {
    const char* name;
    std::vector<std::string> options;
  };
  std::vector<Case> cases{
      {"--mode read-only --ro D", {"--mode", "read-only", "--ro", extra.path()}},
      {"workspace-write with roots and environment",
       {"--writable", extra.path(), "--ro", ws / "protected", "--setenv", "K", "V", "--unsetenv",
        "U", "--as-pid-1"}},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      std::vector<std::string> args{"policy"};
      args.insert(args.end(), c.options.begin(), c.options.end());
      RunResult first = nsrun(args, at(ws));
      INFO("nsrun " << join(args) << "\nstderr: " << first.err);
      REQUIRE(first.exit_code == 0);
      REQUIRE(first.out.find(extra.path()) != std::string::npos);
      std::string file = ws / "policy.json";
      write_file(file, first.out);

      RunResult again = nsrun({"policy", "--policy", file}, at(ws));
      INFO("again: " << again.err);
      CHECK(again.exit_code == 0);
      CHECK(again.out == first.out);

      // Options after --policy override it; what they do not touch is kept.
      RunResult over = nsrun({"policy", "--policy", file, "--mode", "full-access"}, at(ws));
      INFO("override: " << over.err);
      CHECK(over.exit_code == 0);
      CHECK(over.out.find(R"("mode": "full-access")") != std::string::npos);
      CHECK(over.out.find(R"("mode": "read-only")") == std::string::npos);
      CHECK(over.out.find(R"("mode": "workspace-write")") == std::string::npos);
      CHECK(over.out.find(extra.path()) != std::string::npos);
    }
  }
}

TEST_CASE("nsrun explain prints the plan and runs nothing", "[cli][explain]") {
  TempDir ws;
  std::string marker = ws / "marker";
  for (bool with_probe : {true, false}) {
    DYNAMIC_SECTION((with_probe ? "a command that would leave a marker" : "-- true")) {
      std::vector<std::string> args{"explain", "--mode", "read-only", "--"};
      if (with_probe) {
        args.insert(args.end(), {probe_path(), "write", marker, "ran"});
      } else {
        args.push_back("true");
      }
      RunResult r = nsrun(args, at(ws));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out.find("pivot_root") != std::string::npos);
      CHECK(r.out.find("/proc") != std::string::npos);
      CHECK_FALSE(file_exists(marker));
    }
  }
}

TEST_CASE("--chdir sets the working directory; the default is the current one", "[cli][cwd]") {
  require_userns();
  TempDir ws;
  make_dir(ws / "sub");
  SECTION("default") {
    RunResult r = nsrun({"--", "sh", "-c", "pwd -P"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == ws.path() + "\n");
  }
  SECTION("--chdir DIR") {
    RunResult r = nsrun({"--chdir", ws / "sub", "--", "sh", "-c", "pwd -P"}, at(ws));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == ws / "sub" + "\n");
  }
}

TEST_CASE("--setenv and --unsetenv and --clearenv shape the environment", "[cli][env]") {
  require_userns();
  TempDir ws;
  RunOptions opts = at(ws);
  opts.env = {"NSRUN_T_KEEP=kept", "NSRUN_T_DROP=dropped"};

  SECTION("the environment is inherited by default") {
    RunResult r = nsrun({"--", "sh", "-c", R"(echo "$NSRUN_T_KEEP|$NSRUN_T_DROP")"}, opts);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "kept|dropped\n");
  }
  SECTION("--setenv K V and --unsetenv K") {
    RunResult r = nsrun({"--setenv", "NSRUN_T_NEW", "new value", "--unsetenv", "NSRUN_T_DROP",
                         "--setenv", "NSRUN_T_KEEP", "changed", "--", "sh", "-c",
                         R"(echo "$NSRUN_T_KEEP|${NSRUN_T_DROP-unset}|$NSRUN_T_NEW")"},
                        opts);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "changed|unset|new value\n");
  }
  SECTION("--clearenv, then --setenv") {
    RunResult r = nsrun({"--clearenv", "--setenv", "NSRUN_T_NEW", "v", "--", "/bin/sh", "-c",
                         "/usr/bin/env"},
                        opts);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("NSRUN_T_NEW=v\n") != std::string::npos);
    CHECK(r.out.find("NSRUN_T_KEEP") == std::string::npos);
    CHECK(r.out.find("NSRUN_T_DROP") == std::string::npos);
    CHECK(r.out.find("HOME=") == std::string::npos);
  }
  SECTION("the probe sees the same") {
    RunResult r = nsrun({"--unsetenv", "NSRUN_T_KEEP", "--", probe_path(), "getenv",
                         "NSRUN_T_KEEP"},
                        opts);
    INFO(r.err);
    CHECK(r.out == "unset\n");
  }
}

namespace {

// True when the ELF file has neither a PT_INTERP nor a PT_DYNAMIC segment.
bool fully_static(const std::string& path) {
  std::string image = read_file(path);
  REQUIRE(image.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  REQUIRE(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(eh.e_ident[EI_CLASS] == ELFCLASS64);
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    size_t off = eh.e_phoff + i * eh.e_phentsize;
    REQUIRE(off + sizeof(Elf64_Phdr) <= image.size());
    Elf64_Phdr ph;
    std::memcpy(&ph, image.data() + off, sizeof ph);
    if (ph.p_type == PT_INTERP || ph.p_type == PT_DYNAMIC) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the static nsrun has no dynamic section and runs", "[cli][static]") {
  auto path = nsrun_static_path();
  if (!path) {
    unavailable("static", "nsrun-static was not built (meson -Dstatic=true); nothing to check");
  }
  CHECK(fully_static(*path));
  require_userns();
  TempDir ws;
  RunResult r = run({*path, "--", probe_path(), "pids"}, at(ws));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "1 2\n");
}

TEST_CASE("the test probe is static too", "[cli][static]") {
  // It runs in any sandbox root, with no loader visible.
  CHECK(fully_static(probe_path()));
}
