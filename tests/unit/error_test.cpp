#include <catch2/catch_test_macros.hpp>

#include "sys/error.hpp"
#include "sys/flags.hpp"

#include <sched.h>

using namespace nsrun;

TEST_CASE("an error names step, path and errno in one line") {
  Error e = sys_error("mount proc on", "/proc", EPERM);
  CHECK(e.message() == "mount proc on /proc: Operation not permitted");
  CHECK(e.exit_code() == 125);
}

TEST_CASE("usage errors name the option and the problem") {
  Error e = usage_error("--writable", "not an absolute path");
  e.path = "rel/dir";
  CHECK(e.message() == "--writable rel/dir: not an absolute path");
  CHECK(e.kind == ErrorKind::usage);
  CHECK(e.exit_code() == 125);
}

TEST_CASE("exec failures map to 126 and 127") {
  Error missing = sys_error("exec", "nope", ENOENT);
  missing.kind = ErrorKind::not_found;
  CHECK(missing.exit_code() == 127);
  Error denied = sys_error("exec", "/x", EACCES);
  denied.kind = ErrorKind::not_exec;
  CHECK(denied.exit_code() == 126);
}

TEST_CASE("an error crosses the channel whole") {
  Error e{"bind /src on", EACCES, "/dest", "some detail", ErrorKind::not_exec};
  auto back = decode_error(encode(e));
  REQUIRE(back);
  CHECK(back->step == e.step);
  CHECK(back->err == e.err);
  CHECK(back->path == e.path);
  CHECK(back->detail == e.detail);
  CHECK(back->kind == e.kind);
  CHECK_FALSE(decode_error(encode(e).substr(0, 7)));
  CHECK_FALSE(decode_error(""));
}

TEST_CASE("flags print by name") {
  CHECK(clone_flag_names(CLONE_NEWUSER | CLONE_NEWPID) == "CLONE_NEWUSER|CLONE_NEWPID");
  CHECK(clone_flag_names(0) == "0");
  CHECK(mount_attr_names(0x1 | 0x2) == "rdonly|nosuid");
  CHECK(mount_attr_names(0x100) == "0x100");
}
