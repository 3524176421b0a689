// The Landlock rung's snapshot comparison and which protected paths it
// keeps (launch/protect_restore.hpp), without the host.
#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "launch/protect_restore.hpp"
#include "policy/protect.hpp"

using namespace nsrun;

namespace {

struct statx seen(const SnapNode& n) {
  struct statx sx{};
  sx.stx_mode = static_cast<uint16_t>(n.type | n.mode);
  sx.stx_uid = n.uid;
  sx.stx_gid = n.gid;
  sx.stx_dev_major = major(n.dev);
  sx.stx_dev_minor = minor(n.dev);
  sx.stx_ino = n.ino;
  sx.stx_nlink = static_cast<uint32_t>(n.nlink);
  sx.stx_size = static_cast<uint64_t>(n.size);
  sx.stx_ctime = n.ctime;
  return sx;
}

SnapNode hook() {
  SnapNode n;
  n.rel = ".git/hooks/pre-commit";
  n.type = S_IFREG;
  n.mode = 0755;
  n.uid = 1000;
  n.gid = 1000;
  n.dev = makedev(8, 1);
  n.ino = 42;
  n.nlink = 1;
  n.size = 10;
  n.ctime = {100, 5, 0};
  return n;
}

}  // namespace

TEST_CASE("a protected file is unchanged only when nothing the command could alter differs", "[landlock-protect]") {
  const SnapNode n = hook();
  CHECK(unchanged(n, seen(n)));
  struct statx sx = seen(n);
  sx.stx_ctime.tv_nsec = 6;  // written in place, same size
  CHECK_FALSE(unchanged(n, sx));
  sx = seen(n);
  sx.stx_ino = 43;  // renamed onto
  CHECK_FALSE(unchanged(n, sx));
  sx = seen(n);
  sx.stx_nlink = 2;  // hard-linked elsewhere: a later write there is a write here
  CHECK_FALSE(unchanged(n, sx));
  sx = seen(n);
  sx.stx_mode = S_IFLNK | 0777;  // replaced by a symlink
  CHECK_FALSE(unchanged(n, sx));
  sx = seen(n);
  sx.stx_mode = S_IFREG | 0644;
  CHECK_FALSE(unchanged(n, sx));
}

TEST_CASE("a protected directory compares its identity, not its times", "[landlock-protect]") {
  SnapNode d = hook();
  d.type = S_IFDIR;
  struct statx sx = seen(d);
  sx.stx_ctime.tv_sec = 200;  // an entry added: looked at entry by entry
  sx.stx_nlink = 3;
  CHECK(unchanged(d, sx));
  sx.stx_ino = 7;
  CHECK_FALSE(unchanged(d, sx));
}

TEST_CASE("the Landlock rung snapshots what exists and what is missing outside .git", "[landlock-protect]") {
  auto state = [](std::string path, ProtectState s) {
    return ProtectedPathState{"/ws", std::move(path), ProtectDecision{s, {}}};
  };
  CHECK(kept_by_snapshot(state(".git/hooks", ProtectState::read_only)));
  CHECK(kept_by_snapshot(state(".git/hooks", ProtectState::covered)));
  CHECK(kept_by_snapshot(state(".git/info/attributes", ProtectState::sealed)));
  CHECK(kept_by_snapshot(state(".envrc", ProtectState::not_kept)));
  CHECK(kept_by_snapshot(state(".vscode", ProtectState::not_kept)));
  // A repository the command makes is the git scan's (its hooks and config
  // quarantined, the repository kept).
  CHECK_FALSE(kept_by_snapshot(state(".git/config", ProtectState::not_kept)));
  CHECK_FALSE(kept_by_snapshot(state(".GIT/hooks", ProtectState::not_kept)));
  CHECK_FALSE(kept_by_snapshot(state(".envrc", ProtectState::unreachable)));
}
