// The one input of everything after the front ends. A front end (native
// options, the bwrap dialect, a JSON file) fills a Policy; validation, the
// plan and the executors read nothing else: not argv, not the environment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/limits.hpp"
#include "sys/namespaces.hpp"
#include "policy/cow.hpp"

namespace nsrun {

enum class Mode { read_only, workspace_write, full_access };
enum class ProcMode { automatic, fresh, host_bind, none };
enum class Backend { automatic, namespaces, landlock };
enum class Network { share, none, proxy };
enum class SeccompMode { standard, none, log };
// Host pathname sockets: `hide_known` covers the
// well-known ones (Policy::hidden_sockets); `none` refuses every AF_UNIX
// socket() (socketpair stays), so no pathname socket is reached or made.
enum class UnixSockets { hide_known, none };

// One filesystem operation, in the order given. Paths are absolute; `dest` is
// a path inside the sandbox, `source` a path on the host.
struct MountOp {
  enum class Kind {
    bind,        // read-write bind of source onto dest (recursive)
    ro_bind,     // read-only bind
    dev_bind,    // bind that keeps device nodes usable
    tmpfs,       // an empty tmpfs on dest
    hide,        // an empty read-only tmpfs over dest
    proc,        // procfs on dest (fresh or host, per Policy::proc)
    dev,         // a minimal /dev on dest
    mqueue,      // a POSIX message queue filesystem on dest
    dir,         // create a directory
    symlink,     // create a symlink dest -> source
    file,        // create a file holding `data`
    bind_data,   // a file holding `data`, bound read-write
    ro_bind_data,// a file holding `data`, bound read-only
    remount_ro,  // make dest (recursively) read-only
    chmod,       // change the mode of dest to `perms`
    overlay,     // overlayfs on dest: `layers` below, `source` the writable upper dir, `workdir` beside it
    tmp_overlay, // overlayfs on dest: `layers` below, writes go to a private tmpfs
    ro_overlay,  // read-only overlayfs on dest from `layers`
  };
  Kind kind = Kind::bind;
  std::string source;
  std::string dest;
  bool optional = false;               // the *-try variants: a missing source is skipped
  std::optional<uint32_t> perms;       // mode for created files, dirs and tmpfs roots
  std::optional<uint64_t> size;        // tmpfs size in bytes
  std::string data;                    // contents for file / *_data kinds
  std::optional<int> source_fd;        // binds: an open fd (O_PATH or directory) instead of `source`
  std::vector<std::string> layers;     // overlays: host directories, uppermost first
  std::string workdir;                 // overlay: the work directory beside the upper one
  bool volatile_upper = false;         // overlay: mounted `volatile` (no sync of the upper file system)
  bool layer = false;                  // overlay: one of nsrun's layers, read by commit and home diff

  bool operator==(const MountOp&) const = default;
};

// Namespaces to make besides the mount namespace, which the namespace rung
// always makes.
struct Namespaces {
  bool user = true;
  bool pid = true;
  bool net = false;    // follows Policy::network unless set explicitly
  bool ipc = true;
  bool uts = true;
  bool cgroup = true;  // where the kernel has it

  bool operator==(const Namespaces&) const = default;
};

// The Namespaces field for a row of namespace_kinds (sys/namespaces.hpp),
// or nullptr for the mount namespace, which is always made.
constexpr bool Namespaces::*namespace_field(uint64_t clone_flag) {
  switch (clone_flag) {
    case CLONE_NEWUSER: return &Namespaces::user;
    case CLONE_NEWPID: return &Namespaces::pid;
    case CLONE_NEWNET: return &Namespaces::net;
    case CLONE_NEWIPC: return &Namespaces::ipc;
    case CLONE_NEWUTS: return &Namespaces::uts;
    case CLONE_NEWCGROUP: return &Namespaces::cgroup;
    default: return nullptr;
  }
}

// One change to the inherited environment, applied in order.
struct EnvOp {
  enum class Kind { set, unset, allow, deny };
  Kind kind = Kind::set;
  std::string name;   // a variable name, or a glob for allow / deny
  std::string value;  // for set

