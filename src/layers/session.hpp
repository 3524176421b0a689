// The launch's part of the copy-on-write layers: before clone, make (or
// open) the run layer and the home layer as the caller, and fill their
// directories into a copy of the Policy, so the plan stays a pure function
// of it. Each launch gets a work directory of its own, locked while it
// runs: two sandboxes never share one (overlayfs's rule). The run layer's
// is made per launch (one launch per run); the home layer's comes from a
// pool of slots reused across launches (layers/work_slots.hpp).
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "layers/work_slots.hpp"
#include "policy/policy.hpp"
#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::layers {

// The facts of a run layer (`run.json` beside its upper directory).
struct RunInfo {
  std::string id;
  std::string dir;        // <run base>/<id>
  std::string workspace;  // the real workspace: the lower layer
  struct timespec start{};  // coarse real time before the overlay was made
  // The run's effective protected set, relative to the workspace (its
  // --protect / --unprotect / --protect-defaults as the launch applied
  // them): what `nsrun commit` refuses. Empty optional: run.json has no
  // valid set (an older nsrun wrote it), and commit refuses everything.
  std::optional<std::vector<std::string>> protected_set;
  // The run had a PID namespace of its own, so none of its processes
  // outlived it (the kernel kills them with its PID 1). Without one (a
  // Policy's "namespaces": {"pid": false}) a process may still hold a layer
  // file open after nsrun exits and its work lock is gone; false when
  // run.json does not say.
  bool pid_namespace = false;
};

class Session {
 public:
  // Nothing to do when the Policy asks for no layer: policy() is the input.
  static Result<Session> open(const Policy& policy);

  const Policy& policy() const { return policy_; }
  const std::string& run_id() const { return policy_.layers.run_id; }
  bool home_layer() const { return !policy_.layers.home_layer.upper.empty(); }
  // Why a copy-on-write home asked for has no layer (the home stays
  // read-only); empty when it has one or none was asked for.
  const std::string& home_note() const { return home_note_; }

  // After the launch has reaped its PID 1 (and with it, in a PID namespace,
  // every process of the sandbox): the run layer is marked ended. Only an
  // ended run's files may move out of its layer at commit: a work lock
  // alone is freed when nsrun dies, which can be before the kernel has
  // killed the sandbox's last process (SIGKILL of nsrun: PID 1 dies of its
  // parent-death signal a moment later). Without the mark, commit copies.
  void mark_ended();

  // After a launch refused before its command ran (nsrun's own failure):
  // the run layer is removed when nothing was written into it, so a
  // refused launch leaves no run behind. True when it was removed.
  bool discard_unused();

  // After the run: the home layer's work slot is unlocked (an overflow
  // slot removed); the run layer's work directory stays, unlocked, until
  // `nsrun discard`.
  void close();

  Session(Session&&) = default;
  Session& operator=(Session&&) = default;
  ~Session() { close(); }

 private:
  Session() = default;
  struct Work {
    Fd parent;          // the directory holding it
    std::string name;
    Fd lock;            // flock()ed while the sandbox runs
    std::string shown;
  };
  static Result<Work> make_work(int parent, const std::string& shown);
  Result<void> open_home_layer();
  Policy policy_;
  std::string home_note_;
  std::optional<Work> run_work_;
  Fd run_base_;  // the run base, holding the run layer
  Fd home_dir_;  // the home layer's directory, holding the slot
  std::string home_shown_;
  std::optional<WorkSlot> home_slot_;
};

// The run layer `id` under `base`; fails when there is none, and when its
// run.json is not one nsrun wrote: not a regular file of the caller's
// without group or other permissions and with one link, an unknown or missing field, an id that is not
// the directory's, a workspace that is not absolute, a protected entry
// that is not a normal relative path (fail closed: a commit needs it).
Result<RunInfo> find_run(const std::string& base, const std::string& id);

// Whether no sandbox runs on the run layer in `dir` (<run base>/<id>) now:
// the launch marked it ended (Session::mark_ended) and each of its work
// directories' locks is free (a launch holds its own
// while the sandbox runs). The locks are taken and stay held in `held`
// for as long as the caller keeps it. Anything that cannot be looked at
// counts as running (false).
bool run_over(const std::string& dir, std::vector<Fd>& held);

// The same look, told apart: `running` (a work directory's lock is held,
// or the layer cannot be looked at), `ended` (run_over()), `stopped` (no
// lock held, but the launch never marked it ended: nsrun was killed, and
// without a PID namespace a process of the run may live on).
enum class RunState { running, ended, stopped };
RunState run_state(const std::string& dir, std::vector<Fd>& held);

// Run ids: 12 lowercase hexadecimal digits, or the caller's --run-id
// (valid_run_name()).
bool valid_run_id(std::string_view id);

}  // namespace nsrun::layers
