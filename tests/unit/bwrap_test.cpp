// The bwrap front end without privileges: each option into Policy with
// bwrap's meaning, bwrap's texts for bad input and for nsrun's own errors,
// the status JSON, and the plan details the dialect relies on.
#include <catch2/catch_test_macros.hpp>

#include <linux/capability.h>
#include <sched.h>

#include <algorithm>
#include <map>
#include <optional>

#include "cli/bwrap.hpp"
#include "mount/plan.hpp"
#include "ns/credentials.hpp"
#include "ns/status.hpp"

using namespace nsrun;
using K = MountOp::Kind;

namespace {

// Fd "contents" handed to --args, --file and the data binds.
BwrapContext context(uid_t uid = 1000, std::map<int, std::string> fds = {}) {
  BwrapContext ctx;
  ctx.cwd = "/home/u/ws";
  ctx.uid = uid;
  ctx.cgroup_ns = true;
  ctx.read_fd = [fds](int fd) -> Result<std::string> {
    auto it = fds.find(fd);
    if (it == fds.end()) return fail(Error{"read", EBADF, {}, {}});
    return it->second;
  };
  ctx.fd_open = [fds](int fd) { return fd <= 2 || fds.contains(fd); };
  return ctx;
}

Result<BwrapInvocation> parse(std::vector<std::string> args, const BwrapContext& ctx = context()) {
  return parse_bwrap(args, ctx);
}

std::string error_of(std::vector<std::string> args, const BwrapContext& ctx = context()) {
  auto r = parse(std::move(args), ctx);
  REQUIRE_FALSE(r);
  return r.error().message();
}

}  // namespace

TEST_CASE("bwrap: defaults are bwrap's, not nsrun's", "[bwrap]") {
  auto r = parse({"--ro-bind", "/", "/", "true"});
  REQUIRE(r);
  const Policy& p = r->policy;
  CHECK_FALSE(p.preset);
  CHECK(p.ns.user);  // implied for a caller that is not root
  CHECK_FALSE(p.ns.pid);
  CHECK_FALSE(p.ns.net);
  CHECK_FALSE(p.ns.ipc);
  CHECK_FALSE(p.ns.uts);
  CHECK_FALSE(p.ns.cgroup);
  CHECK(p.seccomp == SeccompMode::none);
  CHECK(p.allow_nested_userns);
  CHECK(p.new_session == false);
  // No PID namespace of its own: --proc binds the caller's /proc, as bwrap.
  CHECK(p.proc == ProcMode::host_bind);
  CHECK(p.cap_add.empty());
  // No rlimit either: nsrun's core=0 default is not bwrap's.
  CHECK(effective_rlimits(p.limits).empty());
  REQUIRE(p.mounts.size() == 1);
  CHECK(p.mounts[0].kind == K::ro_bind);
  CHECK(p.argv == std::vector<std::string>{"true"});
  // PWD is the working directory, as bwrap sets it.
  REQUIRE_FALSE(p.env.empty());
  CHECK(p.env.back().name == "PWD");
  CHECK(p.env.back().value == "/home/u/ws");

  auto root = parse({"true"}, context(0));
  REQUIRE(root);
  CHECK_FALSE(root->policy.ns.user);  // root needs no user namespace
  CHECK(root->policy.cap_add == std::vector<std::string>{"ALL"});
}

TEST_CASE("bwrap: filesystem options keep command-line order and their arguments", "[bwrap]") {
  auto r = parse({"--bind", "src", "/b", "--bind-try", "/x", "/bt", "--dev-bind", "/dev", "/dev",
                  "--ro-bind-try", "/y", "rel", "--remount-ro", "/b", "--proc", "/proc", "--dev", "/dev",
                  "--mqueue", "/dev/mqueue", "--dir", "/d", "--symlink", "t", "/s", "--chmod", "700", "/d",
                  "--file", "5", "/f", "--bind-data", "6", "/bd", "--ro-bind-data", "5", "/rbd", "--", "cmd", "-x"},
                 context(1000, {{5, "five"}, {6, "six"}}));
  REQUIRE(r);
  const auto& m = r->policy.mounts;
  REQUIRE(m.size() == 14);
  CHECK((m[0].kind == K::bind && m[0].source == "/home/u/ws/src" && m[0].dest == "/b" && !m[0].optional));
  CHECK((m[1].kind == K::bind && m[1].optional));
  CHECK(m[2].kind == K::dev_bind);
  CHECK((m[3].kind == K::ro_bind && m[3].optional && m[3].dest == "/rel"));
  CHECK(m[4].kind == K::remount_ro);
  CHECK(m[5].kind == K::proc);
  CHECK(m[6].kind == K::dev);
  CHECK(m[7].kind == K::mqueue);
  CHECK(m[8].kind == K::dir);
  CHECK((m[9].kind == K::symlink && m[9].source == "t" && m[9].dest == "/s"));
  CHECK((m[10].kind == K::chmod && m[10].perms == 0700u));
  CHECK((m[11].kind == K::file && m[11].data == "five"));
  CHECK((m[12].kind == K::bind_data && m[12].data == "six"));
  CHECK((m[13].kind == K::ro_bind_data && m[13].data == "five"));
  CHECK(r->policy.argv == std::vector<std::string>{"cmd", "-x"});
}

