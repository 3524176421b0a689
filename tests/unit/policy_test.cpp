#include <catch2/catch_test_macros.hpp>

#include <unistd.h>

#include "cli/native.hpp"
#include "policy/env.hpp"
#include "policy/policy_json.hpp"
#include "policy/presets.hpp"
#include "policy/validate.hpp"
#include "probe/backend.hpp"

using namespace nsrun;
using K = MountOp::Kind;

namespace {
CallerContext ctx() {
  CallerContext c;
  c.cwd = "/tmp";
  return c;
}

Result<Invocation> parse(std::vector<std::string> args, CallerContext c = ctx()) { return parse_native(args, c); }
}  // namespace

TEST_CASE("workspace-write preset: ro root, dev, proc, private tmp, then writable roots") {
  Policy p;
  p.workspace = "/work/ws";
  p.writable = {"/cache"};
  auto m = preset_mounts(p);
  REQUIRE(m.size() == 6);
  CHECK((m[0].kind == K::ro_bind && m[0].source == "/" && m[0].dest == "/"));
  CHECK(m[1].kind == K::dev);
  CHECK(m[2].kind == K::proc);
  CHECK((m[3].kind == K::tmpfs && m[3].dest == "/tmp"));
  CHECK((m[4].kind == K::bind && m[4].source == "/work/ws" && m[4].dest == "/work/ws"));
  CHECK((m[5].kind == K::bind && m[5].dest == "/cache"));
}

TEST_CASE("read-only preset binds the workspace read-only after the private tmp") {
  Policy p;
  p.mode = Mode::read_only;
  p.workspace = "/tmp/ws";
  auto m = preset_mounts(p);
  REQUIRE(m.size() == 5);
  CHECK((m[4].kind == K::ro_bind && m[4].dest == "/tmp/ws"));
}

TEST_CASE("full-access and preset-off expand to nothing; own mounts follow the preset") {
  Policy p;
  p.workspace = "/w";
  p.mounts.push_back(mount_op(K::ro_bind, "/w/.git", "/w/.git"));
  CHECK(effective_mounts(p).back().dest == "/w/.git");
  p.mode = Mode::full_access;
  CHECK(preset_mounts(p).empty());
  p.mode = Mode::read_only;
  p.preset = false;
  CHECK(effective_mounts(p).size() == 1);
}

TEST_CASE("proc none drops /proc from the preset") {
  Policy p;
  p.workspace = "/w";
  p.proc = ProcMode::none;
  for (const auto& m : preset_mounts(p)) CHECK(m.kind != K::proc);
}

TEST_CASE("native options fill the policy") {
  auto inv = parse({"--mode", "read-only", "--workspace=/srv", "--ro", "/srv/.git", "--setenv", "A", "1",
                    "--unsetenv", "B", "--clearenv", "--proc", "fresh", "--as-pid-1", "--", "sh", "-c", "x"});
  REQUIRE(inv);
  const Policy& p = inv->policy;
  CHECK(p.mode == Mode::read_only);
  CHECK(p.workspace == "/srv");
  REQUIRE(p.mounts.size() == 1);
  CHECK((p.mounts[0].kind == K::ro_bind && p.mounts[0].source == "/srv/.git"));
  REQUIRE(p.env.size() == 2);
  CHECK((p.env[0] == EnvOp{EnvOp::Kind::set, "A", "1"}));
  CHECK(p.clearenv);
  CHECK(p.proc == ProcMode::fresh);
  CHECK(p.as_pid_1);
  CHECK(p.argv == std::vector<std::string>{"sh", "-c", "x"});
}

TEST_CASE("the command starts at the first non-option; the workspace defaults to the cwd") {
  auto inv = parse({"echo", "--mode", "x"});
  REQUIRE(inv);
  CHECK(inv->policy.argv == std::vector<std::string>{"echo", "--mode", "x"});
  CHECK(inv->policy.workspace == "/tmp");
  CHECK(inv->action == Invocation::Action::run);
}

