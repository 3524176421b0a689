// --watch-writes without privileges: which calls the watch
// filter sends (flags tested in BPF), where each rung lets the command
// write, path resolution, and the verdict's wording.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>

#include <array>

#include "launch/watch.hpp"
#include "policy/presets.hpp"
#include "policy/write_scope.hpp"
#include "seccomp/compile.hpp"
#include "seccomp/filter.hpp"
#include "seccomp/writes.hpp"

using namespace nsrun;

namespace {

Policy workspace_policy() {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/home/u/ws";
  p.writable = {"/srv/out"};
  return p;
}

bool notified(std::string_view call, std::array<uint64_t, 6> args) {
  return decide(watch_writes_spec(), call, args).has_value();
}

}  // namespace

TEST_CASE("the watch filter sends write intent only; plain reads stay in the kernel", "[watch-writes]") {
  CHECK_FALSE(notified("open", {0, O_RDONLY}));
  CHECK_FALSE(notified("openat", {0, 0, O_RDONLY | O_CLOEXEC | O_DIRECTORY}));
  CHECK_FALSE(notified("openat", {0, 0, O_RDONLY | O_APPEND}));
  for (int f : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_WRONLY | O_CLOEXEC, O_TMPFILE | O_RDWR}) {
    CHECK(notified("open", {0, static_cast<uint64_t>(f)}));
    CHECK(notified("openat", {0, 0, static_cast<uint64_t>(f)}));
  }
  for (auto call : {"creat", "openat2", "mkdir", "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat2",
                    "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchownat",
                    "truncate"})
    CHECK(notified(call, {}));
  CHECK_FALSE(notified("read", {}));
  CHECK_FALSE(notified("stat", {}));
  // Every rule notifies; another ABI passes (the default filter refuses it).
  for (const Rule& r : watch_writes_spec().rules) CHECK(r.notify);
  CHECK(watch_writes_spec().foreign_abi_allowed);
  auto program = compile_spec(watch_writes_spec());
  REQUIRE(program);
  const BpfProgram built = compile_watch_writes_filter().value();
  REQUIRE(built.size() == program->size());
  for (std::size_t i = 0; i < built.size(); ++i) {
    CHECK(built[i].code == (*program)[i].code);
    CHECK(built[i].k == (*program)[i].k);
  }
}

TEST_CASE("paths are made absolute against the cwd or dirfd, lexically", "[watch-writes]") {
  CHECK(resolve_path("/home/u/ws/sub", "x") == "/home/u/ws/sub/x");
  CHECK(resolve_path("/home/u/ws/sub", "../../other/./x") == "/home/u/other/x");
  CHECK(resolve_path("/anything", "/etc//hosts") == "/etc/hosts");
  CHECK(resolve_path("/", "../../..") == "/");
  CHECK(resolve_path("/a", "") == "/a");
}

TEST_CASE("the namespace rung's scope: the last mount that covers a path decides", "[watch-writes]") {
  Policy p = workspace_policy();
  p.mounts.push_back(mount_op(MountOp::Kind::ro_bind, "/home/u/ws/vendor", "/home/u/ws/vendor"));
  p.mounts.push_back(mount_op(MountOp::Kind::tmpfs, "", "/scratch"));
  const WriteScope s = write_scope(p, false);
  CHECK(classify(s, "/home/u/ws/a.txt") == WritePlace::writable);
  CHECK(classify(s, "/home/u/ws") == WritePlace::writable);
  CHECK(classify(s, "/srv/out/x") == WritePlace::writable);
  CHECK(classify(s, "/tmp/x") == WritePlace::writable);
  CHECK(classify(s, "/scratch/x") == WritePlace::writable);
  CHECK(classify(s, "/home/u/ws/vendor/x") == WritePlace::outside);
  CHECK(classify(s, "/etc/hosts") == WritePlace::outside);
  CHECK(classify(s, "/home/u/wsx") == WritePlace::outside);
  CHECK(classify(s, "/home/u/ws/.git/hooks/pre-commit") == WritePlace::protected_);
  CHECK(classify(s, "/home/u/ws/.git/config") == WritePlace::protected_);
  CHECK(classify(s, "/home/u/ws/.git/objects/ab") == WritePlace::writable);
  CHECK(classify(s, "/dev/null") == WritePlace::kernel);
  CHECK(classify(s, "/proc/self/fd/1") == WritePlace::kernel);
  Policy ro = p;
  ro.mode = Mode::read_only;
  ro.writable.clear();
  CHECK(classify(write_scope(ro, false), "/home/u/ws/a.txt") == WritePlace::outside);
  CHECK(classify(write_scope(ro, false), "/tmp/a") == WritePlace::writable);
}

TEST_CASE("the Landlock rung's scope: writable roots and the private TMPDIR, not /tmp", "[watch-writes]") {
  WriteScope s = write_scope(workspace_policy(), true);
  CHECK(classify(s, "/home/u/ws/a.txt") == WritePlace::writable);
  CHECK(classify(s, "/srv/out/deep/x") == WritePlace::writable);
  CHECK(classify(s, "/tmp/x") == WritePlace::outside);
  CHECK(classify(s, "/etc/passwd") == WritePlace::outside);
  s.tmpdir = "/tmp/nsrun-abc";
  CHECK(classify(s, "/tmp/nsrun-abc/f") == WritePlace::writable);
  CHECK(classify(s, "/tmp/nsrun-abcd/f") == WritePlace::outside);
}


TEST_CASE("only a watched call the rules do not refuse is ever continued", "[watch-writes]") {
  Policy p = workspace_policy();
  const FilterSpec ns = notify_spec(filter_spec(p, FilterRung::namespaces));
  const FilterSpec ll = notify_spec(filter_spec(p, FilterRung::landlock));
  CHECK(watch_continues(ns, "openat", {0, 0, O_WRONLY}));
  CHECK(watch_continues(ns, "fchmodat", {}));
  // Refused on the Landlock rung everywhere: the denial answers it.
  CHECK_FALSE(watch_continues(ll, "fchmodat", {}));
  CHECK_FALSE(watch_continues(ll, "chown", {}));
  CHECK(watch_continues(ll, "openat", {0, 0, O_WRONLY}));
  // Not watched: a refusal whatever the rules say (fail closed).
  CHECK_FALSE(watch_continues(ns, "keyctl", {}));
  CHECK_FALSE(watch_continues(ns, "read", {}));
  CHECK_FALSE(watch_continues(FilterSpec{}, "ioctl", {}));
  // The joined program notifies for both, one listener.
  const FilterSpec joined = notify_watch_spec(ll);
  CHECK(decide(joined, "keyctl", {}).has_value());
  CHECK(decide(joined, "openat", {0, 0, O_CREAT}).has_value());
  CHECK_FALSE(decide(joined, "openat", {0, 0, O_RDONLY}).has_value());
  CHECK(compile_spec(joined));
  CHECK_FALSE(notify_watch_spec(notify_spec(filter_spec(FilterKey{false, false, false, false, false, false}))).enabled);
}