TEST_CASE("bwrap: --perms and --size apply to the next operation only", "[bwrap]") {
  auto r = parse({"--perms", "0700", "--size", "1048576", "--tmpfs", "/a", "--tmpfs", "/b", "--perms", "640",
                  "--dir", "/c", "true"});
  REQUIRE(r);
  const auto& m = r->policy.mounts;
  REQUIRE(m.size() == 3);
  CHECK(m[0].perms == 0700u);
  CHECK(m[0].size == 1048576u);
  CHECK_FALSE(m[1].perms);
  CHECK_FALSE(m[1].size);
  CHECK(m[2].perms == 0640u);

  CHECK(error_of({"--perms", "700", "--ro-bind", "/", "/", "true"}) ==
        "--perms must be followed by an option that creates a file");
  CHECK(error_of({"--perms", "700", "--symlink", "a", "/b", "true"}) ==
        "--perms must be followed by an option that creates a file");
  CHECK(error_of({"--size", "10", "--dir", "/x", "true"}) == "--size must be followed by --tmpfs");
  CHECK(error_of({"--perms", "999", "--dir", "/x", "true"}) == "--perms takes an octal argument <= 07777");
  CHECK(error_of({"--size", "0", "--tmpfs", "/x", "true"}) == "--size takes a non-zero number of bytes");
}