TEST_CASE("subcommands policy and explain") {
  CHECK(parse({"policy", "--mode", "read-only"})->action == Invocation::Action::policy);
  CHECK(parse({"explain", "--", "true"})->action == Invocation::Action::explain);
  CHECK(parse({"--", "policy"})->action == Invocation::Action::run);
}

TEST_CASE("bad options are usage errors naming the option") {
  auto unknown = parse({"--frobnicate", "x"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().step == "--frobnicate");
  CHECK(unknown.error().kind == ErrorKind::usage);
  auto mode = parse({"--mode", "loose"});
  REQUIRE_FALSE(mode);
  CHECK(mode.error().message().starts_with("--mode: unknown value 'loose'"));
  auto missing = parse({"--writable"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().step == "--writable");
  auto fd = parse({"--pass-fd", "x1"});
  REQUIRE_FALSE(fd);
  CHECK(fd.error().step == "--pass-fd");
}

TEST_CASE("validation: command, paths, conflicts") {
  Policy p;
  p.workspace = "/tmp";
  CHECK(validate(p, false));
  auto no_cmd = validate(p, true);
  REQUIRE_FALSE(no_cmd);
  CHECK(no_cmd.error().step == "command");

  p.argv = {"true"};
  p.writable = {"relative/dir"};
  auto rel = validate(p, true);
  REQUIRE_FALSE(rel);
  CHECK(rel.error().message() == "--writable relative/dir: not an absolute path");

  p.writable = {"/no/such/dir/nsrun-test"};
  auto missing = validate(p, true);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message() == "--writable /no/such/dir/nsrun-test: No such file or directory");

  p.writable = {"/tmp"};
  p.mode = Mode::read_only;
  auto conflict = validate(p, true);
  REQUIRE_FALSE(conflict);
  CHECK(conflict.error().step == "--writable");

  p = Policy{};
  p.workspace = "/tmp";
  p.argv = {"true"};
  p.chdir = "sub";
  CHECK_FALSE(validate(p, true));
  p.chdir = "/";
  p.mounts.push_back(mount_op(K::ro_bind, "/no/such/source", "/x"));
  CHECK_FALSE(validate(p, true));
  p.mounts.back().optional = true;
  CHECK(validate(p, true));
}

TEST_CASE("policy JSON round trip is exact") {
  Policy p;
  p.mode = Mode::read_only;
  p.workspace = "/w";
  p.writable = {};
  p.mounts = {mount_op(K::tmpfs, "", "/scratch"), mount_op(K::ro_bind_data, "", "/etc/motd"),
              mount_op(K::bind, "/a", "/b")};
  p.mounts[0].perms = 0700;
  p.mounts[0].size = 1 << 20;
  p.mounts[1].data = "hello\n";
  p.mounts[2].optional = true;
  p.ns.net = true;
  p.uid = 0;
  p.proc = ProcMode::host_bind;
  p.host_backend = "lakebox";
  p.network = Network::none;
  p.env = {EnvOp{EnvOp::Kind::set, "A", "b c"}, EnvOp{EnvOp::Kind::deny, "AWS_*", ""}};
  p.new_session = true;
  p.pass_fds = {5};
  p.argv = {"sh", "-c", "echo \"hi\""};
  auto back = from_json(to_json(p));
  REQUIRE(back);
  CHECK(*back == p);
  auto again = json::parse(json::dump(to_json(p)));
  REQUIRE(again);
  CHECK(*from_json(*again) == p);
}

TEST_CASE("policy JSON is strict about fields and types") {
  auto unknown = from_json(*json::parse(R"({"mode": "read-only", "moed": 1})"));
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message() == "policy field 'moed': unknown field");
  auto type = from_json(*json::parse(R"({"writable": "/x"})"));
  REQUIRE_FALSE(type);
  CHECK(type.error().message() == "policy field 'writable': expected array of strings, got string");
  auto nested = from_json(*json::parse(R"({"mounts": [{"kind": "tmpfs", "dest": "/x", "perms": "99"}]})"));
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message() == "policy field 'mounts[0].perms': '99' is not an octal mode");
  auto value = from_json(*json::parse(R"({"proc": "sometimes"})"));
  REQUIRE_FALSE(value);
  CHECK(value.error().message() == "policy field 'proc': unknown value 'sometimes'");
  auto kindless = from_json(*json::parse(R"({"mounts": [{"dest": "/x"}]})"));
  REQUIRE_FALSE(kindless);
}

