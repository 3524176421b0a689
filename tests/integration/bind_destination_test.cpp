// A bind's destination is looked up in the new root before anything is
// made there. A miss (ENOENT) is the common case (a mount point made under
// the private /tmp, a thousand times for a thousand binds) and makes no
// error value; every other answer of that lookup is still the error it
// was, word for word, in either dialect, and a symlink in it is followed
// (bwrap's dialect, inside the root) or refused (nsrun's).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <string>

using namespace nsrun_test;

TEST_CASE("a bind's destination lookup fails as it did: not a directory, a dangling link, a read-only parent",
          "[binds][bind-destination]") {
  require_userns();
  TempDir src("bind-dest-src");
  const std::vector<std::string> head = {"bwrap", "--ro-bind", "/", "/"};
  auto bwrap = [&](std::vector<std::string> tail) {
    std::vector<std::string> args = head;
    args.insert(args.end(), tail.begin(), tail.end());
    return nsrun(args);
  };
  RunResult r = bwrap({"--ro-bind", src.path(), "/etc/passwd/sub", "/bin/true"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "bwrap: open /etc/passwd/sub: Not a directory\n");

  r = bwrap({"--tmpfs", "/mnt", "--symlink", "/nonexistent/x", "/mnt/l", "--ro-bind", src.path(), "/mnt/l/sub", "/bin/true"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "bwrap: Can't create file at /mnt/l: Too many levels of symbolic links\n");

  const std::string top = "/nsrun-bind-dest-" + unique_token();
  r = bwrap({"--ro-bind", src.path(), top + "/b", "/bin/true"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "bwrap: Can't mkdir " + top + ": Read-only file system\n");
  CHECK_FALSE(file_exists(top));
}

TEST_CASE("a bind's destination through a symlink: followed inside the root in bwrap's dialect, refused in nsrun's",
          "[binds][bind-destination]") {
  require_userns();
  TempDir src("bind-dest-link");
  write_file(src / "marker", "m\n");
  RunResult r = nsrun({"bwrap", "--ro-bind", "/", "/", "--tmpfs", "/mnt", "--dir", "/mnt/real/sub", "--symlink", "real",
                       "/mnt/l", "--ro-bind", src.path(), "/mnt/l/sub", "/bin/cat", "/mnt/real/sub/marker"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "m\n");

  TempDir ws("bind-dest-ws");
  const std::string policy = ws / "policy.json";
  write_file(policy, R"({"mode": "read-only", "mounts": [{"kind": "tmpfs", "dest": "/mnt"}, )"
                     R"({"kind": "symlink", "source": "/etc", "dest": "/mnt/l"}, )"
                     R"({"kind": "ro-bind", "source": ")" + src.path() + R"(", "dest": "/mnt/l/x"}]})");
  r = nsrun({"--policy", policy, "--workspace", ws.path(), "--", "/bin/true"}, at(ws));
  CHECK(r.exit_code == 125);
  CHECK(r.err ==
        "nsrun: mount on /mnt/l/x: a symlink in the path (nsrun follows none in a path it protects or makes "
        "writable; give the resolved path): Too many levels of symbolic links\n");
}
