// `--network proxy` (issue 13): the command's only way out of its network
// namespace. The sandbox's first process makes the listeners inside the
// namespace (127.0.0.1:3128 for HTTP and SOCKS, 127.0.0.1:53 for DNS over
// UDP and TCP) and hands them to nsrun over a socketpair (SCM_RIGHTS);
// nsrun, outside every namespace the command is in, serves them from a
// thread. So no socket of nsrun's listens where another host process
// could reach it, nothing the command can ptrace, signal or replace
// carries its traffic, and every connection leaves from the host to an
// address nsrun resolved and checked against the rules itself. The
// Landlock rung has no network namespace: there nsrun makes the one
// listener on the host's loopback and answers the command's connect()
// itself (net/connector.hpp).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "policy/hosts.hpp"
#include "policy/json.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::egress {

// Inside the sandbox's own network namespace: no other process can hold
// these ports first.
inline constexpr uint16_t proxy_port = 3128;
inline constexpr uint16_t dns_port = 53;

// One decision, as the report's network.decisions[] and --network-log show it.
struct Decision {
  std::string time;      // RFC 3339, UTC, milliseconds
  std::string protocol;  // "http-connect", "http", "socks5", "socks4", "dns"
  std::string host;      // canonical
  uint16_t port = 0;     // 0 for dns
  std::string address;   // the address connected to (or answered), empty when none
  std::string decision;  // "allowed", "denied", "failed" (allowed, but resolving or connecting failed)
  std::string reason;    // for denied: blocked-by-allowlist, blocked-by-denylist, sni-mismatch, host-mismatch, ...
  std::string rule;      // the rule that decided, when one did
  std::vector<std::string> cnames;  // the CNAME chain the name resolved through, when any
  uint64_t count = 1;    // past the report's first 4096: one entry (host "*") per outcome, counting the rest
};

json::Value to_json(const Decision& d);
// The report's `network` section: the mode, the totals and each decision.
json::Value network_section(const std::vector<Decision>& decisions);

// What the proxy needs, decided before clone.
struct EgressConfig {
  hosts::Rules rules;
  // --resolve-host NAME=ADDRESS: answers for these names instead of the
  // host's resolver (as curl --resolve); the rules still judge the address.
  std::vector<std::pair<std::string, hosts::Address>> pinned;
  int log_fd = -1;  // --network-log, opened before clone; -1: none
  // When set, a connection whose peer this refuses is closed unserved (and
  // recorded): the Landlock rung's listener is on the host's loopback,
  // where any host process can connect (net/connector.hpp).
  std::function<bool(const sockaddr_storage& peer)> admit;
};

Result<std::vector<std::pair<std::string, hosts::Address>>> parse_pins(const std::vector<std::string>& specs);

// The environment the command gets so its tools find the proxy (unless the
// policy sets the variable itself). `self` is nsrun's own path, for ssh's
// ProxyCommand (GIT_SSH_COMMAND); empty: not set.
std::vector<std::pair<std::string, std::string>> proxy_environment(std::string_view self, uint16_t port = proxy_port);

// `nsrun connect HOST PORT`, run inside the sandbox: a CONNECT tunnel
// through the proxy on stdin and stdout, as ssh's ProxyCommand wants.
int connect_main(std::span<const std::string> args);

// Child side, in the new network namespace once `lo` is up: makes the
// listeners and sends them over `to_nsrun`, keeping none.
Result<void> send_listeners(int to_nsrun);

// Parent side. start() runs the proxy in a thread that first receives the
// listeners from the sandbox; stop() ends every connection and the thread
// and returns the decisions.
class Egress {
 public:
  static Result<std::unique_ptr<Egress>> start(const EgressConfig& config, Fd from_sandbox);
  // The Landlock rung: nsrun made the (HTTP and SOCKS) listener itself; no DNS.
  static Result<std::unique_ptr<Egress>> start_on(const EgressConfig& config, Fd proxy_listener);
  // The proxy's thread starts on demand: nsrun's wait loop polls these
  // (the three listeners once the sandbox sent them, else the channel)
  // and calls wake() when one is readable. Empty once woken.
  std::vector<int> wake_fds();
  // Starts the thread (once); false when it could not start, and then the
  // listeners are closed: the sandbox's connections are refused.
  bool wake();
  std::vector<Decision> stop();
  // A decision made outside the proxy (net/connector.hpp), into the same
  // list and log.
  void record(Decision d);
  ~Egress();

  struct State;

 private:
  explicit Egress(std::shared_ptr<State> s) : state_(std::move(s)) {}
  static Result<std::unique_ptr<Egress>> start(const EgressConfig& config, Fd from_sandbox, Fd given);
  std::shared_ptr<State> state_;
};

}  // namespace nsrun::egress
