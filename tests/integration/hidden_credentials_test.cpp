// The default credentials are hidden under the account's home (the password
// database's, for the real uid) as well as under $HOME, whatever $HOME says:
// unset, `/`, `/tmp`, a symlink to the real home, another user's directory.
// Each attack reads every secret by every spelling the test knows and checks
// that no secret byte was printed, then what the report says was hidden.
//
// The account's home is one the test makes: nsrun runs where /etc/passwd
// names it for the caller's uid (a private mount namespace, and for the
// unprivileged user a user namespace mapping it to itself: the same uid,
// no capability after exec), so neither the real /root nor a home of
// nsrun-test's is touched.
#include "account_support.hpp"
#include "harness.hpp"
#include "reported.hpp"
#include "rungs.hpp"

#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// Every default credential, as a file below the home holding "SECRET-n".
const std::vector<std::string> secrets = {
    ".ssh/id_rsa",
    ".npmrc",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".gnupg/private-keys-v1.d/k.key",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".config/op/config",
    ".password-store/forge.gpg",
    ".local/share/keyrings/login.keyring",
    ".mozilla/firefox/p.default/cookies.sqlite",
    ".config/google-chrome/Default/Cookies",
    ".config/chromium/Default/Cookies",
};

// The hidden path each secret is under, as the report lists it.
std::string hidden_entry(const std::string& home, const std::string& rel) {
  for (const char* dir : {".ssh", ".aws", ".config/gcloud", ".kube", ".gnupg", ".config/gh", ".config/op",
                          ".password-store", ".local/share/keyrings", ".mozilla", ".config/google-chrome",
                          ".config/chromium"})
    if (rel.starts_with(std::string(dir) + "/")) return home + "/" + dir + "/";
  return home + "/" + rel;
}

void make_parents(const std::string& base, const std::string& rel) {
  for (std::size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
    if (!file_exists(base + "/" + rel.substr(0, slash))) make_dir(base + "/" + rel.substr(0, slash), 0700);
}

// A home with every default credential in it, and one file that is not.
void fill_home(const TempDir& home, const std::string& tag) {
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    make_parents(home.path(), secrets[i]);
    write_file(home / secrets[i], "SECRET-" + tag + "-" + std::to_string(i) + "\n", 0600);
  }
  write_file(home / ".profile", "visible\n");
}


// A shell script that prints every secret under HOME_DIR it can read, by
// name, through /proc/self/root, through `..` and `.` spellings, and
// through the symlinks LINKS/home (to the home) and LINKS/N (to each file).
std::string read_everything(const std::string& home, const std::string& links) {
  std::string s = "H=" + shell_quote(home) + "; L=" + shell_quote(links) + "; B=$(basename \"$H\"); ";
  s += "for r in";
  for (const auto& rel : secrets) s += " " + shell_quote(rel);
  s += "; do "
       "cat \"$H/$r\" \"/proc/self/root$H/$r\" \"$H/./$r\" \"$H//$r\" \"$H/.config/../$r\" "
       "\"/proc/self/root$H/../$B/$r\" \"/proc/1/root$H/$r\" \"$L/home/$r\" \"/proc/self/root$L/home/$r\"; "
       "done 2>/dev/null; ";
  for (std::size_t i = 0; i < secrets.size(); ++i) s += "cat \"$L/" + std::to_string(i) + "\" 2>/dev/null; ";
  s += "cat \"$H/.profile\"";
  return s;
}

struct Attack {
  const char* name;
  std::string home_env;  // empty: HOME unset
};

