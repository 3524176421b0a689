// `--network proxy`: the command's only way out of its network
// namespace. The sandbox's first process makes the listeners inside the
// namespace (127.0.0.1:3128 for HTTP and SOCKS, 127.0.0.1:53 for DNS over
// UDP and TCP) and hands them to nsrun over a socketpair (SCM_RIGHTS);
// nsrun passes them to the proxy, a process of its own outside every
// namespace the command is in, confined as a sandboxed command is (it
// parses the command's bytes: net/confine.hpp). So no socket of nsrun's
// listens where another host process could reach it, nothing the command
// can ptrace, signal or replace carries its traffic, and every connection
// leaves from the host to an address the proxy resolved and checked
// against the rules itself. The
// Landlock rung has no network namespace: there nsrun makes the one
// listener on the host's loopback and answers the command's connect()
// itself (net/connector.hpp).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "policy/hosts.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::json {
struct Value;  // policy/json.hpp, for the callers that build or read JSON
}  // namespace nsrun::json

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
  // The Landlock rung's listener is on the host's loopback, where any host
  // process can connect (net/connector.hpp): when set, the proxy serves a
  // peer only from 127.0.0.1 and a source port announced (announce()),
  // once; others are closed unserved (and recorded).
  bool announced_peers_only = false;
};

// A decision as the proxy process sends it to nsrun (one SOCK_SEQPACKET
// message), and nsrun's strict reading of it: nsrun trusts the proxy with
// its decisions, never with its own memory. Fields are cut at
// max_decision_field bytes, CNAMEs at max_decision_cnames.
inline constexpr std::size_t max_decision_field = 1024;
inline constexpr std::size_t max_decision_cnames = 16;
inline constexpr std::size_t max_decision_message = 3 + 2 * 1024 * (6 + 16) + 1 + 64;
std::string encode_decision(const Decision& d);
std::optional<Decision> decode_decision(std::string_view message);

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

// Parent side. The proxy runs in a process of its own, forked from nsrun
// at the first connection or query (a session's: at once, before the
// session's thread starts; the fork must come from a process of one
// thread) and confined (net/confine.hpp): it
// holds the listeners, the sockets it makes and one control socket to
// nsrun, over which it sends its decisions. stop() ends it (every
// connection) and returns the decisions.
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
  // Called in nsrun with each decision as it is recorded (a session's
  // per-exec attribution), under the proxy's lock: it must not call back.
  void observe(std::function<void(const Decision&)> observer);
  // A function that returns once nsrun has recorded every decision the
  // proxy sent so far (the proxy sends a refusal before it answers the
  // client), or after its argument's milliseconds (false then). It holds
  // the proxy's state: callable after stop() and this object's end.
  std::function<bool(int max_ms)> settler();
  // The Landlock rung: a source port nsrun bound for the command's
  // connection to the proxy (`made`), or gave up (announced_peers_only).
  void announce(uint16_t port, bool made);
  ~Egress();

  struct State;

 private:
  explicit Egress(std::shared_ptr<State> s) : state_(std::move(s)) {}
  static Result<std::unique_ptr<Egress>> start(const EgressConfig& config, Fd from_sandbox, Fd given);
  std::shared_ptr<State> state_;
};

}  // namespace nsrun::egress