TEST_CASE("fields absent from JSON keep the base; later options override the file") {
  Policy base;
  base.hostname = "keep";
  auto p = from_json(*json::parse(R"({"mode": "full-access"})"), base);
  REQUIRE(p);
  CHECK(p->hostname == "keep");
  CHECK(p->mode == Mode::full_access);
}

TEST_CASE("environment: clear, allow, deny, then set and unset in order") {
  const std::vector<std::string> host = {"PATH=/bin", "HOME=/root", "AWS_SECRET=x", "AWS_REGION=eu", "LANG=C"};
  Policy p;
  CHECK(resolve_env(p, host) == host);
  p.env = {EnvOp{EnvOp::Kind::deny, "AWS_*", ""}, EnvOp{EnvOp::Kind::set, "HOME", "/w"},
           EnvOp{EnvOp::Kind::unset, "LANG", ""}};
  CHECK(resolve_env(p, host) == std::vector<std::string>{"PATH=/bin", "HOME=/w"});
  p.env = {EnvOp{EnvOp::Kind::allow, "PATH", ""}, EnvOp{EnvOp::Kind::allow, "AWS_*", ""},
           EnvOp{EnvOp::Kind::deny, "AWS_SECRET", ""}};
  CHECK(resolve_env(p, host) == std::vector<std::string>{"PATH=/bin", "AWS_REGION=eu"});
  p.clearenv = true;
  p.env = {EnvOp{EnvOp::Kind::set, "A", "1"}};
  CHECK(resolve_env(p, host) == std::vector<std::string>{"A=1"});
  CHECK(std::string(env_lookup(host, "HOME")) == "/root");
  CHECK(env_lookup(host, "HOM") == nullptr);
}

TEST_CASE("host backend: explicit name wins, normalised; marker otherwise") {
  CHECK(detect_backend(std::string("  LakeBox  "), false) == "lakebox");
  CHECK(detect_backend(std::string("bare"), true) == "bare");
  CHECK(detect_backend(std::nullopt, true) == "lakebox");
  CHECK(detect_backend(std::nullopt, false).empty());
  CHECK(proc_bind_allowed("lakebox"));
  CHECK_FALSE(proc_bind_allowed("bare"));
  CHECK(resolve_proc_mode(ProcMode::automatic, "lakebox") == ProcMode::host_bind);
  CHECK(resolve_proc_mode(ProcMode::automatic, "") == ProcMode::fresh);
  CHECK(resolve_proc_mode(ProcMode::fresh, "lakebox") == ProcMode::fresh);
}

TEST_CASE("front end resolves the host backend from option, variable, marker") {
  CallerContext c = ctx();
  c.host_backend_env = " LAKEBOX";
  CHECK(parse({"true"}, c)->policy.host_backend == "lakebox");
  CHECK(parse({"--host-backend", "bare", "true"}, c)->policy.host_backend == "bare");
  c.host_backend_env.reset();
  c.lakebox_marker = true;
  CHECK(parse({"true"}, c)->policy.host_backend == "lakebox");
}

// A writable `/` must not cover the private /dev, /proc
// and /tmp (its bind is recursive and brings the host's along).
TEST_CASE("a writable / is bound before the private /dev, /proc and /tmp, with /sys read-only") {
  for (int variant = 0; variant < 2; ++variant) {
    Policy p;
    p.workspace = variant == 0 ? "/" : "/work/ws";
    if (variant == 1) p.writable = {"/cache", "/"};
    auto m = preset_mounts(p);
    REQUIRE(m.size() >= 6);
    CHECK((m[0].kind == K::ro_bind && m[0].dest == "/"));
    CHECK((m[1].kind == K::bind && m[1].source == "/" && m[1].dest == "/"));
    CHECK((m[2].kind == K::ro_bind && m[2].source == "/sys" && m[2].dest == "/sys" && m[2].optional));
    CHECK(m[3].kind == K::dev);
    CHECK(m[4].kind == K::proc);
    CHECK((m[5].kind == K::tmpfs && m[5].dest == "/tmp"));
    // `/` is bound once, and never after the private mounts.
    std::size_t roots = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i].kind == K::bind && m[i].dest == "/") {
        ++roots;
        CHECK(i == 1);
      }
    CHECK(roots == 1);
    if (variant == 1) {
      REQUIRE(m.size() == 8);
      CHECK((m[6].kind == K::bind && m[6].dest == "/work/ws"));
      CHECK((m[7].kind == K::bind && m[7].dest == "/cache"));
    }
  }
}

