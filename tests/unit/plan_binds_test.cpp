// mark_host_views() walks a tree of path components and collapse_duplicates()
// asks a hash set first, instead of ordered maps of whole paths. Both are
// held here to their definitions, written as the slowest obvious scans
// (quadratic, no shared state), on hand-picked and on generated mount lists,
// and make_plan() on the options that reach them.
#include <catch2/catch_test_macros.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "mount/plan.hpp"
#include "plan_support.hpp"
#include "policy/presets.hpp"

using namespace nsrun;
using plan_support::host;
using plan_support::workspace_policy;
using Op = MountStep::Op;
using K = MountOp::Kind;

namespace {

// --- the definitions, as scans --------------------------------------------

bool plain(std::string_view p) {
  if (p == "/") return true;
  if (p.empty() || p.front() != '/' || p.back() == '/') return false;
  if (p.find("//") != std::string_view::npos) return false;
  return p.find("/./") == std::string_view::npos && p.find("/../") == std::string_view::npos &&
         !p.ends_with("/.") && !p.ends_with("/..");
}

// `path` is `dir` or below it, by components.
bool under(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

bool related(std::string_view a, std::string_view b) { return under(a, b) || under(b, a); }

bool counts_as_mount(const MountStep& s) {
  switch (s.op) {
    case Op::bind:
    case Op::tmpfs:
    case Op::proc:
    case Op::devpts:
    case Op::mqueue:
    case Op::overlay: return true;
    case Op::write_file: return !s.source.empty();
    default: return false;
  }
}

bool onto_itself(const MountStep& s) {
  return s.op == Op::bind && !s.source_in_root && s.source_fd < 0 && s.source == s.dest;
}

// host_view: the most recent earlier mount at or above the destination (a
// later one above it would have hidden it, so the most recent is also the
// nearest) is a host path bound onto itself; a mount on a path that is not
// plain in between leaves nothing to go by.
void scan_host_views(std::vector<MountStep>& steps) {
  for (std::size_t k = 0; k < steps.size(); ++k) {
    MountStep& s = steps[k];
    if (!counts_as_mount(s) || !onto_itself(s) || !plain(s.dest)) continue;
    for (std::size_t j = k; j-- > 0;) {
      const MountStep& e = steps[j];
      if (!counts_as_mount(e)) continue;
      if (!plain(e.dest)) break;
      if (under(s.dest, e.dest)) {
        s.host_view = onto_itself(e);
        break;
      }
    }
  }
}

bool may_drop(const MountStep& s) { return (s.op == Op::bind || s.op == Op::tmpfs) && !s.source_in_root && s.source_fd < 0; }

bool sees_only_itself(const MountStep& s) {
  return s.no_symlinks && !s.source_in_root && s.source_fd < 0 && (s.op == Op::bind || s.op == Op::tmpfs) &&
         plain(s.dest);
}

// Step i goes when an identical later step j covers it and nothing in
// between can see it: j is next, or every step between sees only its own
// destination, unrelated to theirs.
void scan_collapse(std::vector<MountStep>& steps) {
  std::vector<bool> drop(steps.size(), false);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!may_drop(steps[i])) continue;
    for (std::size_t j = i + 1; j < steps.size(); ++j) {
      if (steps[j] == steps[i] && (j == i + 1 || sees_only_itself(steps[i]))) {
        drop[i] = true;
        break;
      }
      if (!sees_only_itself(steps[i]) || !sees_only_itself(steps[j]) || related(steps[j].dest, steps[i].dest)) break;
    }
  }
  std::vector<MountStep> kept;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (!drop[i]) kept.push_back(steps[i]);
  steps = std::move(kept);
}

// --- generated lists ------------------------------------------------------

// Few paths, so that repeats, parents, children, look-alike siblings and
// spellings that are not plain meet often.
const std::vector<std::string> paths = {
    "/",        "/a",      "/a/b",   "/a/b/c", "/a/bc",  "/a/b-c", "/ab",  "/b",     "/b/a",
    "/a/../b",  "/a/./b",  "//a",    "/a/",    "/a//b",  "/tmp",   "/tmp/x", "/tmp/x/y", "/a/b/..",
};

