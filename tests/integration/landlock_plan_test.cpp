// The Landlock rung's plan with fewer system calls.
// Each shortcut is held here to the assumption it rests on, so that the
// test breaks when the assumption does.
#include "harness.hpp"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

#include "landlock/abi.hpp"
#include "landlock/kernel.hpp"
#include "landlock/ruleset.hpp"
#include "launch/landlock_rung.hpp"
#include "launch/protect_watch.hpp"

using namespace nsrun_test;

namespace {

// In a child: the ruleset of `rule` alone restricts it, then it lists
// `dir` and reads `file`. Returns (listing worked, reading worked).
std::pair<bool, bool> try_under(const nsrun::landlock::PathRule& rule, const std::string& dir, const std::string& file) {
  using namespace nsrun::landlock;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Ruleset r;
    r.abi = 1;
    r.handled_fs = fs::read_file | fs::read_dir;
    r.rules = {rule};
    auto fd = build(r);
    if (!fd) ::_exit(90);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(91);
    if (!restrict_self(fd->get())) ::_exit(92);
    DIR* d = ::opendir(dir.c_str());
    const bool listed = d != nullptr;
    if (d != nullptr) ::closedir(d);
    const int f = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    const bool read = f >= 0;
    if (f >= 0) ::close(f);
    ::_exit((listed ? 1 : 0) | (read ? 2 : 0));
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) < 4);
  return {(WEXITSTATUS(status) & 1) != 0, (WEXITSTATUS(status) & 2) != 0};
}

// A listed file's rule skips the fstat and masks its rights to the file
// rights. If a directory took the file's place between the listing and
// the rule, the kernel must accept the rule and grant it no listing: fewer
// rights than a directory's rule, never more than planned.
TEST_CASE("landlock plan: a rule planned for a file grants a directory in its place no listing",
          "[landlock][startup]") {
  require_landlock();
  using namespace nsrun::landlock;
  TempDir t("llplan");
  make_dir(t / "was-a-file");
  write_file(t / "was-a-file/inner", "inner\n");
  const uint64_t reading = fs::read_file | fs::read_dir;

  PathRule as_file{t / "was-a-file", reading, false, "test", true, false, true};
  auto [listed, read] = try_under(as_file, t / "was-a-file", t / "was-a-file/inner");
  CHECK_FALSE(listed);
  CHECK(read);  // read-file is a file right: kept beneath, as for any directory rule holding it

  // The control: the same rule without the shortcut (an fstat finds the
  // directory) lists it, so the refusal above is the mask's doing.
  PathRule looked_up{t / "was-a-file", reading, false, "test", true, false, false};
  auto [listed2, read2] = try_under(looked_up, t / "was-a-file", t / "was-a-file/inner");
  CHECK(listed2);
  CHECK(read2);
}

// The rung's list of protected paths to snapshot reuses the launch's scan
// only when it was made for the same writable roots and protected set; a
// scan of another workspace must not hide a protected path in this one.
TEST_CASE("landlock plan: the protected paths to snapshot never come from a scan made for other roots",
          "[landlock][startup][protect]") {
  require_landlock();
  TempDir ws("llplan-ws");
  TempDir other("llplan-other");
  make_dir(ws / ".vscode");
  write_file(ws / ".vscode/tasks.json", "{}\n");
  nsrun::Policy p;
  p.mode = nsrun::Mode::workspace_write;
  p.workspace = ws.path();
  nsrun::Policy q = p;
  q.workspace = other.path();

  const nsrun::ProtectWatch of_other = nsrun::watch_protected(q);
  const auto with_other = nsrun::landlock::assess(p, &of_other);
  INFO(with_other.detail);
  const std::pair<std::string, std::string> vscode{ws.path(), ".vscode"};
  CHECK(with_other.reason.empty());
  CHECK(std::find(with_other.snapshot_paths.begin(), with_other.snapshot_paths.end(), vscode) !=
        with_other.snapshot_paths.end());

  const nsrun::ProtectWatch of_ws = nsrun::watch_protected(p);
  const auto with_own = nsrun::landlock::assess(p, &of_ws);
  CHECK(with_own.reason.empty());
  CHECK(std::find(with_own.snapshot_paths.begin(), with_own.snapshot_paths.end(), vscode) !=
        with_own.snapshot_paths.end());

  // Nothing protected in the other workspace: usable, with or without a scan.
  CHECK(nsrun::landlock::assess(q, &of_other).reason.empty());
  CHECK(nsrun::landlock::assess(q).reason.empty());
}

// A writable root through a symlink (nsrun opens it through none) is
// refused before anything starts, naming the option; were the link swapped
// in after that check, the rule would fail while the supervisor starts,
// and the supervisor waits for every rule ('R' on the socket) before the
// command may start. Either way nothing runs and no private TMPDIR is
// left behind.
TEST_CASE("landlock plan: a writable root through a symlink runs nothing and leaves no TMPDIR",
          "[landlock][startup]") {
  require_landlock();
  TempDir ws("llplan-ws");
  TempDir holder("llplan-hold");
  TempDir base("llplan-tmp");
  make_dir(holder / "real");
  REQUIRE(::symlink((holder / "real").c_str(), (holder / "link").c_str()) == 0);
  RunOptions opts = at(ws);
  opts.env.push_back("TMPDIR=" + base.path());
  RunResult r = nsrun_test::nsrun({"--backend", "landlock", "--home", "ro", "--writable", holder / "link", "--", "sh", "-c",
                       "echo RAN; echo x > " + holder / "real/ran"},
                      opts);
  INFO(r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err.find("--writable " + holder / "link" + ": is a symlink") != std::string::npos);
  CHECK(r.out.find("RAN") == std::string::npos);
  CHECK_FALSE(file_exists(holder / "real/ran"));
  DIR* d = ::opendir(base.path().c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> left;
  while (dirent* e = ::readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") left.emplace_back(e->d_name);
  ::closedir(d);
  CHECK(left.empty());

  // The same launch with the resolved path runs, and its TMPDIR goes too.
  RunResult ok = nsrun_test::nsrun({"--backend", "landlock", "--home", "ro", "--writable", holder / "real", "--", "sh", "-c",
                        "echo RAN; echo x > " + holder / "real/ran"},
                       opts);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("RAN") != std::string::npos);
  CHECK(file_exists(holder / "real/ran"));
}

}  // namespace
