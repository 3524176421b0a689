// --network proxy on the Landlock rung, the pure parts: what a
// connect() address is judged to be, what the rung's filter refuses, and
// what the ruleset handles. No kernel.
#include <catch2/catch_test_macros.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "landlock/abi.hpp"
#include "landlock/ruleset.hpp"
#include "net/connector.hpp"
#include "seccomp/rules.hpp"

using namespace nsrun;
using nsrun::egress::judge_target;
using nsrun::egress::Target;

namespace {

constexpr uint16_t P = 41234;

sockaddr_storage v4(const char* text, uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, text, &a.sin_addr);
  return s;
}

sockaddr_storage v6(const char* text, uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in6&>(s);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  ::inet_pton(AF_INET6, text, &a.sin6_addr);
  return s;
}

Policy proxy_policy() {
  Policy p;
  p.mode = Mode::workspace_write;
  p.workspace = "/w";
  p.network = Network::proxy;
  return p;
}

std::optional<int> socket_call(const FilterSpec& spec, uint64_t family, uint64_t type, uint64_t protocol = 0) {
  return decide(spec, "socket", {family, type, protocol, 0, 0, 0});
}

}  // namespace

TEST_CASE("connect(): only the proxy's loopback address and port are the proxy", "[unit][egress]") {
  CHECK(judge_target(v4("127.0.0.1", P), sizeof(sockaddr_in), AF_INET, P).kind == Target::Kind::proxy);
  // The port-only hole of Landlock: the proxy's port on any other address.
  for (const char* other : {"198.18.0.1", "127.0.0.2", "0.0.0.0", "198.18.0.3"}) {
    INFO(other);
    const Target t = judge_target(v4(other, P), sizeof(sockaddr_in), AF_INET, P);
    CHECK(t.kind == Target::Kind::refused);
    CHECK(t.address == other);
    CHECK(t.port == P);
  }
  CHECK(judge_target(v4("127.0.0.1", P + 1), sizeof(sockaddr_in), AF_INET, P).kind == Target::Kind::refused);
  // IPv6 sockets: ::1 and the IPv4-mapped loopback; nothing else.
  CHECK(judge_target(v6("::1", P), sizeof(sockaddr_in6), AF_INET6, P).kind == Target::Kind::proxy);
  CHECK(judge_target(v6("::ffff:127.0.0.1", P), sizeof(sockaddr_in6), AF_INET6, P).kind == Target::Kind::proxy);
  CHECK(judge_target(v6("::ffff:198.18.0.1", P), sizeof(sockaddr_in6), AF_INET6, P).kind == Target::Kind::refused);
  CHECK(judge_target(v6("::", P), sizeof(sockaddr_in6), AF_INET6, P).kind == Target::Kind::refused);
  CHECK(judge_target(v6("::127.0.0.1", P), sizeof(sockaddr_in6), AF_INET6, P).kind == Target::Kind::refused);
  // What the kernel would refuse itself: short, or of the other family.
  CHECK(judge_target(v4("127.0.0.1", P), sizeof(sockaddr_in) - 1, AF_INET, P).err == EINVAL);
  CHECK(judge_target(v4("127.0.0.1", P), 0, AF_INET, P).err == EINVAL);
  CHECK(judge_target(v6("::1", P), 20, AF_INET6, P).err == EINVAL);
  CHECK(judge_target(v4("127.0.0.1", P), sizeof(sockaddr_storage), AF_INET6, P).err == EAFNOSUPPORT);
  CHECK(judge_target(v6("::1", P), sizeof(sockaddr_in6), AF_INET, P).err == EAFNOSUPPORT);
  sockaddr_storage unspec{};
  CHECK(judge_target(unspec, sizeof(sockaddr), AF_INET, P).kind == Target::Kind::disconnect);
}