MountStep random_step(std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  MountStep s;
  static constexpr Op ops[] = {Op::bind, Op::bind, Op::bind, Op::tmpfs, Op::tmpfs, Op::proc,
                               Op::write_file, Op::mkdir, Op::symlink, Op::protect, Op::overlay};
  s.op = ops[pick(std::size(ops))];
  s.dest = paths[pick(paths.size())];
  switch (s.op) {
    case Op::bind:
      // Mostly onto itself, as --ro P is.
      s.source = pick(3) != 0 ? s.dest : paths[pick(paths.size())];
      s.source_in_root = pick(8) == 0;
      if (pick(10) == 0) s.source_fd = 5;
      break;
    case Op::write_file:
      if (pick(2) == 0) s.source = "data";
      break;
    case Op::symlink: s.source = "/x"; break;
    default: break;
  }
  s.no_symlinks = pick(4) != 0;
  s.attrs = pick(3) == 0 ? 0 : attr::rdonly;
  s.cover = pick(12) == 0;
  return s;
}

std::vector<MountStep> random_list(std::mt19937& rng) {
  std::vector<MountStep> out;
  const std::size_t n = 1 + rng() % 14;
  for (std::size_t i = 0; i < n; ++i) {
    // Repeat an earlier step now and then: what the collapse is for.
    if (!out.empty() && rng() % 3 == 0) out.push_back(out[rng() % out.size()]);
    else out.push_back(random_step(rng));
  }
  return out;
}

std::string show(const std::vector<MountStep>& steps) {
  std::string out;
  for (const auto& s : steps)
    out += fmt::format("  {}{}{}\n", describe(s), s.no_symlinks ? " exact" : "", s.host_view ? " host-view" : "");
  return out;
}

MountStep ro(std::string path) {
  MountStep s;
  s.op = Op::bind;
  s.source = path;
  s.dest = std::move(path);
  s.attrs = attr::rdonly | attr::nosuid | attr::nodev;
  s.no_symlinks = true;
  return s;
}

MountStep fresh_tmpfs(std::string dest) {
  MountStep s;
  s.op = Op::tmpfs;
  s.dest = std::move(dest);
  s.no_symlinks = true;
  return s;
}


// make_plan()'s output holds no duplicate the definition would still drop,
// and its host views are the definition's.
void check_against_scans(const LaunchPlan& plan) {
  std::vector<MountStep> collapsed = plan.mounts;
  scan_collapse(collapsed);
  CHECK(collapsed == plan.mounts);
  std::vector<MountStep> marked = plan.mounts;
  for (auto& s : marked) s.host_view = false;
  scan_host_views(marked);
  INFO(show(plan.mounts));
  CHECK(marked == plan.mounts);
}

}  // namespace

TEST_CASE("mark_host_views and collapse_duplicates agree with their definitions on generated lists", "[plan][binds]") {
  std::mt19937 rng(16);
  for (int round = 0; round < 40000; ++round) {
    const std::vector<MountStep> list = random_list(rng);
    std::vector<MountStep> want = list, got = list;
    scan_host_views(want);
    mark_host_views(got);
    INFO("host views of:\n" << show(list));
    REQUIRE(got == want);
    scan_collapse(want);
    collapse_duplicates(got);
    INFO("collapse of:\n" << show(list));
    REQUIRE(got == want);
  }
}

