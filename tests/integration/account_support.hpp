// The caller's account as the tests make it: a home of the test's own, in
// a password database of the test's own, bound over /etc/passwd (and
// nsswitch.conf) by the outer helper around nsrun, so the account's home
// is where nsrun looks for hidden credentials whatever $HOME says
// (hidden_credentials_test.cpp, settings_copy_gitconfig_test.cpp).
#pragma once

#include "harness.hpp"

#include <unistd.h>

#include <string>
#include <vector>

namespace nsrun_test {

struct Account {
  TempDir home{"acct-home"};
  TempDir etc{"acct-etc"};

  // `entry`: whether the database has the caller's uid at all.
  explicit Account(bool entry = true) {
    const std::string line = entry ? "acct:x:" + std::to_string(::getuid()) + ":" + std::to_string(::getgid()) +
                                         ":test account:" + home.path() + ":/bin/sh\n"
                                   : "";
    // Another uid's entry either way, so the file is a real database.
    write_file(etc / "passwd", line + "other:x:4242:4242::/nonexistent:/bin/sh\n");
    // Files only: nss-systemd would otherwise answer for uid 0 itself.
    write_file(etc / "nsswitch.conf", "passwd: files\ngroup: files\n");
  }

  // nsrun ARGS where the password database is ours.
  std::vector<std::string> argv(const std::vector<std::string>& args) const {
    std::vector<std::string> out = {probe_path(), "outer", ::getuid() == 0 ? "--mountns" : "--userns-self",
                                    "--bind-file", etc / "passwd", "/etc/passwd",
                                    "--bind-file", etc / "nsswitch.conf", "/etc/nsswitch.conf",
                                    "--", nsrun_path()};
    out.insert(out.end(), args.begin(), args.end());
    return out;
  }
};

}  // namespace nsrun_test