void hidden_whatever_home_says(Rung rung) {
  Account acct;
  fill_home(acct.home, "acct");
  TempDir other("other-home");  // another user's directory, with secrets of its own
  fill_home(other, "other");
  TempDir links("links");
  REQUIRE(::symlink(acct.home.path().c_str(), (links / "home").c_str()) == 0);
  for (std::size_t i = 0; i < secrets.size(); ++i)
    REQUIRE(::symlink((acct.home / secrets[i]).c_str(), (links / std::to_string(i)).c_str()) == 0);
  TempDir state("state");
  TempDir ws("ws");
  TempDir out("report");
  const std::string script = read_everything(acct.home.path(), links.path());

  const std::vector<Attack> attacks = {
      {"HOME unset", ""},
      {"HOME=/", "/"},
      {"HOME=/tmp", "/tmp"},
      {"HOME a symlink to the real home", links / "home"},
      {"HOME another user's directory", other.path()},
      {"HOME the real home", acct.home.path()},
  };
  for (const auto& attack : attacks) {
    DYNAMIC_SECTION(attack.name) {
      RunOptions opts = at(ws);
      opts.clear_env = true;
      opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + state.path()};
      if (!attack.home_env.empty()) opts.env.push_back("HOME=" + attack.home_env);
      const std::string report = out / "r.json";
      RunResult r = run(acct.argv(concat(rung_options(rung), {"--report", report, "--", "sh", "-c", script})), opts);
      INFO(r.out << r.err);
      CHECK(r.exit_code == 0);
      CHECK(r.out.find("SECRET") == std::string::npos);
      CHECK(r.out.ends_with("visible\n"));
      // The report names each of the account home's hidden paths (and,
      // with HOME elsewhere, that directory's too).
      REQUIRE(file_exists(report));
      auto doc = nsrun::json::parse(read_file(report));
      REQUIRE(doc);
      const auto* hidden = doc->find("hidden_credentials");
      REQUIRE(hidden != nullptr);
      REQUIRE(hidden->is_array());
      std::vector<std::string> listed;
      for (const auto& v : hidden->as_array()) listed.push_back(v.as_string());
      for (const auto& rel : secrets) {
        const std::string entry = hidden_entry(acct.home.path(), rel);
        CHECK(std::find(listed.begin(), listed.end(), entry) != listed.end());
        if (attack.home_env == other.path()) {
          const std::string theirs = hidden_entry(other.path(), rel);
          CHECK(std::find(listed.begin(), listed.end(), theirs) != listed.end());
        }
      }
      // Nothing of a secret went anywhere: the files are as they were.
      for (std::size_t i = 0; i < secrets.size(); ++i)
        CHECK(read_file(acct.home / secrets[i]) == "SECRET-acct-" + std::to_string(i) + "\n");
    }
  }
  SECTION("control: --hide-defaults none shows them (the attack reads what is there)") {
    RunOptions opts = at(ws);
    opts.clear_env = true;
    opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + state.path()};
    RunResult r = run(acct.argv(concat(rung_options(rung), {"--hide-defaults", "none", "--", "sh", "-c", script})),
                      opts);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    for (std::size_t i = 0; i < secrets.size(); ++i)
      CHECK(r.out.find("SECRET-acct-" + std::to_string(i) + "\n") != std::string::npos);
  }
}
NSRUN_BOTH_RUNGS("[credentials]", "hidden credentials: under the account's home whatever $HOME says", "",
                 hidden_whatever_home_says)

// Neither $HOME nor the password database names a home: there is nowhere
// to hide the credentials in, and nsrun says so rather than hide nothing.
void no_home_refused(Rung rung) {
  Account acct(false);
  TempDir ws("ws");
  RunOptions opts = at(ws);
  opts.clear_env = true;
  opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  const std::vector<std::string> marker = {"--", "sh", "-c", "echo ran > ran"};
  RunResult r = run(acct.argv(concat(rung_options(rung), marker)), opts);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 125);
  CHECK(r.err.starts_with("nsrun: hidden credentials: no home directory"));
  CHECK(count_lines(r.err) == 1);
  CHECK_FALSE(file_exists(ws / "ran"));
  // A relative $HOME names no directory either.
  opts.env.push_back("HOME=relative/home");
  CHECK(run(acct.argv(concat(rung_options(rung), marker)), opts).exit_code == 125);
  CHECK_FALSE(file_exists(ws / "ran"));
  // Said plainly, the command runs.
  RunResult none = run(acct.argv(concat(rung_options(rung), {"--hide-defaults", "none", "--", "sh", "-c",
                                                              "echo ran > ran"})),
                       opts);
  INFO(none.err);
  CHECK(none.exit_code == 0);
  CHECK(file_exists(ws / "ran"));
}
NSRUN_BOTH_RUNGS("[credentials]", "hidden credentials: no home known at all is refused, nothing run", "",
                 no_home_refused)