TEST_CASE("bwrap: parents take the group/other restrictions of --perms", "[bwrap]") {
  auto r = parse({"--perms", "700", "--tmpfs", "/a/b", "--perms", "604", "--tmpfs", "/r/s", "--dir", "/g/h", "true"});
  REQUIRE(r);
  auto plan = make_plan(r->policy, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  REQUIRE(plan->mounts.size() == 3);
  CHECK(plan->mounts[0].parent_mode == 0700u);
  CHECK(plan->mounts[1].parent_mode == 0705u);
  CHECK(plan->mounts[2].parent_mode == 0755u);
}

TEST_CASE("bwrap: binds are nosuid, nodev unless dev-bind", "[bwrap]") {
  auto r = parse({"--bind", "/a", "/a", "--ro-bind", "/b", "/b", "--dev-bind", "/dev", "/dev", "true"});
  REQUIRE(r);
  auto plan = make_plan(r->policy, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->mounts[0].attrs == (attr::nosuid | attr::nodev));
  CHECK(plan->mounts[1].attrs == (attr::rdonly | attr::nosuid | attr::nodev));
  CHECK(plan->mounts[2].attrs == attr::nosuid);
}

TEST_CASE("bwrap: namespace options", "[bwrap]") {
  auto all = parse({"--unshare-all", "true"}, context(0));
  REQUIRE(all);
  const auto& ns = all->policy.ns;
  CHECK((ns.user && ns.ipc && ns.pid && ns.net && ns.uts && ns.cgroup));
  CHECK(all->policy.network == Network::none);

  auto shared = parse({"--unshare-all", "--share-net", "true"});
  REQUIRE(shared);
  CHECK_FALSE(shared->policy.ns.net);
  CHECK(shared->policy.network == Network::share);

  auto no_cgroup = context();
  no_cgroup.cgroup_ns = false;
  auto tried = parse({"--unshare-cgroup-try", "true"}, no_cgroup);
  REQUIRE(tried);
  CHECK_FALSE(tried->policy.ns.cgroup);

  auto ids = parse({"--unshare-user", "--uid", "0", "--gid", "7", "--unshare-uts", "--hostname", "box", "true"});
  REQUIRE(ids);
  CHECK(ids->policy.uid == 0u);
  CHECK(ids->policy.gid == 7u);
  CHECK(ids->policy.hostname == "box");

  CHECK(error_of({"--uid", "5", "true"}, context(0)) == "Specifying --uid requires --unshare-user or --userns");
  CHECK(error_of({"--uid", "abc", "true"}) == "Invalid uid: abc");
  CHECK(error_of({"--hostname", "x", "true"}) == "Specifying --hostname requires --unshare-uts");
  CHECK(error_of({"--as-pid-1", "true"}) == "Specifying --as-pid-1 requires --unshare-pid");
  CHECK(error_of({"--disable-userns", "true"}, context(0)) == "--disable-userns requires --unshare-user");
  CHECK(error_of({"--unshare-user", "--userns-block-fd", "0", "true"}) ==
        "--userns-block-fd requires --info-fd or --json-status-fd");
}

TEST_CASE("bwrap: --userns, --userns2 and --pidns join existing namespaces", "[bwrap]") {
  // Joining replaces making: no user namespace of our own even when not
  // root, so no id maps; only the namespace rung can do it.
  auto joined = parse({"--userns", "3", "--userns2", "4", "--pidns", "5", "true"});
  REQUIRE(joined);
  const Policy& p = joined->policy;
  CHECK(p.userns_fd == 3);
  CHECK(p.userns2_fd == 4);
  CHECK(p.pidns_fd == 5);
  CHECK_FALSE(p.ns.user);
  CHECK_FALSE(p.ns.pid);
  CHECK(p.backend == Backend::namespaces);
  auto plan = make_plan(p, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK_FALSE(plan->id_maps);
  CHECK((plan->clone_flags & (CLONE_NEWUSER | CLONE_NEWPID)) == 0);

  // With --unshare-pid the new PID namespace nests in the joined one.
  auto nested = parse({"--userns", "3", "--pidns", "5", "--unshare-pid", "true"});
  REQUIRE(nested);
  CHECK(nested->policy.pidns_fd == 5);
  CHECK(nested->policy.ns.pid);

  auto plain = parse({"true"});
  REQUIRE(plain);
  CHECK_FALSE(plain->policy.userns_fd);
  // Never the ladder: the dialect pins the namespace rung.
  CHECK(plain->policy.backend == Backend::namespaces);

  // bwrap's checks and texts.
  CHECK(error_of({"--userns", "3", "--unshare-user", "true"}) == "--userns not compatible --unshare-user");
  CHECK(error_of({"--unshare-user-try", "--userns", "3", "true"}) == "--userns not compatible --unshare-user-try");
  CHECK(error_of({"--unshare-all", "--userns", "3", "true"}) == "--userns not compatible --unshare-user-try");
  CHECK(error_of({"--userns", "3", "--disable-userns", "true"}) == "--disable-userns requires --unshare-user");
  CHECK(error_of({"--userns", "-1", "true"}) == "Invalid fd: -1");
  CHECK(error_of({"--userns2", "y", "true"}) == "Invalid fd: y");
  // nsrun's own limits, said plainly.
  auto ids = parse({"--userns", "3", "--uid", "0", "--gid", "0", "true"});
  REQUIRE(ids);
  CHECK(ids->policy.uid == 0u);
  CHECK(bwrap_message(sys_error(Operation::setuid, "5", EINVAL)) == "unable to switch to uid 5: Invalid argument");

  // setns failures in bwrap's words.
  CHECK(bwrap_message(sys_error(Operation::setns_userns, "3", EINVAL)) ==
        "Joining the specified user namespace failed, it might not be a descendant of the current user namespace.");
  CHECK(bwrap_message(sys_error(Operation::setns_userns, "3", EBADF)) ==
        "Joining specified user namespace failed: Bad file descriptor");
  CHECK(bwrap_message(sys_error(Operation::setns_userns2, "4", EPERM)) == "Setting userns2 failed: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::setns_pidns, "5", EINVAL)) == "Setting pidns failed: Invalid argument");
}

TEST_CASE("bwrap: capabilities follow --cap-add / --cap-drop in order", "[bwrap]") {
  auto dropped = parse({"--cap-drop", "ALL", "--cap-add", "CAP_CHOWN", "true"}, context(0));
  REQUIRE(dropped);
  CHECK(dropped->policy.cap_add == std::vector<std::string>{"cap_chown"});

  auto user = parse({"--cap-add", "cap_net_raw", "true"});
  REQUIRE(user);
  CHECK(user->policy.cap_add == std::vector<std::string>{"cap_net_raw"});

  auto root_as_other = parse({"--unshare-user", "--uid", "1000", "true"}, context(0));
  REQUIRE(root_as_other);
  CHECK(root_as_other->policy.cap_add.empty());

  CHECK(error_of({"--cap-add", "CAP_FOO", "true"}) == "unknown cap: CAP_FOO");
}

TEST_CASE("bwrap: environment options, --clearenv is immediate", "[bwrap]") {
  auto r = parse({"--setenv", "A", "1", "--clearenv", "--setenv", "B", "2", "--unsetenv", "C", "--chdir", "/etc", "true"});
  REQUIRE(r);
  const Policy& p = r->policy;
  CHECK(p.clearenv);
  REQUIRE(p.env.size() == 3);
  CHECK((p.env[0].name == "B" && p.env[0].value == "2"));
  CHECK((p.env[1].kind == EnvOp::Kind::unset && p.env[1].name == "C"));
  CHECK((p.env[2].name == "PWD" && p.env[2].value == "/etc"));
  CHECK(p.chdir == "/etc");
}

TEST_CASE("bwrap: --args splices NUL-separated arguments in place", "[bwrap]") {
  using namespace std::string_literals;
  auto r = parse({"--args", "7", "--tmpfs", "/t", "true"}, context(1000, {{7, "--dir\0/a\0--setenv\0K\0V\0"s}}));
  REQUIRE(r);
  REQUIRE(r->policy.mounts.size() == 2);
  CHECK(r->policy.mounts[0].dest == "/a");
  CHECK(r->policy.mounts[1].dest == "/t");
  CHECK(r->policy.env[0].name == "K");
  CHECK(error_of({"--args", "77", "true"}) == "Can't read --args data: Bad file descriptor");
}

TEST_CASE("bwrap: fds, seccomp, status and lock options", "[bwrap]") {
  auto r = parse({"--unshare-user", "--info-fd", "5", "--json-status-fd", "6", "--block-fd", "0",
                  "--userns-block-fd", "1", "--sync-fd", "2", "--add-seccomp-fd", "8", "--add-seccomp-fd", "9",
                  "--lock-file", "/l", "--disable-userns", "--assert-userns-disabled", "true"},
                 context(1000, {{5, ""}, {6, ""}}));
  REQUIRE(r);
  const Policy& p = r->policy;
  CHECK(p.info_fd == 5);
  CHECK(p.json_status_fd == 6);
  CHECK(p.block_fd == 0);
  CHECK(p.userns_block_fd == 1);
  CHECK(p.seccomp_fds == std::vector<int>{8, 9});
  CHECK(p.lock_files == std::vector<std::string>{"/l"});
  CHECK(p.disable_userns);
  CHECK_FALSE(p.allow_nested_userns);
  CHECK(p.assert_userns_disabled);

  auto last = parse({"--seccomp", "8", "--seccomp", "9", "true"});
  REQUIRE(last);
  CHECK(last->policy.seccomp_fds == std::vector<int>{9});
  CHECK(error_of({"--seccomp", "8", "--add-seccomp-fd", "9", "true"}) ==
        "--add-seccomp-fd cannot be combined with --seccomp");
  CHECK(error_of({"--info-fd", "abc", "true"}) == "Invalid fd: abc");
  CHECK(error_of({"--info-fd", "-1", "true"}) == "Invalid fd: -1");
  CHECK(error_of({"--info-fd", "99", "true"}) == "Invalid fd: 99");
}

TEST_CASE("bwrap: overlays take the preceding --overlay-src, lowest first", "[bwrap]") {
  auto r = parse({"--overlay-src", "/l1", "--overlay-src", "l2", "--overlay", "/up", "/wk", "/o", "--overlay-src",
                  "/l1", "--tmp-overlay", "/t", "--overlay-src", "/a", "--overlay-src", "/b", "--ro-overlay", "/r",
                  "true"});
  REQUIRE(r);
  const auto& m = r->policy.mounts;
  REQUIRE(m.size() == 3);
  CHECK(m[0].kind == K::overlay);
  CHECK(m[0].layers == std::vector<std::string>{"/home/u/ws/l2", "/l1"});
  CHECK((m[0].source == "/up" && m[0].workdir == "/wk" && m[0].dest == "/o"));
  CHECK(m[1].kind == K::tmp_overlay);
  CHECK(m[2].kind == K::ro_overlay);
  CHECK(m[2].layers == std::vector<std::string>{"/b", "/a"});

  auto plan = make_plan(r->policy, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->mounts[0].options == "userxattr");
  CHECK(plan->mounts[1].private_upper);
  CHECK((plan->mounts[2].attrs & attr::rdonly) != 0);

  CHECK(error_of({"--overlay-src", "/a", "--ro-overlay", "/r", "true"}) ==
        "--ro-overlay requires at least two --overlay-src");
  CHECK(error_of({"--tmp-overlay", "/r", "true"}) == "--tmp-overlay requires at least one --overlay-src");
  CHECK(error_of({"--overlay-src", "/a", "--tmpfs", "/r", "true"}).starts_with("--overlay-src must be followed"));
}

TEST_CASE("bwrap: bad input gets bwrap's words", "[bwrap]") {
  CHECK(error_of({"--frob"}) == "Unknown option --frob");
  CHECK(error_of({"--dir"}) == "--dir takes an argument");
  CHECK(error_of({"--bind", "/a"}) == "--bind takes two arguments");
  CHECK(error_of({"--overlay", "/a", "/b"}) == "--overlay takes three arguments");
  CHECK(error_of({"--exec-label", "x", "true"}) == "labeling not supported on this system");
  CHECK(error_of({"--userns", "x", "true"}) == "Invalid fd: x");
  CHECK(error_of({"--pidns"}) == "--pidns takes an argument");
  auto none = parse({"--ro-bind", "/", "/"});
  REQUIRE_FALSE(none);  // no command: usage on stderr, exit 1
  auto help = parse({"--help"});
  REQUIRE(help);
  CHECK(help->action == BwrapInvocation::Action::help);
  auto version = parse({"--version"});
  REQUIRE(version);
  CHECK(version->action == BwrapInvocation::Action::version);
}

TEST_CASE("bwrap: nsrun's errors in bwrap's words", "[bwrap]") {
  CHECK(bwrap_message(sys_error(Operation::mount_proc, "/proc", EPERM)) ==
        "Can't mount proc on /newroot/proc: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::bind, "/x", ENOENT)) == "Can't find source path /x: No such file or directory");
  Error missing = usage_error("--bind", "No such file or directory");
  missing.path = "/x";
  missing.op = Operation::find_source;
  CHECK(bwrap_message(missing) == "Can't find source path /x: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWUSER", EPERM)).starts_with("No permissions to create a new namespace"));
  CHECK(bwrap_message(sys_error(Operation::write_uid_map, "/proc/self/uid_map", EACCES)) == "setting up uid map: Permission denied");
  CHECK(bwrap_message(sys_error(Operation::exec, "nope", ENOENT)) == "execvp nope: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::chdir, "/n", ENOENT)) == "Can't chdir to /n: No such file or directory");
  CHECK(bwrap_message(sys_error(Operation::symlink, "/tmp", EEXIST)) == "Can't make symlink at /tmp: File exists");
}

TEST_CASE("bwrap: --help lists every option; --version names nsrun and bubblewrap", "[bwrap]") {
  const std::string help = bwrap_usage("bwrap");
  CHECK(help.starts_with("usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n"));
  for (const char* opt :
       {"--help", "--version", "--args", "--argv0", "--level-prefix", "--unshare-user", "--unshare-user-try",
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
        "--unshare-cgroup-try", "--unshare-all", "--share-net", "--userns", "--userns2", "--disable-userns",
        "--assert-userns-disabled", "--pidns", "--uid", "--gid", "--hostname", "--chdir", "--setenv", "--unsetenv",
        "--clearenv", "--lock-file", "--sync-fd", "--block-fd", "--userns-block-fd", "--info-fd",
        "--json-status-fd", "--new-session", "--die-with-parent", "--as-pid-1", "--bind", "--bind-try",
        "--dev-bind", "--dev-bind-try", "--ro-bind", "--ro-bind-try", "--bind-fd", "--ro-bind-fd", "--remount-ro",
        "--overlay-src", "--overlay", "--tmp-overlay", "--ro-overlay", "--exec-label", "--file-label", "--proc",
        "--dev", "--tmpfs", "--mqueue", "--dir", "--file", "--bind-data", "--ro-bind-data", "--symlink", "--chmod",
        "--perms", "--size", "--seccomp", "--add-seccomp-fd", "--cap-add", "--cap-drop"}) {
    INFO(opt);
    CHECK(help.find(std::string("\n    ") + opt + " ") != std::string::npos);
  }
  const std::string version = bwrap_version_text();
  CHECK(version.starts_with("bubblewrap 0.11"));
  CHECK(version.find("nsrun") != std::string::npos);
}

TEST_CASE("status JSON: bwrap's field names and layouts", "[bwrap][status]") {
  NamespaceIds ids{{"mnt-namespace", 11}, {"pid-namespace", 12}};
  CHECK(start_status(42, ids, true) == "{\n    \"child-pid\": 42,\n    \"mnt-namespace\": 11,\n    \"pid-namespace\": 12\n}\n");
  CHECK(start_status(42, ids, false) == "{ \"child-pid\": 42, \"mnt-namespace\": 11, \"pid-namespace\": 12 }\n");
  CHECK(exit_status_line(137) == "{ \"exit-code\": 137 }\n");
}

TEST_CASE("bwrap: the namespace rung is pinned; --proc follows the PID namespace", "[bwrap]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--ro-bind", "/", "/", "true"},
           {"--ro-bind", "/", "/", "--unshare-user", "--proc", "/proc", "true"},
           {"--unshare-all", "--share-net", "--ro-bind", "/", "/", "true"},
       }) {
    auto r = parse(args);
    REQUIRE(r);
    CHECK(r->policy.backend == Backend::namespaces);
  }
  auto shared = parse({"--ro-bind", "/", "/", "--proc", "/proc", "true"});
  REQUIRE(shared);
  CHECK(shared->policy.proc == ProcMode::host_bind);
  auto own = parse({"--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true"});
  REQUIRE(own);
  CHECK(own->policy.proc == ProcMode::fresh);
  auto joined = parse({"--userns", "3", "--pidns", "5", "--proc", "/proc", "true"});
  REQUIRE(joined);
  CHECK(joined->policy.proc == ProcMode::fresh);
}