  bool operator==(const EnvOp&) const = default;
};

// --network proxy: where the command's connections may go.
// Patterns as src/policy/hosts.hpp reads them.
struct EgressRules {
  std::vector<std::string> allow;    // --allow-host PATTERN
  std::vector<std::string> deny;     // --deny-host PATTERN (wins over allow)
  std::vector<std::string> resolve;  // --resolve-host NAME=ADDRESS (curl's --resolve)
  std::string log;                   // --network-log FILE: decisions as JSON lines

  bool operator==(const EgressRules&) const = default;
};

// A hidden settings file shown as a copy without its secret lines
// (policy/settings_copy.hpp).
struct SettingsCopy {
  std::string path;  // canonical, one of Policy::hidden_paths
  std::string text;  // what the command reads there

  bool operator==(const SettingsCopy&) const = default;
};

// A new member needs its row in policy_fields() (src/policy/policy_json.cpp):
// the JSON key that holds it, or why the JSON leaves it out.
struct Policy {
  Mode mode = Mode::workspace_write;
  // The workspace is the first writable root in workspace-write mode. Empty
  // means "the current directory", resolved by the front end.
  std::string workspace;
  std::vector<std::string> writable;   // extra writable roots
  // Mode presets expand into the head of the mount list; `mounts` follow, so
  // later entries win, as in bwrap. A front end that gives the whole list
  // itself (bwrap's dialect) turns the preset off.
  bool preset = true;
  std::vector<MountOp> mounts;
  // bwrap's dialect: bind sources and destinations follow symlinks, as
  // bwrap's do (inside the new root). Otherwise (the native front ends) the
  // paths of binds, --ro, --hide, the workspace and the writable roots are
  // protections: resolved once, through no symlink (docs/hardening.md).
  bool follow_symlinks = false;

  Namespaces ns;
  std::optional<uid_t> uid;            // uid inside; default: the caller's
  std::optional<gid_t> gid;
  std::string hostname = "nsrun";      // when a UTS namespace is made

  ProcMode proc = ProcMode::automatic;
  std::string host_backend;            // normalised name, empty: none
  Backend backend = Backend::automatic;
  Network network = Network::share;
  EgressRules egress;                  // --network proxy only
  SeccompMode seccomp = SeccompMode::standard;
  UnixSockets unix_sockets = UnixSockets::hide_known;
  // The well-known host sockets to hide, resolved by the front end from the
  // host and the caller's environment (src/policy/sockets.hpp): absolute,
  // canonical paths of those that exist, minus `allow_sockets`. A path
  // ending in '/' is a directory, covered whole.
  std::vector<std::string> hidden_sockets;
  std::vector<std::string> allow_sockets;  // --allow-socket PATH
  // Protected paths inside every writable root (the set, its
  // reasons and the matching rule are in src/policy/protect.hpp).
  bool protect_defaults = true;          // --protect-defaults none: drop the default set
  std::vector<std::string> protect;      // --protect PATH: relative to each writable root, or absolute inside one
  std::vector<std::string> unprotect;    // --unprotect PATH: drop an entry (as written in the set)
  // Credentials hidden by default (src/policy/protect.hpp).
  bool hide_defaults = true;             // --hide-defaults none: drop the default set
  std::vector<std::string> allow_read;   // --allow-read PATH: do not hide this one
  // Resolved by the front end from the host and $HOME, like hidden_sockets:
  // canonical paths of those that exist, minus allow_read; a directory ends
  // in '/'.
  std::vector<std::string> hidden_paths;
  // Of those, the settings files with secrets among their settings
  // (~/.npmrc, ~/.pypirc): the namespace rung covers each with a read-only
  // copy left without every line that could hold a secret, read and
  // filtered by the front end; the Landlock rung, which cannot show other
  // content at a path, hides them whole.
  bool settings_copy = true;                  // --no-settings-copy: hidden whole on both rungs
  std::vector<SettingsCopy> settings_copies;
  // Single files strictly inside a hidden directory that --allow-read
  // names (~/.ssh/known_hosts): the directory stays hidden and each is
  // shown read-only, itself only (canonical, a regular file with one link,
  // resolved by the front end; checked again where each rung opens it).
  std::vector<std::string> shown_in_hidden;
  bool allow_nested_userns = false;
  std::vector<int> seccomp_fds;        // extra compiled BPF programs (bwrap --seccomp)
  std::vector<std::string> cap_add;    // capabilities kept inside (bwrap --cap-add)
  // The kept ones made inheritable and ambient too, so they survive exec.
  // false: bwrap's default for root (no --cap-add/--cap-drop), which leaves
  // the inheritable set as the sandbox got it (the caller's, or empty in a
  // new user namespace) and the ambient set to match.
  bool cap_grant_inheritable = true;

