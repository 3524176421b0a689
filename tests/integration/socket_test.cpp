// Host pathname sockets. A listening unix socket on the
// host is a door out of the sandbox (the container engine's socket is a
// root shell), and `--network none` does not close it: it is a file.
//
// Each test makes its own listening socket in a fresh directory, and points
// $SSH_AUTH_SOCK at it when it must be one of the well-known sockets (the
// list itself is unit-tested with a given environment: no test creates or
// touches a real well-known socket). What the tests assert on the host: the
// listener's accept queue, after nsrun has exited, holds exactly the
// connections the sandbox was allowed to make; no socket file appears where
// the sandbox was refused a bind.
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

// A listening socket at `path`; connections stay queued until counted.
class HostListener {
 public:
  explicit HostListener(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path_.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
  }
  ~HostListener() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;

  const std::string& path() const { return path_; }

  // Accepts what is queued: the connections made since the last call.
  int connections() {
    int n = 0;
    while (true) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      ::close(c);
      ++n;
    }
    return n;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::vector<std::string> with_env(const std::string& ssh_auth_sock) {
  return {"SSH_AUTH_SOCK=" + ssh_auth_sock};
}

RunResult probe(Rung rung, const std::vector<std::string>& options, const std::vector<std::string>& args,
                const TempDir& cwd, const std::string& ssh_auth_sock) {
  std::vector<std::string> argv = rung_options(rung);
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.push_back(probe_path());
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions opts = at(cwd);
  opts.env = with_env(ssh_auth_sock);
  return nsrun(argv, opts);
}

// `--allow-socket` for every well-known socket this host has, so the
// Landlock rung (which refuses AF_UNIX while any is hidden) can be shown
// reaching a socket at all.
std::vector<std::string> allow_host_sockets(const TempDir& cwd, const std::string& ssh_auth_sock) {
  RunOptions opts = at(cwd);
  opts.env = with_env(ssh_auth_sock);
  RunResult r = nsrun({"policy"}, opts);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  const std::size_t start = r.out.find("\"hidden_sockets\": [");
  REQUIRE(start != std::string::npos);
  const std::size_t end = r.out.find(']', start);
  std::size_t at = r.out.find('"', start + 19);
  while (at < end) {
    const std::size_t close = r.out.find('"', at + 1);
    out.push_back("--allow-socket");
    out.push_back(r.out.substr(at + 1, close - at - 1));
    at = r.out.find('"', close + 1);
  }
  return out;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void check_refused(const RunResult& r, std::string_view errno_name) {
  INFO("stdout: " << r.out << "stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(chomp(r.out) == fmt::format("error {}", errno_name));
}

void check_ok(const RunResult& r) {
  INFO("stdout: " << r.out << "stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(chomp(r.out) == "ok");
}

}  // namespace

TEST_CASE("a well-known host socket is hidden by default, --network none or not; --allow-socket shows it",
          "[sockets]") {
  TempDir ws("sock");
  HostListener agent(ws / "agent.sock");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    for (const char* network : {"share", "none"}) {
      INFO((rung == Rung::namespaces ? "namespaces" : "landlock") << ", --network " << network);
      RunResult r = probe(rung, {"--network", network}, {"connect-unix", agent.path()}, ws, agent.path());
      // Covered by /dev/null on the namespace rung (not a socket: refused);
      // no AF_UNIX socket at all on the Landlock rung.
      check_refused(r, rung == Rung::namespaces ? "ECONNREFUSED" : "EACCES");
      CHECK(agent.connections() == 0);
    }
    std::vector<std::string> allow = {"--allow-socket", agent.path()};
    if (rung == Rung::landlock) allow = concat(allow, allow_host_sockets(ws, agent.path()));
    check_ok(probe(rung, allow, {"connect-unix", agent.path()}, ws, agent.path()));
    CHECK(agent.connections() == 1);
  }
}

TEST_CASE("--unix-sockets none: no pathname socket reached or made, socketpair works", "[sockets]") {
  TempDir ws("sock");
  HostListener service(ws / "service.sock");
  const std::string elsewhere = ws / "no-agent";
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    INFO((rung == Rung::namespaces ? "namespaces" : "landlock"));
    // Control: a socket that is not on the list is reachable by default
    // (on the Landlock rung once the host's listed ones are allowed).
    const std::vector<std::string> allow = rung == Rung::landlock ? allow_host_sockets(ws, elsewhere)
                                                                  : std::vector<std::string>{};
    check_ok(probe(rung, allow, {"connect-unix", service.path()}, ws, elsewhere));
    CHECK(service.connections() == 1);

    const std::vector<std::string> none = concat({"--unix-sockets", "none"}, allow);
    check_refused(probe(rung, none, {"connect-unix", service.path()}, ws, elsewhere), "EACCES");
    CHECK(service.connections() == 0);
    check_refused(probe(rung, none, {"bind-unix", ws / "made.sock"}, ws, elsewhere), "EACCES");
    CHECK_FALSE(file_exists(ws / "made.sock"));
    // Stricter than "outside the private /tmp": no AF_UNIX socket at all.
    check_refused(probe(rung, none, {"bind-unix", "/tmp/made.sock"}, ws, elsewhere), "EACCES");
    check_ok(probe(rung, none, {"socketpair"}, ws, elsewhere));
  }
}

TEST_CASE("--network none alone does not close an unlisted pathname socket (as documented)", "[sockets]") {
  TempDir ws("sock");
  HostListener service(ws / "service.sock");
  check_ok(probe(Rung::namespaces, {"--network", "none"}, {"connect-unix", service.path()}, ws, ws / "none"));
  CHECK(service.connections() == 1);
  check_refused(probe(Rung::namespaces, {"--network", "none", "--unix-sockets", "none"},
                      {"connect-unix", service.path()}, ws, ws / "none"),
                "EACCES");
  CHECK(service.connections() == 0);
}

TEST_CASE("unix_sockets in a policy file, and what explain says", "[sockets]") {
  TempDir ws("sock");
  HostListener service(ws / "service.sock");
  write_file(ws / "policy.json", R"({"unix_sockets": "none"})");
  check_refused(probe(Rung::namespaces, {"--policy", ws / "policy.json"}, {"connect-unix", service.path()}, ws,
                      ws / "none"),
                "EACCES");
  CHECK(service.connections() == 0);

  RunOptions opts = at(ws);
  opts.env = with_env(service.path());
  RunResult listed = nsrun({"explain", "--", "true"}, opts);
  CHECK(listed.exit_code == 0);
  CHECK(listed.out.find(fmt::format("bind /dev/null -> {} (cover, if present) [rdonly|nosuid|nodev|noexec]",
                                    service.path())) !=
        std::string::npos);
  CHECK(listed.out.find("unix sockets: hide-known") != std::string::npos);
  RunResult none = nsrun({"explain", "--unix-sockets", "none", "--", "true"}, opts);
  CHECK(none.out.find("unix sockets: none") != std::string::npos);
}

TEST_CASE("a listed socket out of the sandbox's reach is left alone, not a failed launch", "[sockets]") {
  // Root started with another user's $SSH_AUTH_SOCK (su without -): the
  // socket's directory is that user's, mode 0700. Root inside the user
  // namespace (uid 0 only mapped) may not search it, so neither nsrun's
  // cover nor the command reaches the socket.
  if (::getuid() != 0) SKIP("needs root: a directory owned by another uid");
  require_userns();
  TempDir ws("sock");
  make_dir(ws / "other");
  HostListener agent(ws / "other/agent.sock");
  REQUIRE(::chown((ws / "other").c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod((ws / "other").c_str(), 0700) == 0);
  RunResult r = probe(Rung::namespaces, {}, {"connect-unix", agent.path()}, ws, agent.path());
  check_refused(r, "EACCES");
  CHECK(agent.connections() == 0);
  REQUIRE(::chmod((ws / "other").c_str(), 0755) == 0);
}

TEST_CASE("$XDG_RUNTIME_DIR: the session bus and gpg-agent's directory are hidden", "[sockets]") {
  TempDir ws("sock");
  make_dir(ws / "rt");
  make_dir(ws / "rt/gnupg");
  HostListener bus(ws / "rt/bus");
  HostListener gpg(ws / "rt/gnupg/S.gpg-agent");
  for (Rung rung : {Rung::namespaces, Rung::landlock}) {
    INFO((rung == Rung::namespaces ? "namespaces" : "landlock"));
    std::vector<std::string> argv = rung_options(rung);
    for (const std::string& target : {bus.path(), gpg.path()}) {
      std::vector<std::string> run = argv;
      run.push_back("--");
      run.push_back(probe_path());
      run.push_back("connect-unix");
      run.push_back(target);
      RunOptions opts = at(ws);
      opts.env = {"XDG_RUNTIME_DIR=" + ws / "rt", "SSH_AUTH_SOCK=" + ws / "none"};
      RunResult r = nsrun(run, opts);
      // The bus: /dev/null over it; gpg-agent's directory: an empty tmpfs.
      const char* want = rung == Rung::landlock ? "EACCES" : target == bus.path() ? "ECONNREFUSED" : "ENOENT";
      check_refused(r, want);
    }
    CHECK(bus.connections() == 0);
    CHECK(gpg.connections() == 0);
  }
}
