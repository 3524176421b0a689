// git's config files hold settings and, sometimes, a secret among them (a
// credential helper printing a token, an Authorization header, a URL with
// a password, an include of another file). The namespace rung shows a
// read-only copy without every entry that could hold one, so git still
// sees user.name and the aliases; the Landlock rung hides such a file
// whole; --no-settings-copy hides it whole on both; a file without one is
// shown as it is. Each secret is read by every spelling the test knows,
// and the host files are as they were after.
//
// The account's home is one the test makes (see hidden_credentials_test.cpp:
// nsrun runs where /etc/passwd names it for the caller's uid).
#include "account_support.hpp"
#include "harness.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

const std::string ordinary = "[user]\n\tname = Ada Tester\n\temail = ada@example.org\n[alias]\n\tst = status -sb\n";

// Every spelling of a secret entry the test knows, each holding SECRET.
const std::string secrets =
    "[credential]\n\thelper = \"!f() { echo password=SECRET-1; }; f\"\n"
    "[Credential \"https://example.org\"]\n\tHelper=/opt/bin/helper SECRET-2\n"
    "[http \"https://x.example\"]\n\textraHeader = Authorization: Bearer SECRET-3 # a comment\n"
    "[url \"https://user:SECRET-4@github.com/\"]\n\tinsteadOf = https://github.com/\n"
    "[GitHub]\n\tTOKEN=SEC\\\nRET-5\n"
    "[hub]\n\toauthtoken = \"SECRET\" \"-6\" ; a comment\n"
    "[sendemail]\n\tsmtpPass = SECRET-7\n"
    "[remote \"o\"]\n\turl = https://SECRET-8@example.org/r.git\n"
    "[include]\n\tpath = inc.cfg\n"
    "[includeIf \"gitdir:/\"]\n\tpath = ~/inc2.cfg\n";

struct Setup {
  Account acct;
  TempDir xdg{"xdg"};
  TempDir ws{"ws"};
  TempDir state{"state"};
  RunOptions opts;
  Setup() {
    opts = at(ws);
    opts.clear_env = true;
    opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + state.path(), "HOME=" + acct.home.path(),
                "XDG_CONFIG_HOME=" + xdg.path()};
  }
  // Reads each name by every spelling, then asks git.
  std::string script(const std::vector<std::string>& names) const {
    std::string s = "for f in";
    for (const auto& n : names) s += " " + shell_quote(n);
    s += "; do cat \"$f\" \"/proc/self/root$f\" \"$(dirname \"$f\")/./$(basename \"$f\")\"; done 2>/dev/null; "
         "echo \"name=$(git config user.name 2>/dev/null)\"; "
         "echo \"alias=$(git config alias.st 2>/dev/null)\"; "
         "echo \"xdg=$(git config alias.co 2>/dev/null)\"; "
         "echo x >> " + shell_quote(acct.home / ".gitconfig") + " 2>/dev/null && echo WROTE; echo end";
    return s;
  }
  RunResult run_in(Rung rung, const std::vector<std::string>& extra, const std::string& sh) const {
    return run(acct.argv(concat(rung_options(rung), concat(extra, {"--", "sh", "-c", sh}))), opts);
  }
};

void gitconfig_copy(Rung rung) {
  Setup s;
  const std::string& h = s.acct.home.path();
  const std::string gitconfig = ordinary + secrets;
  write_file(h + "/.gitconfig", gitconfig, 0600);
  write_file(h + "/inc.cfg", "[github]\n\tuser = SECRET-inc\n", 0600);
  write_file(h + "/inc2.cfg", "[include]\n\tpath = inc3.cfg\n", 0600);
  write_file(h + "/inc3.cfg", "SECRET-inc3\n", 0600);
  make_dir(s.xdg / "git", 0700);
  write_file(s.xdg / "git/config", "[alias]\n\tco = checkout\n[github]\n\ttoken = SECRET-xdg\n", 0600);
  make_dir(h + "/.config", 0700);
  make_dir(h + "/.config/git", 0700);
  write_file(h + "/.config/git/config", "[color]\n\tui = auto\n", 0600);
  const std::vector<std::string> names = {h + "/.gitconfig", h + "/inc.cfg", h + "/inc2.cfg", h + "/inc3.cfg",
                                          s.xdg / "git/config", h + "/.config/git/config"};
  RunResult r = s.run_in(rung, {}, s.script(names));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("SECRET") == std::string::npos);
  CHECK(r.out.find("WROTE") == std::string::npos);
  CHECK(r.out.ends_with("end\n"));
  // A file without a secret is shown as it is, on both rungs.
  CHECK(r.out.find("[color]\n\tui = auto\n") != std::string::npos);
  if (rung == Rung::namespaces) {
    CHECK(r.out.find("name=Ada Tester\n") != std::string::npos);
    CHECK(r.out.find("alias=status -sb\n") != std::string::npos);
    CHECK(r.out.find("xdg=checkout\n") != std::string::npos);
    CHECK(r.out.find("# a copy by nsrun: 8 entries that could hold a credential left out\n") != std::string::npos);
  } else {
    CHECK(r.out.find("name=Ada Tester") == std::string::npos);
    CHECK(r.out.find("xdg=checkout") == std::string::npos);
  }
  RunResult whole = s.run_in(rung, {"--no-settings-copy"}, s.script(names));
  INFO(whole.out << whole.err);
  CHECK(whole.exit_code == 0);
  CHECK(whole.out.find("SECRET") == std::string::npos);
  CHECK(whole.out.find("Ada Tester") == std::string::npos);
  CHECK(whole.out.find("[color]\n\tui = auto\n") != std::string::npos);
  RunResult explained = run(s.acct.argv({"explain"}), s.opts);
  INFO(explained.out << explained.err);
  CHECK(explained.out.find(h + "/.gitconfig (namespace rung: a read-only copy without its credential lines; "
                               "Landlock rung: hidden whole") != std::string::npos);
  // Included files by the same rule: inc.cfg and inc3.cfg (no git syntax)
  // hidden, inc2.cfg (only an include) shown.
  CHECK(explained.out.find(h + "/inc.cfg (namespace rung") != std::string::npos);
  CHECK(explained.out.find(h + "/inc3.cfg (namespace rung") != std::string::npos);
  CHECK(explained.out.find(h + "/inc2.cfg") == std::string::npos);
  CHECK(explained.out.find(h + "/.config/git/config") == std::string::npos);
  CHECK(read_file(h + "/.gitconfig") == gitconfig);
}
NSRUN_BOTH_RUNGS("[credentials]", "git config: a copy keeps its settings, not its secrets", "[settings-copy]",
                 gitconfig_copy)