TEST_CASE("host views: nested binds, siblings, a tmpfs between, spellings that are not plain", "[plan][binds]") {
  std::vector<MountStep> s{ro("/"), ro("/a"), ro("/a/b"), fresh_tmpfs("/a/b/t"), ro("/a/b/t/x"), ro("/a/bc"),
                           ro("/a/b/t"), ro("/a/b/t/x")};
  mark_host_views(s);
  CHECK_FALSE(s[0].host_view);  // nothing below the root yet
  CHECK(s[1].host_view);
  CHECK(s[2].host_view);
  CHECK_FALSE(s[4].host_view);  // under nsrun's own tmpfs
  CHECK(s[5].host_view);        // a sibling whose name extends /a/b is under /a, not /a/b
  CHECK_FALSE(s[6].host_view);  // over the tmpfs: the nearest at or above it is the tmpfs
  CHECK(s[7].host_view);        // the tmpfs is hidden now by /a/b/t, a host path onto itself

  std::vector<MountStep> odd{ro("/"), ro("/a"), ro("/a/../b"), ro("/a/b"), ro("/b/"), ro("/b")};
  mark_host_views(odd);
  CHECK(odd[1].host_view);
  CHECK_FALSE(odd[2].host_view);  // not plain: not reasoned about
  CHECK_FALSE(odd[3].host_view);  // and nothing before it is trusted
  CHECK_FALSE(odd[5].host_view);  // "/b/" (a trailing slash) is not plain either: nothing is trusted
}

TEST_CASE("collapse: repeats among many siblings, with and without something in between", "[plan][binds]") {
  std::vector<MountStep> s;
  for (int i = 0; i < 300; ++i) s.push_back(ro(fmt::format("/w/binds/{}", i)));
  s.push_back(ro("/w/binds/7"));  // a repeat; only unrelated siblings in between
  std::vector<MountStep> want = s;
  collapse_duplicates(s);
  scan_collapse(want);
  CHECK(s == want);
  CHECK(s.size() == 300);
  CHECK(s.back().dest == "/w/binds/7");

  std::vector<MountStep> parent_between = want;
  parent_between.push_back(ro("/w/binds"));
  parent_between.push_back(ro("/w/binds/8"));
  const std::size_t before = parent_between.size();
  collapse_duplicates(parent_between);
  CHECK(parent_between.size() == before);  // /w/binds in between sees /w/binds/8
}

TEST_CASE("make_plan on tricky option lists matches the definitions", "[plan][binds]") {
  Policy p = workspace_policy();
  SECTION("1000 sibling --ro in the workspace: each a host view, none dropped") {
    for (int i = 0; i < 1000; ++i) {
      const std::string path = fmt::format("/home/u/ws/binds/{}", i);
      p.mounts.push_back(mount_op(K::ro_bind, path, path));
    }
    auto plan = make_plan(p, host());
    REQUIRE(plan);
    std::size_t binds = 0;
    for (const auto& s : plan->mounts)
      if (s.op == Op::bind && s.dest.starts_with("/home/u/ws/binds/")) {
        ++binds;
        CHECK(s.host_view);
      }
    CHECK(binds == 1000);
    check_against_scans(*plan);
  }
  SECTION("nested binds, repeats, trailing slashes and '..'") {
    for (const char* path : {"/home/u/ws/a", "/home/u/ws/a/b", "/home/u/ws/a", "/home/u/ws/a/b", "/home/u/ws/a/b",
                             "/home/u/ws/c/", "/home/u/ws/c", "/home/u/ws/d/../c", "/home/u/ws/e", "/tmp/x",
                             "/tmp/x", "/tmp/x/y", "/etc", "/etc"})
      p.mounts.push_back(mount_op(K::ro_bind, path, path));
    p.mounts.push_back(mount_op(K::hide, "", "/home/u/ws/e"));
    p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/e", "/home/u/ws/e"));
    auto plan = make_plan(p, host());
    REQUIRE(plan);
    check_against_scans(*plan);
  }
  SECTION("a bind under a hidden path and over a protected one") {
    p.hidden_paths = {"/home/u/.ssh/", "/home/u/.netrc"};
    p.mounts.push_back(mount_op(K::ro_bind, "/home/u/.ssh/keys", "/home/u/.ssh/keys"));
    p.mounts.push_back(mount_op(K::bind, "/home/u/ws/.git/hooks", "/home/u/ws/.git/hooks"));
    p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/.git", "/home/u/ws/.git"));
    p.mounts.push_back(mount_op(K::ro_bind, "/home/u/ws/.git", "/home/u/ws/.git"));
    auto plan = make_plan(p, host());
    REQUIRE(plan);
    check_against_scans(*plan);
  }
}