// "behaviours from bwrap's manual that differ today": the parts
// decided while parsing. tests/integration/bwrap_manual_test.cpp runs them.

TEST_CASE("bwrap: --size takes what bwrap's strtoull check takes", "[bwrap][manual]") {
  auto size_of = [](const std::string& text) -> std::optional<uint64_t> {
    auto r = parse({"--size", text, "--tmpfs", "/t", "true"});
    if (!r) return std::nullopt;
    return r->policy.mounts.at(0).size;
  };
  CHECK(size_of("1048576") == 1048576u);
  CHECK(size_of("0x10") == 16u);  // base 0, as strtoull
  CHECK(size_of("010") == 8u);
  CHECK(size_of("9223372036854775807") == 9223372036854775807u);
  for (const char* bad : {"123bogus", "", "-1", " 1", "+1", "0", "18446744073709551616"}) {
    INFO("--size '" << bad << "'");
    CHECK(error_of({"--size", bad, "--tmpfs", "/t", "true"}) == "--size takes a non-zero number of bytes");
  }
  CHECK(error_of({"--size", "9223372036854775809", "--tmpfs", "/t", "true"}) ==
        "--size (for tmpfs) is limited to 9223372036854775807");
  CHECK(error_of({"--size", "18446744073709551615", "--tmpfs", "/t", "true"}) ==
        "--size (for tmpfs) is limited to 9223372036854775807");
}