// ~/.gitconfig a symlink to a file of secrets (no git syntax: nothing of
// it kept), then a file too big to look at (hidden whole), then one
// without a secret (shown as it is, no copy).
void gitconfig_odd_files(Rung rung) {
  Setup s;
  const std::string& h = s.acct.home.path();
  write_file(h + "/token.txt", "ghp_SECRET-tok\n", 0600);
  REQUIRE(::symlink((h + "/token.txt").c_str(), (h + "/.gitconfig").c_str()) == 0);
  const std::vector<std::string> names = {h + "/.gitconfig", h + "/token.txt"};
  RunResult linked = s.run_in(rung, {}, s.script(names));
  INFO(linked.out << linked.err);
  CHECK(linked.exit_code == 0);
  CHECK(linked.out.find("SECRET") == std::string::npos);
  CHECK(linked.out.ends_with("end\n"));

  REQUIRE(::unlink((h + "/.gitconfig").c_str()) == 0);
  std::string huge = ordinary + "[alias]\n";
  while (huge.size() < 300 * 1024) huge += "\tx" + std::to_string(huge.size()) + " = log --oneline\n";
  huge += "[github]\n\ttoken = SECRET-big\n";
  write_file(h + "/.gitconfig", huge, 0600);
  RunResult big = s.run_in(rung, {}, s.script({h + "/.gitconfig"}));
  INFO(big.out.substr(0, 400) << big.err);
  CHECK(big.exit_code == 0);
  CHECK(big.out.find("SECRET") == std::string::npos);
  CHECK(big.out.find("Ada Tester") == std::string::npos);

  write_file(h + "/.gitconfig", ordinary, 0600);
  RunResult plain = s.run_in(rung, {}, s.script({h + "/.gitconfig"}));
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find(ordinary) != std::string::npos);
  CHECK(plain.out.find("name=Ada Tester\n") != std::string::npos);
  CHECK(plain.out.find("alias=status -sb\n") != std::string::npos);
  CHECK(plain.out.find("a copy by nsrun") == std::string::npos);
}
NSRUN_BOTH_RUNGS("[credentials]", "git config: a symlink to secrets, a huge file, a file without a secret",
                 "[settings-copy]", gitconfig_odd_files)

// The common set-up: git's own credential store and an include for work.
// Neither is a secret, so git keeps working on both rungs (the Landlock
// rung can only hide a file whole, and git stops on a config it cannot
// read).
void gitconfig_common(Rung rung) {
  Setup s;
  const std::string& h = s.acct.home.path();
  const std::string common = ordinary + "[credential]\n\thelper = store\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/.gitconfig-work\n";
  write_file(h + "/.gitconfig", common, 0600);
  write_file(h + "/.gitconfig-work", "[user]\n\temail = ada@work.example\n", 0600);
  RunResult usual = s.run_in(rung, {}, s.script({h + "/.gitconfig"}));
  INFO(usual.out << usual.err);
  CHECK(usual.exit_code == 0);
  CHECK(usual.out.find(common) != std::string::npos);
  CHECK(usual.out.find("name=Ada Tester\n") != std::string::npos);
  CHECK(usual.out.find("a copy by nsrun") == std::string::npos);
}
NSRUN_BOTH_RUNGS("[credentials]", "git config: git's own credential store and an include leave it shown, git working",
                 "[settings-copy]", gitconfig_common)

}  // namespace