// ~/.npmrc and ~/.pypirc hold settings beside their tokens. The namespace
// rung shows a read-only copy without every line that could hold a
// secret, so npm's and pip's ordinary settings still apply; the Landlock
// rung hides them whole; --no-settings-copy hides them whole on both.
// Read by every spelling, through a symlink swapped in during the run,
// and the host files are as they were after.
void settings_copies(Rung rung) {
  Account acct;
  const std::string npmrc = "fund=false\n//registry.npmjs.org/:_authToken=SECRET-npm\n_auth=SECRET-npm2\n"
                            "registry=https://u:SECRET-npm3@registry.example/\n; x=SECRET-npm4\n";
  const std::string pypirc = "[distutils]\nindex-servers =\n    pypi\n[pypi]\nusername = __token__\n"
                             "password = pypi-SECRET-py\n";
  write_file(acct.home / ".npmrc", npmrc, 0600);
  write_file(acct.home / ".pypirc", pypirc, 0600);
  TempDir ws("ws");
  TempDir state("state");
  RunOptions opts = at(ws);
  opts.clear_env = true;
  opts.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + state.path(), "HOME=" + acct.home.path()};
  const std::string h = shell_quote(acct.home.path());
  const std::string script =
      "for f in .npmrc .pypirc; do cat " + h + "/$f /proc/self/root" + h + "/$f " + h + "/./$f; done 2>/dev/null; "
      "echo x >> " + h + "/.npmrc 2>/dev/null && echo WROTE; "
      "ln -sf " + h + "/.pypirc " + h + "/.npmrc 2>/dev/null && echo LINKED; echo end";
  auto run_with = [&](const std::vector<std::string>& extra) {
    return run(acct.argv(concat(rung_options(rung), concat(extra, {"--", "sh", "-c", script}))), opts);
  };
  RunResult r = run_with({});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("SECRET") == std::string::npos);
  CHECK(r.out.find("WROTE") == std::string::npos);
  CHECK(r.out.ends_with("end\n"));
  if (rung == Rung::namespaces) {
    CHECK(r.out.find("fund=false\n") != std::string::npos);
    CHECK(r.out.find("index-servers =\n    pypi\n") != std::string::npos);
  } else {
    CHECK(r.out.find("fund=false") == std::string::npos);
  }
  RunResult whole = run_with({"--no-settings-copy"});
  INFO(whole.out << whole.err);
  CHECK(whole.exit_code == 0);
  CHECK(whole.out.find("SECRET") == std::string::npos);
  CHECK(whole.out.find("fund=false") == std::string::npos);
  // explain says which rung shows a copy and which hides it whole.
  RunResult explained = run(acct.argv({"explain"}), opts);
  INFO(explained.out << explained.err);
  CHECK(explained.out.find(acct.home.path() + "/.npmrc (namespace rung: a read-only copy without its credential "
                           "lines; Landlock rung: hidden whole") != std::string::npos);
  CHECK(read_file(acct.home / ".npmrc") == npmrc);
  CHECK(read_file(acct.home / ".pypirc") == pypirc);
}
NSRUN_BOTH_RUNGS("[credentials]", "hidden credentials: a settings file's copy keeps its settings, not its secrets",
                 "[settings-copy]", settings_copies)

}  // namespace