TEST_CASE("bwrap: a modifier given twice before one operation is refused", "[bwrap][manual]") {
  CHECK(error_of({"--perms", "700", "--perms", "700", "--dir", "/x", "true"}) == "--perms given twice for the same action");
  CHECK(error_of({"--size", "10", "--size", "10", "--tmpfs", "/x", "true"}) == "--size given twice for the same action");
  // Once each, in either order, is fine; so is one per operation.
  CHECK(parse({"--size", "10", "--perms", "700", "--tmpfs", "/x", "true"}));
  CHECK(parse({"--perms", "700", "--dir", "/x", "--perms", "700", "--dir", "/y", "true"}));
}

TEST_CASE("bwrap: warnings come as they are met, with the prefix set so far", "[bwrap][manual]") {
  std::vector<std::string> said;
  BwrapContext ctx = context();
  ctx.warn = [&](const std::string& line) { said.push_back(line); };
  auto r = parse({"--chdir", "/a", "--chdir", "/b", "true"}, ctx);
  REQUIRE(r);
  CHECK(r->policy.chdir == "/b");
  CHECK(said == std::vector<std::string>{"bwrap: Only the last --chdir option will take effect"});

  said.clear();
  REQUIRE(parse({"--level-prefix", "--chdir", "/a", "--chdir", "/b", "--seccomp", "0", "--seccomp", "1", "true"}, ctx));
  CHECK(said == std::vector<std::string>{"<4>bwrap: Only the last --chdir option will take effect",
                                         "<4>bwrap: Only the last --seccomp option will take effect"});

  // Printed before a later error, as bwrap prints it at once.
  said.clear();
  CHECK(error_of({"--chdir", "/a", "--chdir", "/b", "--frob", "true"}, ctx) == "Unknown option --frob");
  CHECK(said.size() == 1);
  said.clear();
  REQUIRE(parse({"--chdir", "/a", "true"}, ctx));
  CHECK(said.empty());
}