  // --network none: the common package managers' offline switches in the
  // command's environment, so they fail at once instead of after their
  // retries (offline_environment()); --no-offline-env leaves them.
  bool offline_env = true;
  bool clearenv = false;
  std::vector<EnvOp> env;

  std::string chdir;                   // empty: the current directory when visible, else /
  bool as_pid_1 = false;
  bool die_with_parent = true;
  std::optional<bool> new_session;     // unset: only when stdin is not a terminal
  std::vector<int> pass_fds;           // fds above 2 kept open for the command

  // Coordination with the caller (bwrap's status and blocking fds).
  std::optional<int> info_fd;          // one JSON object: child pid, namespace inodes
  std::optional<int> json_status_fd;   // JSON lines: the same at start, then the exit code
  std::optional<int> block_fd;         // the sandbox waits for a byte (or EOF) here before exec
  std::optional<int> userns_block_fd;  // the same, right after the id maps are written
  std::vector<std::string> lock_files; // paths inside, read-locked while the sandbox runs
  bool disable_userns = false;         // the command may not create user namespaces
  bool assert_userns_disabled = false; // refuse to exec if it still could
  // Existing namespaces, as open fds (bwrap --userns, --userns2, --pidns).
  // Not serialised: an fd number means nothing outside this process.
  std::optional<int> userns_fd;        // joined before clone instead of making a user namespace (no id maps)
  std::optional<int> userns2_fd;       // joined after the root is built, before capabilities are dropped
  std::optional<int> pidns_fd;         // the sandbox's PID namespace, or the parent of its new one

  // Resource limits and the timeout (policy/limits.hpp).
  Limits limits;
  bool verdict = false;                // --verdict: one stderr line when a non-zero end followed a refusal
  bool watch_writes = false;           // --watch-writes: observe write-intent calls (seccomp/writes.hpp)

  std::string report_path;             // --report PATH
  std::optional<int> report_fd;        // --report-fd N

  std::vector<std::string> argv;       // the command; argv[0] is looked up in PATH
  std::string argv0;                   // bwrap --argv0: argv[0] as the command sees it

  // Copy-on-write layers (src/policy/cow.hpp, src/layers/).
  WorkspaceMode workspace_mode = WorkspaceMode::direct;
  // cow by default in the presets (the bwrap dialect sets ro: bwrap has
  // no home overlay; full-access has no home of its own to confine).
  HomeMode home = HomeMode::cow;
  // --home or the "home" field named it. The default's fallbacks are in the
  // report and explain; one asked for is also stated on stderr (a line per
  // launch on every Landlock host would be noise in each command's stderr).
  bool home_given = false;
  std::string cow_dir;                 // --cow-dir DIR: where run layers go
  std::string home_layer;              // --home-layer NAME: share a home layer between workspaces
  std::string run_id;                  // --run-id NAME: the run layer's name, the caller's choice
  CowLayers layers;                    // resolved by the front end and the launch

  bool operator==(const Policy&) const = default;
};

// Names as they appear in JSON and on the command line.
std::string_view name(Mode);
std::string_view name(ProcMode);
std::string_view name(Backend);
std::string_view name(Network);
std::string_view name(SeccompMode);
std::string_view name(UnixSockets);
std::string_view name(MountOp::Kind);
std::string_view name(EnvOp::Kind);

std::optional<Mode> parse_mode(std::string_view);
std::optional<ProcMode> parse_proc_mode(std::string_view);
std::optional<Backend> parse_backend(std::string_view);
std::optional<Network> parse_network(std::string_view);
std::optional<SeccompMode> parse_seccomp_mode(std::string_view);
std::optional<UnixSockets> parse_unix_sockets(std::string_view);
std::optional<MountOp::Kind> parse_mount_kind(std::string_view);
std::optional<EnvOp::Kind> parse_env_kind(std::string_view);

}  // namespace nsrun