TEST_CASE("a writable / with --proc none keeps the host's /proc read-only, as under the read-only root") {
  Policy p;
  p.workspace = "/";
  p.proc = ProcMode::none;
  auto m = preset_mounts(p);
  REQUIRE(m.size() == 6);
  CHECK((m[1].kind == K::bind && m[1].dest == "/"));
  CHECK((m[3].kind == K::ro_bind && m[3].source == "/proc" && m[3].dest == "/proc" && m[3].optional));
  for (const auto& op : m) CHECK(op.kind != K::proc);
}

TEST_CASE("read-only mode from / does not bind / again over the private mounts") {
  Policy p;
  p.mode = Mode::read_only;
  p.workspace = "/";
  auto m = preset_mounts(p);
  REQUIRE(m.size() == 4);
  CHECK(m.back().kind == K::tmpfs);
}

TEST_CASE("started from /, workspace-write needs --workspace or --writable / said outright") {
  CallerContext root = ctx();
  root.cwd = "/";
  auto implicit = parse({"--", "true"}, root);
  REQUIRE_FALSE(implicit);
  CHECK(implicit.error().kind == ErrorKind::usage);
  CHECK(implicit.error().message().starts_with("--workspace: the current directory is /"));
  CHECK(parse({"--mode", "read-only", "--", "true"}, root));
  CHECK(parse({"--mode", "full-access", "--", "true"}, root));
  auto named = parse({"--writable", "/", "--", "true"}, root);
  REQUIRE(named);
  CHECK(named->policy.workspace == "/");
  CHECK(parse({"--workspace", "/", "--", "true"}, root));
  CHECK(parse({"--workspace", "/tmp", "--", "true"}, root));
}

TEST_CASE("validation: no writable root resolves to / by another name, or reaches into /proc, /sys, /dev") {
  Policy p;
  p.workspace = "/tmp";
  p.argv = {"true"};
  for (const char* path : {"/.", "//", "/tmp/..", "/proc", "/proc/sys", "/sys", "/sys/fs", "/dev"}) {
    p.writable = {path};
    auto r = validate(p, true);
    INFO(path);
    REQUIRE_FALSE(r);
    CHECK(r.error().step == "--writable");
    CHECK(r.error().kind == ErrorKind::usage);
  }
  p.writable = {"/"};
  CHECK(validate(p, true));
  p.writable = {};
  p.workspace = "/proc";
  auto ws = validate(p, true);
  REQUIRE_FALSE(ws);
  CHECK(ws.error().message() == "--workspace /proc: inside /proc, which the sandbox keeps its own");
}

// The well-known sockets, from a given environment.
namespace {
bool has_path(const std::vector<KnownSocket>& list, std::string_view path, bool dir) {
  return std::any_of(list.begin(), list.end(), [&](const KnownSocket& s) { return s.path == path && s.dir == dir; });
}

// A host with these paths (canonical; /var/run is a symlink to /run).
std::optional<FoundPath> fake_host(const std::string& path) {
  static const std::vector<std::pair<std::string, bool>> present = {
      {"/run/docker.sock", false},       {"/run/dbus/system_bus_socket", false}, {"/run/user/1000/bus", false},
      {"/run/user/1000/gnupg", true},    {"/home/u/.gnupg/S.gpg-agent", false},   {"/tmp/ssh-x/agent.1", false},
      {"/run/user/1000/wayland-0", false}, {"/tmp/.X11-unix", true},
  };
  std::string p = path;
  if (p.starts_with("/var/run/")) p = "/run/" + p.substr(9);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  for (const auto& [q, dir] : present)
    if (q == p) return FoundPath{q, dir};
  return std::nullopt;
}
}  // namespace

