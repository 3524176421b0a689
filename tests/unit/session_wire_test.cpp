// Sessions' pure parts: the names a session may have, where its socket and
// logs go for a given environment, and the message framing that both the
// control socket and PID 1's socketpair use (bounded, at most 3 fds, one
// JSON object per packet; anything else is refused, its fds closed).
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "session/paths.hpp"
#include "session/wire.hpp"

using namespace nsrun;
using namespace nsrun::session;

TEST_CASE("session names: 1 to 64 of [A-Za-z0-9._-], no leading '.' or '-'", "[session]") {
  for (const char* ok : {"a", "web", "my-session_1.2", "A"}) CHECK(valid_name(ok));
  for (const char* bad : {"", ".", "..", ".hidden", "-x", "a/b", "a b", "a\nb", "é"}) CHECK_FALSE(valid_name(bad));
  CHECK(valid_name(std::string(64, 'a')));
  CHECK_FALSE(valid_name(std::string(65, 'a')));
}

TEST_CASE("session places: the runtime directory for sockets, the state directory for logs", "[session]") {
  Places p = places_from("/run/user/1000", "/home/u/.state", "/home/u");
  CHECK(p.sockets == "/run/user/1000/nsrun/sessions");
  CHECK(p.state == "/home/u/.state/nsrun/sessions");
  p = places_from("", "", "/home/u");
  CHECK(p.state == "/home/u/.local/state/nsrun/sessions");
  CHECK(p.sockets == "/home/u/.local/state/nsrun/sessions/sockets");
  // Relative values are ignored (XDG base directory rules).
  p = places_from("run", "state", "home");
  CHECK(p.sockets.empty());
  CHECK(p.state.empty());
}

namespace {
struct Pair {
  Fd a, b;
  Pair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};
bool open_fd(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }
}  // namespace

TEST_CASE("session messages: a JSON object and its fds arrive whole", "[session]") {
  Pair p;
  json::Value v = json::Value::object();
  v.set("op", "exec");
  v.set("argv", strings_value({"sh", "-c", "echo \"x\""}));
  const int fds[3] = {0, 1, 2};
  REQUIRE(send_message(p.a.get(), v, fds));
  auto m = receive_message(p.b.get(), 3);
  REQUIRE(m);
  CHECK(m->value == v);
  REQUIRE(m->fds.size() == 3);
  CHECK((::fcntl(m->fds[0].get(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(*strings_field(m->value, "argv") == std::vector<std::string>{"sh", "-c", "echo \"x\""});
  p.a.reset();
  auto eof = receive_message(p.b.get(), 3);
  REQUIRE(eof);
  CHECK(eof->eof);
}

TEST_CASE("session messages: too many fds, too large, not an object: refused, fds closed", "[session]") {
  SECTION("fds beyond what the receiver allows (PID 1 may send none)") {
    Pair p;
    const int fds[1] = {0};
    REQUIRE(send_message(p.a.get(), json::Value::object(), fds));
    auto m = receive_message(p.b.get(), 0);
    CHECK_FALSE(m);
    // The received fd was closed with the refusal: the next free number is
    // the lowest again.
    const int probe = ::dup(0);
    CHECK(probe >= 0);
    CHECK_FALSE(open_fd(probe + 1));
    ::close(probe);
  }
  SECTION("a packet larger than a message") {
    Pair p;
    const int size = 1024 * 1024;
    REQUIRE(::setsockopt(p.a.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size) == 0);
    const std::string big(max_message + 10, ' ');
    REQUIRE(::send(p.a.get(), big.data(), big.size(), 0) == static_cast<ssize_t>(big.size()));
    CHECK_FALSE(receive_message(p.b.get(), 3));
  }
  SECTION("text that is not one JSON object") {
    for (std::string text : {"[1,2]", "\"x\"", "{\"a\":", "nonsense"}) {
      Pair p;
      REQUIRE(::send(p.a.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
      CHECK_FALSE(receive_message(p.b.get(), 3));
    }
  }
  SECTION("hostile fields read as absent, never a throw") {
    auto v = json::parse(R"({"job":"1","argv":[1,2],"env":"x","cwd":5})");
    REQUIRE(v);
    CHECK_FALSE(int_field(*v, "job"));
    CHECK_FALSE(strings_field(*v, "argv"));
    CHECK_FALSE(strings_field(*v, "env"));
    CHECK(string_field(*v, "cwd") == nullptr);
    CHECK_FALSE(bool_field(json::Value(3), "x"));
  }
}
