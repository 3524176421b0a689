// Policy + the kernel's Landlock ABI -> the ruleset to install, and how much
// of the mode's promise it keeps. Pure: no system call, so the downgrade
// from ABI 7 to ABI 1 is a table test without a kernel.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace nsrun::landlock {

enum class Enforcement { full, partial, none };
std::string_view name(Enforcement);

struct PathRule {
  std::string path;
  uint64_t access = 0;   // fs:: rights; for a file only fs::file_rights apply
  bool optional = false; // skipped when the path does not exist (a device node)
  // For `nsrun explain`-style listings and the report: always a string
  // literal (a view, not a copy: one allocation fewer per rule of a
  // listed directory).
  std::string_view why;
  bool no_symlinks = false; // opened through no symlink (a native writable root: docs/hardening.md)
  // Known to be a directory when planned: opened with O_DIRECTORY, which
  // the kernel checks, instead of an fstat after the open (one system call
  // less per rule). If it is no longer one, the open fails and
  // so does the launch; otherwise the rule is what the fstat would give.
  bool directory = false;
  // Known not to be a directory when planned (a listed file, device or
  // socket): its rights are masked to the file rights without an fstat
  // (a system call less). Should it have become a directory since, the
  // rule grants it those fewer rights (no read-dir), never more than
  // `access`. A rule whose rights are all file rights needs no fstat
  // either way (add_path_rule()).
  bool file = false;
  // Must be a regular file with one link when the rule is added (a file
  // shown inside a hidden directory: a rule is on the inode, and another
  // name of it could be a hidden key).
  bool one_link = false;

  bool operator==(const PathRule&) const = default;
};

struct Ruleset {
  int abi = 0;
  uint64_t handled_fs = 0;
  uint64_t handled_net = 0;
  uint64_t scoped = 0;
  std::vector<PathRule> rules;
  Enforcement enforcement = Enforcement::none;
  // Restrictions the promise asks for that this ABI cannot enforce, by
  // stable name: "truncate", "ioctl-dev", "network-tcp", "network-other",
  // "scope-signal", "scope-abstract-unix".
  std::vector<std::string> dropped;
  // What the promise needs but neither Landlock nor seccomp can confine to
  // the writable roots, so the rung's filter refuses it everywhere, the
  // writable roots included: "file-metadata", "sysv-ipc", "posix-mqueue".
  std::vector<std::string> refused;
};

// What the ruleset needs from the caller's world, gathered before the plan.
struct Inputs {
  std::vector<std::string> terminals;  // ttyname() of fds 0-2 that are terminals
  std::string tmpdir;                  // the private temporary directory
  // Policy::hidden_paths (credentials): each directory above one, with the
  // names in it but symlinks (hidden_listings() on the host: Landlock
  // checks resolved paths, so a link needs no rule), a directory's name
  // with a trailing '/'. A directory missing here cannot be listed, and
  // the rung cannot keep the credentials hidden.
  std::map<std::string, std::vector<std::string>> listings{};
  // Protected paths (policy/protect.hpp) that only mounts can keep: those
  // that exist in a writable root, or that the namespace rung seals.
  std::vector<std::string> protected_present{};
};

// The directories above each of `hidden` (canonical; a directory ends in
// '/'), from "/" down, without duplicates.
std::vector<std::string> hidden_ancestors(const std::vector<std::string>& hidden);

// The first item of the Policy the Landlock rung cannot keep exactly ("tmpfs
// /srv", "--proc none", "uid 0", ...); empty when it can keep all of it.
// Nothing is approximated: one such item makes the rung unusable.
std::string cannot_express(const Policy& policy);

struct CannotExpress {
  std::string item;
};

// abi >= 1. Fails with the item when cannot_express() names one.
std::expected<Ruleset, CannotExpress> make_ruleset(const Policy& policy, int abi, const Inputs& inputs);

// The rule for the private temporary directory `dir`: every right `r`
// handles. make_ruleset() adds it when Inputs::tmpdir is set.
PathRule tmpdir_rule(const Ruleset& r, const std::string& dir);

// `nsrun explain --backend landlock`: the ruleset, one line per path rule
// with its rights by the kernel's names, then the network rights, scopes,
// what this ABI drops and what the rung's filter refuses everywhere.
std::string describe(const Ruleset& r);

}  // namespace nsrun::landlock