TEST_CASE("the well-known host sockets, from the caller's environment") {
  auto bare = well_known_sockets(SocketEnv{});
  CHECK(has_path(bare, "/run/docker.sock", false));
  CHECK(has_path(bare, "/var/run/docker.sock", false));
  CHECK(has_path(bare, "/run/podman/podman.sock", false));
  CHECK(has_path(bare, "/run/containerd/containerd.sock", false));
  CHECK(has_path(bare, "/run/dbus/system_bus_socket", false));
  CHECK(has_path(bare, "/tmp/.X11-unix", true));
  for (const auto& s : bare) CHECK(s.path.starts_with("/"));

  auto env = well_known_sockets(SocketEnv{"/run/user/1000/", "/tmp/ssh-x/agent.1", "/home/u"});
  CHECK(has_path(env, "/run/user/1000/bus", false));
  CHECK(has_path(env, "/run/user/1000/podman/podman.sock", false));
  CHECK(has_path(env, "/run/user/1000/gnupg", true));
  CHECK(has_path(env, "/run/user/1000/wayland-0", false));
  CHECK(has_path(env, "/tmp/ssh-x/agent.1", false));
  CHECK(has_path(env, "/home/u/.gnupg/S.gpg-agent", false));
  CHECK(has_path(env, "/home/u/.gnupg/S.gpg-agent.ssh", false));
  // Relative or empty variables name nothing.
  auto relative = well_known_sockets(SocketEnv{"run/user", "agent.sock", ""});
  CHECK(relative.size() == bare.size());
}

TEST_CASE("sockets to hide: those that exist, canonical, once, minus --allow-socket") {
  auto candidates = well_known_sockets(SocketEnv{"/run/user/1000", "/tmp/ssh-x/agent.1", "/home/u"});
  auto hidden = sockets_to_hide(candidates, {}, {}, fake_host);
  const std::vector<std::string> want = {"/run/docker.sock",   "/run/dbus/system_bus_socket", "/tmp/.X11-unix/",
                                         "/run/user/1000/bus", "/run/user/1000/gnupg/",       "/run/user/1000/wayland-0",
                                         "/tmp/ssh-x/agent.1", "/home/u/.gnupg/S.gpg-agent"};
  CHECK(hidden == want);
  // --allow-socket takes one out, by any name of it; a policy file's own stay.
  auto allowed = sockets_to_hide(candidates, {"/srv/app.sock"}, {"/var/run/docker.sock", "/run/user/1000/gnupg/"},
                                 fake_host);
  CHECK(allowed.front() == "/srv/app.sock");
  CHECK(std::find(allowed.begin(), allowed.end(), "/run/docker.sock") == allowed.end());
  CHECK(std::find(allowed.begin(), allowed.end(), "/run/user/1000/gnupg/") == allowed.end());
  CHECK(allowed.size() == want.size() - 2 + 1);
  // A candidate of the wrong kind (a directory where a socket was expected) is not one.
  auto wrong = sockets_to_hide({KnownSocket{"/tmp/.X11-unix", false, "x"}}, {}, {}, fake_host);
  CHECK(wrong.empty());
}