TEST_CASE("the Landlock rung's proxy filter: TCP only, no fast open, connect and listen to nsrun", "[unit][egress][seccomp]") {
  const FilterSpec spec = filter_spec(proxy_policy(), FilterRung::landlock);
  for (int family : {AF_INET, AF_INET6}) {
    INFO(family);
    CHECK(socket_call(spec, family, SOCK_STREAM) == std::nullopt);
    CHECK(socket_call(spec, family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP) == std::nullopt);
    CHECK(socket_call(spec, family, SOCK_DGRAM) == EPERM);
    CHECK(socket_call(spec, family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP) == EPERM);
    CHECK(socket_call(spec, family, SOCK_RAW, IPPROTO_ICMP) == EPERM);
    CHECK(socket_call(spec, family, SOCK_SEQPACKET) == EPERM);
    CHECK(socket_call(spec, family, 0) == EPERM);
    CHECK(socket_call(spec, family, SOCK_STREAM, IPPROTO_SCTP) == EPERM);
    CHECK(socket_call(spec, family, SOCK_STREAM, 262) == EPERM);  // IPPROTO_MPTCP
    for (uint64_t protocol = 1; protocol < 6; ++protocol) CHECK(socket_call(spec, family, SOCK_STREAM, protocol) == EPERM);
    CHECK(socket_call(spec, family, SOCK_STREAM, (1ULL << 32) | IPPROTO_TCP) == EPERM);
  }
  CHECK(socket_call(spec, AF_UNIX, SOCK_STREAM) == std::nullopt);
  CHECK(socket_call(spec, AF_UNIX, SOCK_DGRAM) == std::nullopt);
  CHECK(socket_call(spec, AF_NETLINK, SOCK_RAW) == std::nullopt);
  for (uint64_t family : std::initializer_list<uint64_t>{AF_UNSPEC, AF_PACKET, AF_VSOCK, AF_BLUETOOTH, AF_CAN, AF_TIPC, AF_RDS, AF_SMC, AF_XDP, AF_KEY,
                          AF_APPLETALK, AF_X25, 3, 15, 17, 255, 1ULL << 32 | AF_INET})
    CHECK(socket_call(spec, family, SOCK_STREAM).has_value());
  CHECK(decide(spec, "sendto", {3, 0, 10, MSG_FASTOPEN, 0, 0}) == EPERM);
  CHECK(decide(spec, "sendto", {3, 0, 10, MSG_NOSIGNAL, 0, 0}) == std::nullopt);
  CHECK(decide(spec, "sendmsg", {3, 0, MSG_FASTOPEN | MSG_NOSIGNAL, 0, 0, 0}) == EPERM);
  CHECK(decide(spec, "sendmmsg", {3, 0, 1, MSG_FASTOPEN, 0, 0}) == EPERM);
  // Answered by nsrun; the errno is what the command gets if nothing does.
  for (auto call : {"connect", "listen"}) {
    auto it = std::find_if(spec.rules.begin(), spec.rules.end(), [&](const Rule& r) { return r.syscall == call; });
    REQUIRE(it != spec.rules.end());
    CHECK(it->notify);
    CHECK(it->always);
    CHECK(it->err == EACCES);
  }
  // Whatever --seccomp says: the promise rests on them.
  Policy log = proxy_policy();
  log.seccomp = SeccompMode::log;
  const FilterSpec logged = filter_spec(log, FilterRung::landlock);
  CHECK(socket_call(logged, AF_INET, SOCK_DGRAM) == EPERM);
  const FilterSpec n = notify_spec(logged);
  REQUIRE(n.enabled);
  Policy none = proxy_policy();
  none.seccomp = SeccompMode::none;
  CHECK(socket_call(filter_spec(none, FilterRung::landlock), AF_INET6, SOCK_DGRAM) == EPERM);
  // Not on the namespace rung, which has its own network namespace.
  CHECK(socket_call(filter_spec(proxy_policy(), FilterRung::namespaces), AF_INET, SOCK_DGRAM) == std::nullopt);
}

TEST_CASE("the namespace rung's proxy filter refuses ptrace and process_vm_*", "[unit][egress][seccomp]") {
  for (SeccompMode mode : {SeccompMode::standard, SeccompMode::log, SeccompMode::none}) {
    Policy p = proxy_policy();
    p.seccomp = mode;
    const FilterSpec spec = filter_spec(p, FilterRung::namespaces);
    for (auto call : {"ptrace", "process_vm_readv", "process_vm_writev"}) {
      INFO(call);
      CHECK(decide(spec, call, {16, 1, 0, 0, 0, 0}) == EPERM);
      auto it = std::find_if(spec.rules.begin(), spec.rules.end(), [&](const Rule& r) { return r.syscall == call; });
      REQUIRE(it != spec.rules.end());
      CHECK(it->always);
    }
  }
  Policy share = proxy_policy();
  share.network = Network::share;
  CHECK(decide(filter_spec(share, FilterRung::namespaces), "ptrace", {16, 1, 0, 0, 0, 0}) == std::nullopt);
}

TEST_CASE("the Landlock rung keeps --network proxy from ABI 4: TCP connect and bind refused, no port rule", "[unit][egress][landlock]") {
  for (int abi = 1; abi <= 3; ++abi) {
    auto r = landlock::make_ruleset(proxy_policy(), abi, {});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().item.starts_with("--network proxy"));
  }
  for (int abi = 4; abi <= 7; ++abi) {
    INFO(abi);
    auto r = landlock::make_ruleset(proxy_policy(), abi, {});
    REQUIRE(r.has_value());
    CHECK(r->handled_net == (landlock::net::bind_tcp | landlock::net::connect_tcp));
    // The filter keeps UDP and the rest: not dropped.
    CHECK(std::find(r->dropped.begin(), r->dropped.end(), "network-other") == r->dropped.end());
    CHECK(std::find(r->dropped.begin(), r->dropped.end(), "network-tcp") == r->dropped.end());
    // resolv.conf's stub lives in a network namespace: not a mount here.
    CHECK(landlock::cannot_express(proxy_policy()).empty());
  }
}

TEST_CASE("the Landlock rung points the proxy environment at its port, and only what nsrun set", "[unit][egress]") {
  std::vector<std::string> env = {"PATH=/usr/bin", "HTTP_PROXY=http://proxy.corp:8080"};
  for (const auto& [key, value] : egress::proxy_environment("", egress::proxy_port))
    if (key != "HTTP_PROXY") env.push_back(key + "=" + value);
  egress::retarget_proxy_environment(env, 40001);
  CHECK(env[0] == "PATH=/usr/bin");
  CHECK(env[1] == "HTTP_PROXY=http://proxy.corp:8080");  // the policy's own (--setenv)
  for (const auto& [key, value] : egress::proxy_environment("", 40001))
    if (key != "HTTP_PROXY") CHECK(std::find(env.begin(), env.end(), key + "=" + value) != env.end());
  CHECK(std::find(env.begin(), env.end(), "ALL_PROXY=socks5h://127.0.0.1:40001") != env.end());
  for (const auto& e : env) CHECK(e.find("3128") == std::string::npos);
}
