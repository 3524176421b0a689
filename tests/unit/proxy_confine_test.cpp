// The egress proxy's confinement (net/confine.hpp, seccomp/proxy_filter.hpp):
// what a proxy whose parser was subverted can still do, tried from a
// forked child that loads the same filter and Landlock ruleset. And the
// message that carries the proxy's decisions to nsrun, read strictly.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "net/confine.hpp"
#include "net/egress.hpp"
#include "seccomp/proxy_filter.hpp"

using namespace nsrun;
using namespace nsrun::egress;

namespace {

// Runs `body` in a forked child after `confine`, and returns what it wrote
// to its pipe ("name=errno" words; "0" for success).
template <typename Confine, typename Body>
std::string in_confined_child(Confine confine, Body body) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    if (!confine()) ::_exit(3);
    const std::string out = body();
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO(out);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return out;
}

std::string outcome(const char* name, long r) { return std::string(name) + "=" + std::to_string(r < 0 ? errno : 0) + " "; }

}  // namespace

TEST_CASE("proxy filter: a subverted proxy opens no file, execs, forks, signals and unshares nothing, and still proxies",
          "[unit][egress-confine]") {
  const std::string out = in_confined_child(
      [] { return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && load_filter(proxy_filter()).has_value(); },
      [] {
        std::string o;
        o += outcome("open_read", ::open("/etc/hostname", O_RDONLY | O_CLOEXEC));
        o += outcome("open_create", ::open("/tmp/nsrun-proxy-filter-test", O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
        o += outcome("mkdir", ::mkdir("/tmp/nsrun-proxy-filter-dir", 0700));
        o += outcome("unix", ::socket(AF_UNIX, SOCK_STREAM, 0));
        o += outcome("raw", ::socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
        o += outcome("packet", ::socket(AF_PACKET, SOCK_DGRAM, 0));
        o += outcome("tcp_sctp", ::socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP));
        o += outcome("tcp", ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        o += outcome("udp6", ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        o += outcome("fork", ::fork());
        char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
        o += outcome("execve", ::execve("/bin/true", argv, argv + 1));
        o += outcome("kill", ::kill(::getppid(), 0));
        o += outcome("unshare", ::unshare(CLONE_NEWUSER));
        o += outcome("prctl", ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
        bool ran = false;
        std::thread([&] { ran = true; }).join();
        o += std::string("thread=") + (ran ? "0" : "1") + " ";
        return o;
      });
  INFO(out);
  for (const char* refused : {"open_read", "open_create", "mkdir", "unix", "raw", "packet", "tcp_sctp", "fork", "execve", "kill",
                              "unshare", "prctl"})
    CHECK(out.find(std::string(refused) + "=" + std::to_string(EPERM) + " ") != std::string::npos);
  for (const char* allowed : {"tcp", "udp6", "thread"}) CHECK(out.find(std::string(allowed) + "=0 ") != std::string::npos);
  struct stat st{};
  CHECK(::stat("/tmp/nsrun-proxy-filter-test", &st) != 0);
}

TEST_CASE("proxy confinement: Landlock alone already refuses every path, for reading too", "[unit][egress-confine]") {
  auto c = prepare_proxy_confinement();
  REQUIRE(c);
  if (!c->landlock) SKIP("no Landlock in this kernel: the filter alone keeps files out (the test above)");
  const std::string out = in_confined_child([&] { return confine_proxy_files(*c).has_value(); },
                                            [] {
                                              std::string o;
                                              o += outcome("open_read", ::open("/etc/hostname", O_RDONLY | O_CLOEXEC));
                                              o += outcome("open_dir", ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
                                              o += outcome("tcp", ::socket(AF_INET, SOCK_STREAM, 0));
                                              return o;
                                            });
  CHECK(out.find("open_read=" + std::to_string(EACCES)) != std::string::npos);
  CHECK(out.find("open_dir=" + std::to_string(EACCES)) != std::string::npos);
  CHECK(out.find("tcp=0") != std::string::npos);
}

TEST_CASE("proxy decisions: what the proxy sends is read back whole, anything else refused", "[unit][egress-confine]") {
  Decision d;
  d.protocol = "http-connect";
  d.host = "a.test";
  d.port = 443;
  d.address = "198.18.0.1";
  d.decision = "allowed";
  d.rule = "*.test";
  d.cnames = {"b.test", "c.test"};
  const std::string m = encode_decision(d);
  auto back = decode_decision(m);
  REQUIRE(back);
  CHECK(back->protocol == d.protocol);
  CHECK(back->host == d.host);
  CHECK(back->port == 443);
  CHECK(back->address == d.address);
  CHECK(back->decision == "allowed");
  CHECK(back->reason.empty());
  CHECK(back->rule == d.rule);
  CHECK(back->cnames == d.cnames);
  CHECK(back->count == 1);
  // Every cut is refused, and so is a byte more.
  for (std::size_t n = 0; n < m.size(); ++n) CHECK_FALSE(decode_decision(std::string_view(m).substr(0, n)));
  CHECK_FALSE(decode_decision(m + "x"));
  Decision other = d;
  other.decision = "maybe";
  CHECK_FALSE(decode_decision(encode_decision(other)));
  // A field is cut at max_decision_field, never sent longer.
  other = d;
  other.host = std::string(5000, 'h');
  back = decode_decision(encode_decision(other));
  REQUIRE(back);
  CHECK(back->host.size() == max_decision_field);
  CHECK(encode_decision(other).size() <= max_decision_message);
}