TEST_CASE("bwrap: overlay errors in bwrap's words", "[bwrap][manual]") {
  const std::string dangling =
      "--overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or --ro-overlay";
  CHECK(error_of({"--overlay", "/up", "/wk", "/o", "true"}) == "--overlay requires at least one --overlay-src");
  CHECK(error_of({"--overlay-src", "/a", "--tmpfs", "/r", "true"}) == dangling);
  CHECK(error_of({"--overlay-src", "/a", "true"}) == dangling);
  CHECK(error_of({"--overlay-src", "/a", "--"}) == dangling);
}

TEST_CASE("bwrap: --lock-file needs a process to hold it", "[bwrap][manual]") {
  CHECK(error_of({"--unshare-pid", "--as-pid-1", "--lock-file", "/l", "true"}) ==
        "Specifying --as-pid-1 and --lock-file is not permitted");
  auto r = parse({"--ro-bind", "/", "/", "--lock-file", "/l", "true"});
  REQUIRE(r);
  auto plan = make_plan(r->policy, HostFacts{1000, 1000, "/"});
  REQUIRE(plan);
  CHECK(plan->reaper);  // no PID namespace, still a holder outliving the exec
  CHECK((plan->clone_flags & CLONE_NEWPID) == 0);
  auto plain = parse({"--ro-bind", "/", "/", "true"});
  REQUIRE(plain);
  auto direct = make_plan(plain->policy, HostFacts{1000, 1000, "/"});
  REQUIRE(direct);
  CHECK_FALSE(direct->reaper);
}

