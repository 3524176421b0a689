// nsrun's own resolver, for the egress proxy. getaddrinfo()
// would pull glibc's NSS into the static binary (some 400 KB, and NSS
// dlopens shared libraries a one-binary microVM image does not have), and
// it cannot tell which CNAMEs led to an address. This one reads
// /etc/hosts and /etc/resolv.conf's nameservers and asks them for A and
// AAAA over UDP (TCP when the answer is truncated), following CNAMEs.
//
// Names are absolute (the proxy's canonical form): no search list, no
// ndots. The pure halves (the two files, the messages) are unit-tested on
// hostile input; the exchange is the one place with sockets.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/hosts.hpp"

namespace nsrun::resolve {

struct Server {
  hosts::Address address;
  uint16_t port = 53;

  bool operator==(const Server&) const = default;
};

// What /etc/resolv.conf says that matters here. As glibc: no nameserver
// line means 127.0.0.1; at most three servers are used; `options
// timeout:N` (seconds per try, at most 30) and `attempts:N` (rounds over
// the servers, at most 5).
struct Config {
  std::vector<Server> servers;
  int timeout_ms = 5000;
  int attempts = 2;
};
Config parse_resolv_conf(std::string_view text);

// The addresses /etc/hosts gives `name` (canonical: lower case, no
// trailing dot), in file order, each once. Lines name a canonical name
// and aliases after the address; `#` starts a comment.
std::vector<hosts::Address> hosts_lookup(std::string_view hosts_text, std::string_view name);

inline constexpr uint16_t type_a = 1, type_cname = 5, type_aaaa = 28;
inline constexpr int rcode_nxdomain = 3;
// CNAMEs followed from the asked name, in one reply and across queries.
inline constexpr int max_cname_hops = 8;

// A recursive query (RD set) for `name` (canonical) of `type`; one question.
std::string build_query(uint16_t id, std::string_view name, uint16_t type);

// A reply to the query (id, name, type), read whole or refused: the id,
// the QR bit, the opcode and the one question must match; every record
// must fit the packet; names may be compressed, but each pointer must
// point before the name that holds it (so no loop) and a name is at most
// 255 bytes. Of the answer section only records of class IN that extend
// the chain from `name` count: a CNAME whose owner is the name reached so
// far moves it on; an A/AAAA of the name reached so far is an address.
// Other records (for names the question did not lead to) are ignored: a
// server cannot plant answers for a name nobody asked about.
struct Reply {
  int rcode = 0;
  bool truncated = false;
  std::vector<std::string> cnames;         // the chain, in order (targets, canonical)
  std::vector<hosts::Address> addresses;   // of the chain's end; of `type`
};
std::expected<Reply, std::string> parse_reply(std::string_view packet, uint16_t id, std::string_view name, uint16_t type);

// A dotted name read from `packet` at `at` (compression allowed, as
// above); `at` is left just past the name where it is stored. Lower-cased.
std::expected<std::string, std::string> read_name(std::string_view packet, std::size_t& at);

struct Resolution {
  std::vector<hosts::Address> addresses;  // IPv4 first, each once
  std::vector<std::string> cnames;        // the CNAME chain from the asked name
  std::string error;                      // when no address: why ("nxdomain", "timeout", ...)
};

// Resolves `name` (canonical) to its A and AAAA addresses: /etc/hosts
// first, then the servers of `config`, all within `deadline_ms` of now.
Resolution resolve(std::string_view name, std::string_view hosts_text, const Config& config, int deadline_ms);

// The host's /etc/hosts and /etc/resolv.conf (empty / defaults when absent).
std::string read_hosts_file();
Config read_resolv_conf();

}  // namespace nsrun::resolve
