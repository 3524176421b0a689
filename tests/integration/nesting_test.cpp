// A sandbox inside the sandbox: with --allow-nested-userns, `unshare -Ur`,
// nsrun inside nsrun and bwrap-style tools (Debian's bwrap, nsrun installed
// as bwrap) run without --seccomp none or --proc host-bind, as root and as
// an unprivileged user. And what the nested user namespace gives the
// command (every capability over namespaces of its own, the mount calls)
// gives it no way out of the outer sandbox: its root, its protected paths,
// its /proc and its network.
#include "harness.hpp"
#include "reported.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fmt/core.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "policy/json.hpp"
#include "sys/fd.hpp"

using namespace nsrun_test;
using Catch::Matchers::ContainsSubstring;

namespace {

bool kernel_root() { return ::geteuid() == 0; }

// The directory of the nsrun under test, which may sit in the host's /tmp
// (the runner's copy), hidden by the sandbox's private /tmp: bound read-only.
std::string nsrun_dir() { return nsrun_path().substr(0, nsrun_path().rfind('/')); }

// nsrun --allow-nested-userns (nsrun's directory visible) -- argv.
RunResult nested(const TempDir& ws, const std::vector<std::string>& options, const std::vector<std::string>& argv) {
  std::vector<std::string> args = concat({"--allow-nested-userns", "--ro", nsrun_dir()}, options);
  args.push_back("--");
  args.insert(args.end(), argv.begin(), argv.end());
  return nsrun_test::nsrun(args, at(ws));
}

RunResult nested_sh(const TempDir& ws, const std::vector<std::string>& options, const std::string& script) {
  return nested(ws, options, {"/bin/sh", "-c", script});
}

const nsrun::json::Value* rung_named(const nsrun::json::Value& report, std::string_view name) {
  const nsrun::json::Value* rungs = report.is_object() ? report.find("rungs") : nullptr;
  if (rungs == nullptr || !rungs->is_array()) return nullptr;
  for (const auto& r : rungs->as_array())
    if (str(r.find("name")) == name) return &r;
  return nullptr;
}

// A TCP listener on 127.0.0.1 of the host's network namespace.
struct Listener {
  nsrun::Fd fd;
  int port = 0;
};
Listener host_listener() {
  Listener l;
  l.fd = nsrun::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  REQUIRE(l.fd.get() >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(l.fd.get(), 4) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  l.port = ntohs(addr.sin_port);
  return l;
}

}  // namespace

TEST_CASE("nesting: unshare -Ur works and its root maps to the caller", "[nesting]") {
  require_userns();
  TempDir ws("ws");
  RunResult r = nested(ws, {}, {"unshare", "-Ur", "sh", "-c", "id -u; cat /proc/self/uid_map"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Root inside the nested namespace is one uid of the sandbox's.
  CHECK(r.out.starts_with("0\n"));
  // A file made by it belongs to the caller on the host.
  r = nested(ws, {}, {"unshare", "-Ur", "sh", "-c", "echo made > nested-file"});
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  REQUIRE(::stat((ws / "nested-file").c_str(), &st) == 0);
  CHECK(st.st_uid == ::geteuid());
}

TEST_CASE("nesting: nsrun inside nsrun runs its command confined, with no extra option", "[nesting]") {
  require_userns();
  TempDir ws("ws");
  TempDir outside("outside");  // read-only for both sandboxes
  const std::string script = fmt::format(
      "{} --report inner.json -- sh -c 'echo inner > made-inside; echo x > {}/escaped 2>/dev/null; exit 7'",
      shell_quote(nsrun_path()), outside.path());
  RunResult r = nested_sh(ws, {}, script);
  INFO(r.err);
  // The inner command ran (its exit code came back through both) and
  // wrote the shared workspace, and nothing outside it.
  CHECK(r.exit_code == 7);
  CHECK(read_file(ws / "made-inside") == "inner\n");
  CHECK_FALSE(file_exists(outside / "escaped"));
  auto doc = nsrun::json::parse(read_file(ws / "inner.json"));
  REQUIRE(doc);
  const auto* ns = rung_named(*doc, "namespaces");
  REQUIRE(ns != nullptr);
  if (kernel_root()) {
    // Run by root, the outer /proc keeps its read-only covers (uid 0
    // writes sysctls without a capability) and the kernel refuses a
    // fresh procfs over a covered one: the inner nsrun says so and takes
    // its next rung, never a silent host-bind.
    CHECK(str(doc->find("rung")) == "landlock");
    CHECK(str(ns->find("reason")) == "proc-masked");
  } else {
    CHECK(str(doc->find("rung")) == "namespaces");
    CHECK(str(doc->find("proc")) == "fresh");
  }
}

TEST_CASE("nesting: Debian's bwrap inside nsrun", "[nesting]") {
  require_userns();
  if (::access("/usr/bin/bwrap", X_OK) != 0) unavailable("bwrap", "/usr/bin/bwrap is missing");
  TempDir ws("ws");
  TempDir outside("outside");
  // What a bwrap-based harness passes: its own user and PID namespaces, a
  // fresh /proc, the workspace writable.
  const std::vector<std::string> bwrap = {"/usr/bin/bwrap", "--ro-bind", "/", "/", "--bind", ws.path(), ws.path(),
                                          "--unshare-user", "--unshare-pid", "--dev", "/dev"};
  const std::string script = fmt::format("echo b > {0}/made-by-bwrap; echo x > {1}/escaped 2>/dev/null; ls /proc | grep -c '^[0-9]'",
                                         ws.path(), outside.path());
  if (!kernel_root()) {
    RunResult r = nested(ws, {}, concat(concat(bwrap, {"--proc", "/proc"}), {"sh", "-c", script}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(ws / "made-by-bwrap") == "b\n");
    CHECK_FALSE(file_exists(outside / "escaped"));
    // Its own PID namespace: bwrap's pid 1, sh, ls, grep at most.
    CHECK(std::stoi(r.out) <= 4);
  } else {
    // Root: the kernel refuses bwrap's fresh procfs (the outer one is
    // covered, see above) and bwrap stops, having run nothing.
    RunResult refused = nested(ws, {}, concat(concat(bwrap, {"--proc", "/proc"}), {"sh", "-c", script}));
    CHECK(refused.exit_code != 0);
    CHECK_THAT(refused.err, ContainsSubstring("proc"));
    CHECK_FALSE(file_exists(ws / "made-by-bwrap"));
    // The rest of bwrap's root works.
    RunResult r = nested(ws, {}, concat(bwrap, {"sh", "-c", script}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(ws / "made-by-bwrap") == "b\n");
  }
  CHECK_FALSE(file_exists(outside / "escaped"));
}

TEST_CASE("nesting: nsrun installed as bwrap inside nsrun", "[nesting]") {
  require_userns();
  TempDir ws("ws");
  TempDir bin("bin");
  REQUIRE(::symlink(nsrun_path().c_str(), (bin / "bwrap").c_str()) == 0);
  std::vector<std::string> bwrap = {bin / "bwrap", "--ro-bind", "/", "/", "--bind", ws.path(), ws.path(),
                                    "--unshare-user", "--unshare-pid", "--dev", "/dev"};
  if (!kernel_root()) bwrap.insert(bwrap.end(), {"--proc", "/proc"});
  RunResult r = nested(ws, {"--ro", bin.path()},
                       concat(bwrap, {"sh", "-c", fmt::format("echo b > {}/made; ls /proc | grep -c '^[0-9]'", ws.path())}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(ws / "made") == "b\n");
  // Root: the outer sandbox's /proc, seen through --ro-bind / /.
  if (!kernel_root()) CHECK(std::stoi(r.out) <= 4);
}

TEST_CASE("nesting: the nested namespace's mounts cannot uncover a protected path", "[nesting][protect]") {
  require_userns();
  TempDir ws("ws");
  make_dir(ws / ".git");
  make_dir(ws / ".git/hooks");
  const std::string hooks = ws / ".git/hooks";
  // Every way the mount calls could take the read-only cover off: unmount
  // it, remount it writable, bind the workspace's own (writable) mount
  // over it, and write through each.
  const std::string script = fmt::format(
      "umount -l {0} 2>/dev/null; echo pwn > {0}/pre-commit 2>/dev/null;"
      "mount -o remount,bind,rw {0} 2>/dev/null; echo pwn > {0}/post-checkout 2>/dev/null;"
      "mkdir -p /tmp/h && mount --bind /tmp/h {0} 2>/dev/null; echo pwn > {0}/pre-push 2>/dev/null;"
      "mount --bind {1} /mnt 2>/dev/null && echo pwn > /mnt/.git/hooks/pre-merge-commit 2>/dev/null; true",
      hooks, ws.path());
  RunResult r = nested(ws, {}, {"unshare", "-Urm", "sh", "-c", script});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (const char* hook : {"pre-commit", "post-checkout", "pre-push", "pre-merge-commit"}) {
    INFO(hook);
    CHECK_FALSE(file_exists(ws / ".git/hooks" + std::string("/") + hook));
  }
}

TEST_CASE("nesting: the host's sysctls stay out of reach, in the sandbox and in a nested PID namespace",
          "[nesting][proc]") {
  require_userns();
  TempDir ws("ws");
  const std::string before = read_file("/proc/sys/vm/swappiness");
  // Opened for reading and writing without a write: the open is the check.
  const std::string probe =
      "for f in /proc/sys/vm/swappiness /proc/sysrq-trigger; do "
      "[ -e $f ] || continue; if (exec 3<>$f) 2>/dev/null; then echo open $f; else echo refused $f; fi; done";
  RunResult outer = nested_sh(ws, {}, probe);
  INFO(outer.err);
  CHECK(outer.exit_code == 0);
  CHECK_THAT(outer.out, !ContainsSubstring("open "));
  CHECK_THAT(outer.out, ContainsSubstring("refused /proc/sys/vm/swappiness"));
  // A nested user and PID namespace with a procfs of its own.
  RunResult inner = nested(ws, {}, {"unshare", "-Urmpf", "--mount-proc", "sh", "-c", probe});
  INFO(inner.out << inner.err);
  if (kernel_root()) {
    // The covered outer /proc makes the kernel refuse the fresh one.
    CHECK(inner.exit_code != 0);
    CHECK_THAT(inner.out, !ContainsSubstring("open "));
    // Without a fresh one the covers stay, locked, in a nested namespace.
    RunResult uncover = nested(ws, {}, {"unshare", "-Urm", "sh", "-c", "umount -l /proc/sys 2>/dev/null; " + probe});
    CHECK_THAT(uncover.out, !ContainsSubstring("open "));
    CHECK_THAT(uncover.out, ContainsSubstring("refused /proc/sys/vm/swappiness"));
  } else {
    CHECK(inner.exit_code == 0);
    CHECK_THAT(inner.out, !ContainsSubstring("open "));
    CHECK_THAT(inner.out, ContainsSubstring("refused /proc/sys/vm/swappiness"));
  }
  CHECK(read_file("/proc/sys/vm/swappiness") == before);
}

TEST_CASE("nesting: a nested network namespace reaches nothing of the host's with --network none",
          "[nesting][network]") {
  require_userns();
  TempDir ws("ws");
  Listener l = host_listener();
  const std::string probe = probe_path();
  for (const char* nest : {"-Ur", "-Urn"}) {
    INFO(nest);
    RunResult r = nested(ws, {"--network", "none"}, {"unshare", nest, probe, "connect-tcp", std::to_string(l.port)});
    INFO(r.out << r.err);
    CHECK(r.out.starts_with("error"));
  }
  // Nothing connected: the listener's queue is empty.
  CHECK(::accept4(l.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC) < 0);
  // Control: with the network shared the same probe connects.
  RunResult shared = nested(ws, {}, {"unshare", "-Ur", probe, "connect-tcp", std::to_string(l.port)});
  CHECK(shared.out.starts_with("ok"));
}

TEST_CASE("nesting: a kept CAP_SYS_ADMIN with the mount calls allowed is refused", "[nesting]") {
  TempDir ws("ws");
  TempDir dir("policy");
  write_file(dir / "p.json", R"({"allow_nested_userns": true, "cap_add": ["CAP_SYS_ADMIN"]})");
  RunResult r = nsrun_test::nsrun({"--policy", dir / "p.json", "--", "true"}, at(ws));
  CHECK(r.exit_code == 125);
  CHECK_THAT(r.err, ContainsSubstring("--cap-add"));
  CHECK(count_lines(r.err) == 1);
}