TEST_CASE("bwrap: --proc binds the caller's /proc without a PID namespace of its own", "[bwrap][manual]") {
  auto shared = parse({"--unshare-user-try", "--proc", "/proc", "true"}, context(0));
  REQUIRE(shared);
  CHECK(shared->policy.ns.user);
  CHECK(shared->policy.proc == ProcMode::host_bind);
  auto own = parse({"--unshare-pid", "--proc", "/proc", "true"});
  REQUIRE(own);
  CHECK(own->policy.proc == ProcMode::fresh);
  auto joined = parse({"--pidns", "5", "--proc", "/proc", "true"});
  REQUIRE(joined);
  CHECK(joined->policy.proc == ProcMode::fresh);
}

TEST_CASE("bwrap: a refused clone in bwrap's words", "[bwrap]") {
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWUSER|CLONE_NEWNS", EPERM), true) ==
        "No permissions to create a new namespace, likely because the kernel does not allow non-privileged user "
        "namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.");
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWNS", EPERM), false) ==
        "Creating new namespace failed: Operation not permitted");
  CHECK(bwrap_message(sys_error(Operation::clone, "CLONE_NEWUSER|CLONE_NEWPID", ENOSPC), true) ==
        "Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)");
  CHECK(bwrap_message(sys_error(Operation::mount_proc, "/proc", EPERM)) ==
        "Can't mount proc on /newroot/proc: Operation not permitted");
}

TEST_CASE("bwrap: root starts from its own effective capabilities", "[bwrap][manual]") {
  // A caller without CAP_SYS_RESOURCE (24), as in a container.
  BwrapContext ctx = context(0);
  uint64_t held = 0;
  for (int c = 0; c <= CAP_LAST_CAP; ++c) held |= uint64_t{1} << c;
  held &= ~(uint64_t{1} << CAP_SYS_RESOURCE);
  ctx.effective_caps = held;
  auto r = parse({"--unshare-user", "--cap-drop", "CAP_KILL", "--cap-drop", "CAP_FOWNER", "true"}, ctx);
  REQUIRE(r);
  const auto& caps = r->policy.cap_add;
  auto has = [&](const char* name) { return std::find(caps.begin(), caps.end(), name) != caps.end(); };
  CHECK(caps.size() == static_cast<std::size_t>(CAP_LAST_CAP + 1 - 3));
  CHECK_FALSE(has("cap_kill"));
  CHECK_FALSE(has("cap_fowner"));
  CHECK_FALSE(has("cap_sys_resource"));  // never more than the caller held
  CHECK(has("cap_chown"));
  CHECK(has("cap_sys_admin"));
  // Only real capability names: every entry parses back.
  CHECK(parse_capabilities(caps));

  // Every capability held and no change: "ALL".
  ctx.effective_caps.reset();
  auto all = parse({"true"}, ctx);
  REQUIRE(all);
  CHECK(all->policy.cap_add == std::vector<std::string>{"ALL"});
  auto dropped = parse({"--cap-drop", "CAP_KILL", "true"}, ctx);
  REQUIRE(dropped);
  CHECK(dropped->policy.cap_add.size() == static_cast<std::size_t>(CAP_LAST_CAP));
  CHECK(parse_capabilities(dropped->policy.cap_add));

  // Only with neither option does bwrap leave root's inheritable and
  // ambient sets alone (it never calls capset then).
  CHECK_FALSE(all->policy.cap_grant_inheritable);
  CHECK(dropped->policy.cap_grant_inheritable);
  auto added = parse({"--cap-add", "CAP_KILL", "true"}, ctx);
  REQUIRE(added);
  CHECK(added->policy.cap_grant_inheritable);
  auto user = parse({"--cap-add", "CAP_KILL", "true"});
  REQUIRE(user);
  CHECK(user->policy.cap_grant_inheritable);
}