TEST_CASE("the front end records the sockets to hide; --unix-sockets and --allow-socket") {
  CallerContext c = ctx();
  c.socket_env = SocketEnv{"/run/user/1000", "/tmp/ssh-x/agent.1", "/home/u"};
  c.lookup = fake_host;
  auto inv = parse({"--allow-socket", "/tmp/ssh-x/agent.1", "--", "true"}, c);
  REQUIRE(inv);
  CHECK(inv->policy.unix_sockets == UnixSockets::hide_known);
  CHECK(inv->policy.allow_sockets == std::vector<std::string>{"/tmp/ssh-x/agent.1"});
  CHECK(inv->policy.hidden_sockets.size() == 7);
  CHECK(std::find(inv->policy.hidden_sockets.begin(), inv->policy.hidden_sockets.end(), "/tmp/ssh-x/agent.1") ==
        inv->policy.hidden_sockets.end());
  auto none = parse({"--unix-sockets", "none", "--", "true"}, c);
  REQUIRE(none);
  CHECK(none->policy.unix_sockets == UnixSockets::none);
  auto bad = parse({"--unix-sockets", "some", "--", "true"}, c);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().step == "--unix-sockets");
  auto full = parse({"--mode", "full-access", "--", "true"}, c);
  REQUIRE(full);
  CHECK(full->policy.hidden_sockets.empty());
  // Without a way to ask the host (the other tests' context), nothing exists.
  CHECK(parse({"--", "true"})->policy.hidden_sockets.empty());
}

TEST_CASE("policy JSON carries the socket settings") {
  Policy p;
  p.unix_sockets = UnixSockets::none;
  p.hidden_sockets = {"/run/docker.sock", "/run/user/1000/gnupg/"};
  p.allow_sockets = {"/run/user/1000/bus"};
  auto back = from_json(to_json(p));
  REQUIRE(back);
  CHECK(*back == p);
  auto doc = json::parse(R"({"unix_sockets": "hide-known"})");
  REQUIRE(doc);
  CHECK(from_json(*doc)->unix_sockets == UnixSockets::hide_known);
  auto wrong = json::parse(R"({"unix_sockets": "all"})");
  REQUIRE(wrong);
  CHECK_FALSE(from_json(*wrong));
}

TEST_CASE("validation: with the preset, no policy mount binds over / (it would cover /proc, /dev, /tmp)") {
  Policy p;
  p.workspace = "/tmp";
  p.argv = {"true"};
  for (const char* dest : {"/", "/.", "//"}) {
    p.mounts = {mount_op(K::ro_bind, "/", dest)};
    auto r = validate(p, true);
    INFO(dest);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("would cover the sandbox's own /proc, /dev and /tmp") != std::string::npos);
  }
  // Where ".." lands depends on symlinks in the new root (/var/run/.. is /).
  p.mounts = {mount_op(K::ro_bind, "/", "/var/run/..")};
  auto dots = validate(p, true);
  REQUIRE_FALSE(dots);
  CHECK(dots.error().message() == "--ro-bind /var/run/..: a '..' component (name the destination plainly)");
  // "/..." is a name, not the root: whatever else validate() says of it,
  // it is not that refusal (and error() of a success is undefined).
  p.mounts = {mount_op(K::ro_bind, "/", "/...")};
  auto named = validate(p, true);
  CHECK((named || named.error().message().find("would cover") == std::string::npos));
  // bwrap's dialect keeps bwrap's order: the caller's.
  p.preset = false;
  p.mounts = {mount_op(K::bind, "/", "/"), mount_op(K::proc, "", "/proc")};
  CHECK(validate(p, true));
}

TEST_CASE("the account's home from a password file's text", "[unit][credentials]") {
  const std::string text =
      "root:x:0:0:root:/root:/bin/bash\n"
      "u:x:1000:1000:A User,,,:/home/u:/bin/sh\n"
      "nohome:x:1001:1001::relative:/bin/sh\n"
      "short:x:1002\n"
      "u2:x:1000:1000::/elsewhere:/bin/sh\n"
      "last:x:1003:1003::/home/last:/bin/sh";
  CHECK(home_in_passwd(text, 0) == std::optional<std::string>("/root"));
  CHECK(home_in_passwd(text, 1000) == std::optional<std::string>("/home/u"));  // the first entry
  CHECK(home_in_passwd(text, 1001) == std::nullopt);
  CHECK(home_in_passwd(text, 1002) == std::nullopt);
  CHECK(home_in_passwd(text, 1003) == std::optional<std::string>("/home/last"));
  CHECK(home_in_passwd(text, 10) == std::nullopt);
  CHECK(home_in_passwd("", 0) == std::nullopt);
}
