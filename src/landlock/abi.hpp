// The Landlock user-space ABI, spelled out here because bookworm's kernel
// headers (6.1) stop at ABI 2's REFER. Values are the kernel's (uapi
// linux/landlock.h); each constant notes the ABI version that introduced it.
#pragma once

#include <cstdint>

namespace nsrun::landlock {

// landlock_create_ruleset() flag: ask for the highest ABI version.
inline constexpr uint32_t create_ruleset_version = 1u << 0;

// Rule types for landlock_add_rule().
inline constexpr int rule_path_beneath = 1;  // ABI 1
inline constexpr int rule_net_port = 2;      // ABI 4

// Filesystem access rights.
namespace fs {
inline constexpr uint64_t execute = 1ull << 0;       // ABI 1
inline constexpr uint64_t write_file = 1ull << 1;
inline constexpr uint64_t read_file = 1ull << 2;
inline constexpr uint64_t read_dir = 1ull << 3;
inline constexpr uint64_t remove_dir = 1ull << 4;
inline constexpr uint64_t remove_file = 1ull << 5;
inline constexpr uint64_t make_char = 1ull << 6;
inline constexpr uint64_t make_dir = 1ull << 7;
inline constexpr uint64_t make_reg = 1ull << 8;
inline constexpr uint64_t make_sock = 1ull << 9;
inline constexpr uint64_t make_fifo = 1ull << 10;
inline constexpr uint64_t make_block = 1ull << 11;
inline constexpr uint64_t make_sym = 1ull << 12;
inline constexpr uint64_t refer = 1ull << 13;        // ABI 2
inline constexpr uint64_t truncate = 1ull << 14;     // ABI 3
inline constexpr uint64_t ioctl_dev = 1ull << 15;    // ABI 5

// The rights that make sense on a regular file or device (a rule on a
// non-directory may carry only these; the kernel answers EINVAL otherwise).
inline constexpr uint64_t file_rights = execute | write_file | read_file | truncate | ioctl_dev;
}  // namespace fs

// Network access rights (ABI 4).
namespace net {
inline constexpr uint64_t bind_tcp = 1ull << 0;
inline constexpr uint64_t connect_tcp = 1ull << 1;
}  // namespace net

// IPC scopes (ABI 6): refuse reaching outside the Landlock domain.
namespace scope {
inline constexpr uint64_t abstract_unix_socket = 1ull << 0;
inline constexpr uint64_t signal = 1ull << 1;
}  // namespace scope

// landlock_restrict_self() flags (ABI 7): audit logging of denials.
namespace restrict_flags {
inline constexpr uint32_t log_same_exec_off = 1u << 0;
inline constexpr uint32_t log_new_exec_on = 1u << 1;
inline constexpr uint32_t log_subdomains_off = 1u << 2;
}  // namespace restrict_flags

// The kernel's structs. The ruleset attribute grew with ABI 4 (net) and
// ABI 6 (scoped); the kernel accepts the larger size as long as the fields
// it does not know are zero, so one layout serves every version.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access = 0;
  int32_t parent_fd = -1;
};

struct NetPortAttr {
  uint64_t allowed_access = 0;
  uint64_t port = 0;
};

// What each ABI version can handle.
uint64_t fs_rights(int abi);
uint64_t net_rights(int abi);
uint64_t scopes(int abi);

}  // namespace nsrun::landlock