TEST_CASE("bwrap: the fds handed over reach the command, less those the options use up", "[bwrap][fds]") {
  using namespace std::string_literals;
  BwrapContext ctx = context(1000, {{3, ""}, {4, ""}, {5, "--dir\0/a\0"s}, {6, "data"}, {7, ""}, {8, ""}, {9, ""},
                                    {10, ""}, {11, ""}, {12, ""}, {13, ""}, {14, ""}, {15, ""}});
  ctx.inherited_fds = {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20};
  auto r = parse({"--args", "5", "--file", "6", "/f", "--info-fd", "7", "--json-status-fd", "8", "--block-fd", "9",
                  "--sync-fd", "10", "--add-seccomp-fd", "11", "--ro-bind-fd", "12", "/r", "--unshare-user",
                  "--userns-block-fd", "13", "true"},
                 ctx);
  REQUIRE(r);
  // 3, 4, 14, 15 and 20 were only handed over; fds 0-2 are the command's anyway.
  CHECK(r->policy.pass_fds == std::vector<int>{3, 4, 14, 15, 20});

  // --sync-fd stays open in the command with --as-pid-1, as in bwrap.
  auto pid1 = parse({"--unshare-pid", "--as-pid-1", "--sync-fd", "10", "true"}, ctx);
  REQUIRE(pid1);
  CHECK(std::find(pid1->policy.pass_fds.begin(), pid1->policy.pass_fds.end(), 10) != pid1->policy.pass_fds.end());
  auto no_pid1 = parse({"--unshare-pid", "--sync-fd", "10", "true"}, ctx);
  REQUIRE(no_pid1);
  CHECK(std::find(no_pid1->policy.pass_fds.begin(), no_pid1->policy.pass_fds.end(), 10) ==
        no_pid1->policy.pass_fds.end());
}

TEST_CASE("bwrap: an fd --args or --add-seccomp-fd has read is closed for the options after it", "[bwrap][fds]") {
  using namespace std::string_literals;
  BwrapContext ctx = context(1000, {{5, "--dir\0/a\0"s}, {8, std::string(8, '\0')}});
  CHECK(error_of({"--add-seccomp-fd", "8", "--add-seccomp-fd", "8", "true"}, ctx) ==
        "Can't read seccomp data: Bad file descriptor");
  CHECK(error_of({"--args", "5", "--seccomp", "5", "true"}, ctx) == "Can't read seccomp data: Bad file descriptor");
  CHECK(error_of({"--add-seccomp-fd", "8", "--args", "8", "true"}, ctx) == "Can't read --args data: Bad file descriptor");
  // --seccomp is read only once every option is known: naming it twice is
  // bwrap's warning, not an error.
  CHECK(parse({"--seccomp", "8", "--seccomp", "8", "true"}, ctx));
}

TEST_CASE("bwrap: kernel refusals of a seccomp program and a symlink in bwrap's words", "[bwrap][manual]") {
  CHECK(bwrap_message(sys_error(Operation::seccomp_load, "", EINVAL)) ==
        "Unable to set up system call filtering as requested: prctl(PR_SET_SECCOMP) reported EINVAL. (Hint: this "
        "requires a kernel configured with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER.)");
  CHECK(bwrap_message(sys_error(Operation::seccomp_load, "", EACCES)) == "prctl(PR_SET_SECCOMP): Permission denied");
  CHECK(bwrap_message(sys_error(Operation::symlink, "/tmp/l", 0, "existing destination is a")) ==
        "Can't make symlink at /tmp/l: existing destination is a");
}
