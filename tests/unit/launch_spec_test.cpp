// What `nsrun explain --backend landlock` prints is the Landlock rung's own
// spec (landlock::describe of the ruleset the launch installs), pure: no
// kernel needed.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "landlock/ruleset.hpp"
#include "policy/policy.hpp"

using namespace nsrun;
using namespace nsrun::landlock;

namespace {

Policy workspace_policy(std::string ws) {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = std::move(ws);
  return p;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.starts_with(line + "\n") || text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("the Landlock ruleset as explain prints it: each path with its rights", "[unit][landlock][explain]") {
  auto r = make_ruleset(workspace_policy("/w"), 7, Inputs{{"/dev/pts/3"}, {}});
  REQUIRE(r);
  const std::string text = describe(*r);
  INFO(text);
  CHECK(has_line(text, "landlock: ABI 7, enforcement full"));
  CHECK(has_line(text, "landlock allows /: execute read-file read-dir (read and execute everywhere)"));
  CHECK(has_line(text, "landlock allows /dev/pts/3 (if it exists): write-file read-file truncate ioctl-dev (device)"));
  CHECK(has_line(text, "landlock allows /w: every handled right (writable root; opened through no symlink)"));
  CHECK(has_line(text, "landlock allows the private TMPDIR (made at launch under $TMPDIR): every handled right"));
  CHECK(has_line(text, "landlock scopes (nothing outside the sandbox reachable): signals, abstract unix sockets"));
  CHECK(has_line(text, "not enforced at this ABI: none"));
  CHECK(has_line(text, "refused everywhere, writable roots too: file-metadata, sysv-ipc, posix-mqueue"));
  // No network rule unless --network none asks for one; no mount at all.
  CHECK(text.find("network") == std::string::npos);
  CHECK(text.find("mount") == std::string::npos);
}

TEST_CASE("the Landlock ruleset at ABI 1 names what the ABI drops", "[unit][landlock][explain]") {
  Policy p = workspace_policy("/w");
  p.network = Network::none;
  auto r = make_ruleset(p, 1, {});
  REQUIRE(r);
  const std::string text = describe(*r);
  INFO(text);
  CHECK(has_line(text, "landlock: ABI 1, enforcement partial"));
  CHECK(has_line(text, "landlock handles: execute write-file read-file read-dir remove-dir remove-file make-char "
                       "make-dir make-reg make-sock make-fifo make-block make-sym"));
  CHECK(has_line(text, "landlock scopes (nothing outside the sandbox reachable): none"));
  CHECK(has_line(text, "not enforced at this ABI: truncate, network-tcp, network-other, ioctl-dev, scope-signal, "
                       "scope-abstract-unix"));
  // ABI 1 handles no network right: nothing is claimed.
  CHECK(text.find("landlock network") == std::string::npos);
}
