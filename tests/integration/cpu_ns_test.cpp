// What the CPU cuts of the namespace rung rest on,
// observed through a launch.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// The errno (a number) of open_tree_attr (Linux 6.15, number 467 on
// x86_64) with flags no kernel accepts: the kernel answers EINVAL (22), or
// ENOSYS (38) where it has no such call, before it looks at capabilities;
// only a seccomp filter answers EPERM (1). Perl's syscall() passes the
// registers as given.
const char* const open_tree_attr_script =
    "my $p = \"/\"; my $r = syscall(467, -100, $p, 0xffffffff, 0, 0); print(($r < 0 ? $! + 0 : 0), \"\\n\");";

}  // namespace

TEST_CASE("open_tree_attr, which nsrun's set-up now uses, is refused to the command on both rungs",
          "[cpu-ns][seccomp]") {
  if (::access("/usr/bin/perl", X_OK) != 0) unavailable("perl", "no /usr/bin/perl to make the raw system call");
  // Outside any sandbox: the kernel's own answer, so the test can tell a
  // refusal by the filter from one by the kernel.
  RunResult outside = run({"/usr/bin/perl", "-e", open_tree_attr_script});
  REQUIRE(outside.exit_code == 0);
  REQUIRE(outside.out != "1\n");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    if (rung == Rung::namespaces) require_userns();
    else require_landlock();
    TempDir ws;
    std::vector<std::string> args = rung_options(rung);
    args.insert(args.end(), {"--", "/usr/bin/perl", "-e", open_tree_attr_script});
    RunResult r = nsrun(args, at(ws));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "1\n");
  }
}
