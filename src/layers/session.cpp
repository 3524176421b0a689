#include "layers/session.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "layers/dirs.hpp"
#include "policy/json.hpp"
#include "policy/protect.hpp"
#include "sys/syscalls.hpp"

namespace nsrun::layers {

namespace {

constexpr const char* run_file = "run.json";
constexpr std::string_view work_prefix = "work-";
constexpr const char* ended_file = "ended";

// The upper directory is the overlay's root: it lends the merged
// directory its mode (and, for root, its owner), so it copies the real one.
// (The real directory is read only when the upper one is new: a launch on
// an existing layer makes one failed mkdir here, nothing else.)
Result<void> make_upper(int parent, const std::string& shown, const std::string& real_dir) {
  if (::mkdirat(parent, "upper", 0700) != 0) {
    if (errno != EEXIST) return fail(sys_error("mkdir", shown + "/upper"));
    return {};
  }
  struct stat real{};
  if (::stat(real_dir.c_str(), &real) != 0) {
    const int err = errno;
    (void)::unlinkat(parent, "upper", AT_REMOVEDIR);  // made again, with the mode, next time
    return fail(sys_error("stat", real_dir, err));
  }
  if (::fchmodat(parent, "upper", real.st_mode & 07777, 0) != 0) return fail(sys_error("chmod", shown + "/upper"));
  if (::geteuid() == 0) (void)::fchownat(parent, "upper", real.st_uid, real.st_gid, AT_SYMLINK_NOFOLLOW);
  return {};
}

}  // namespace

// The run layer's work directory, made under a temporary name, locked,
// then renamed: no one ever sees one under its final name unlocked.
Result<Session::Work> Session::make_work(int parent, const std::string& shown) {
  const std::string tmp = fmt::format(".new-{}", random_hex(12));
  if (::mkdirat(parent, tmp.c_str(), 0700) != 0) return fail(sys_error("mkdir", shown + "/" + tmp));
  Fd lock(::openat(parent, tmp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lock || ::flock(lock.get(), LOCK_EX) != 0) return fail(sys_error("lock", shown + "/" + tmp));
  const std::string name = fmt::format("{}{}", work_prefix, random_hex(12));
  if (::renameat(parent, tmp.c_str(), parent, name.c_str()) != 0) return fail(sys_error("rename", shown + "/" + name));
  Fd dup(::fcntl(parent, F_DUPFD_CLOEXEC, 3));
  if (!dup) return fail(sys_error("dup", shown));
  return Work{std::move(dup), name, std::move(lock), shown + "/" + name};
}

Result<Session> Session::open(const Policy& policy) {
  Session s;
  s.policy_ = policy;
  settle_layers(s.policy_);
  CowLayers& l = s.policy_.layers;
  const bool writing = policy.mode == Mode::workspace_write;

  if (writing && policy.workspace_mode == WorkspaceMode::cow) {
    auto base = open_private_dir(l.run_base);
    if (!base) return fail(base.error());
    std::string id = policy.run_id;
    if (!id.empty()) {
      // The caller's name: a run of that name is another run's layer, never
      // reused (its review would mix two runs).
      if (::mkdirat(base->get(), id.c_str(), 0700) != 0) {
        if (errno == EEXIST)
          return fail(usage_error("--run-id", fmt::format("'{}' is in use: a run of that name is under {} (nsrun "
                                                          "discard {}, or another name)",
                                                          id, l.run_base, id)));
        return fail(sys_error("mkdir", l.run_base + "/" + id));
      }
    } else {
      for (int tries = 0;; ++tries) {
        id = random_hex(12);
        if (::mkdirat(base->get(), id.c_str(), 0700) == 0) break;
        if (errno != EEXIST || tries > 16) return fail(sys_error("mkdir", l.run_base + "/" + id));
      }
    }
    const std::string dir = l.run_base + "/" + id;
    // From here a failure takes the half-made layer away with it: a launch
    // that never ran leaves no run behind.
    struct Unmade {
      int base;
      std::string id, dir;
      bool armed = true;
      ~Unmade() {
        if (armed) (void)remove_tree(base, id, dir);
      }
    } unmade{base->get(), id, dir};
    Fd run(::openat(base->get(), id.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!run) return fail(sys_error("open", dir));
    if (auto r = make_upper(run.get(), dir, policy.workspace); !r) return fail(r.error());
    // Coarse real time, the clock file times come from: a host file changed
    // after this has a ctime at or after it (nsrun commit's conflicts).
    struct timespec start{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &start);
    json::Value info = json::Value::object();
    info.set("id", id);
    info.set("workspace", policy.workspace);
    info.set("start_sec", static_cast<int64_t>(start.tv_sec));
    info.set("start_nsec", static_cast<int64_t>(start.tv_nsec));
    // Whether every process of the run dies with it (a PID namespace of its
    // own): only then may commit move files out of the layer (RunInfo).
    info.set("pid_namespace", policy.ns.pid);
    // The run's own protected set, as the launch applies it inside the
    // sandbox: commit refuses exactly these (and what lies on the way to
    // them). The command cannot reach this file: the run base is hidden in
    // the sandbox (mount/presets), and it is written before the command runs.
    json::Value set = json::Value::array();
    for (auto& rel : protected_in_root(policy.workspace, protected_paths(policy))) set.push_back(std::move(rel));
    info.set("protected", std::move(set));
    if (auto r = write_atomically(run.get(), run_file, json::dump(info) + "\n", 0600, dir + "/" + run_file); !r)
      return fail(r.error());
    Fd dirfd(::openat(base->get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dirfd) return fail(sys_error("open", dir));
    auto work = make_work(dirfd.get(), dir);
    if (!work) return fail(work.error());
    l.run_id = id;
    l.workspace = {policy.workspace, dir + "/upper", dir + "/" + work->name};
    s.run_work_ = std::move(*work);
    unmade.armed = false;
    s.run_base_ = std::move(*base);
  }

  // The bwrap dialect has no home overlay (bwrap has none).
  if (policy.preset && policy.mode != Mode::full_access && policy.home == HomeMode::cow && !l.home.empty() &&
      !l.home_base.empty()) {
    // A layer that cannot be made (a home or state directory the caller
    // cannot write, one someone else owns, a symlink on the way) leaves the
    // home as the read-only root shows it, stated: less than asked, never
    // more, and never a launch refused where --home ro ran.
    if (auto r = s.open_home_layer(); !r) {
      s.home_note_ = r.error().message();
      s.policy_.home = HomeMode::ro;
      l.home_layer = {};
      l.redirect.clear();
      // That read-only home showed the home layers' base with it: other
      // workspaces' layers, what their runs wrote into their homes (keys,
      // tokens). Hidden as for --home ro.
      hide_home_base(s.policy_);
    }
  }
  return s;
}

Result<void> Session::open_home_layer() {
  CowLayers& l = policy_.layers;
  {
    const std::string dir = l.home_base + "/" + l.home_name;
    auto layer = open_private_dir(dir);
    if (!layer) return fail(layer.error());
    Fd dirfd(::openat(layer->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dirfd) return fail(sys_error("open", dir));
    if (auto r = make_upper(dirfd.get(), dir, l.home); !r) return fail(r.error());
    auto slot = take_work_slot(dirfd.get(), dir);
    if (!slot) return fail(slot.error());
    // The Landlock rung's fallback (no overlay there): caches redirected
    // into a directory of the layer's own.
    if (::mkdirat(dirfd.get(), "redirect", 0700) != 0 && errno != EEXIST) return fail(sys_error("mkdir", dir + "/redirect"));
    l.redirect = dir + "/redirect";
    l.home_layer = {l.home, dir + "/upper", dir + "/" + slot->name};
    home_slot_ = std::move(*slot);
    home_dir_ = std::move(dirfd);
    home_shown_ = dir;
  }
  return {};
}

void Session::mark_ended() {
  if (!run_work_) return;
  // Best effort: a run left unmarked is committed by copying, as before.
  Fd f(::openat(run_work_->parent.get(), ended_file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
}

RunState run_state(const std::string& dir, std::vector<Fd>& held) {
  Fd d(sys::openat2(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS));
  if (!d) return RunState::running;
  auto names = list_dir(d.get(), dir);
  if (!names) return RunState::running;
  for (const auto& n : *names) {
    // ".new-": a work directory being made (locked before it is renamed).
    if (!n.starts_with(work_prefix) && !n.starts_with(".new-")) continue;
    Fd fd(::openat(d.get(), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return RunState::running;
    held.push_back(std::move(fd));
  }
  struct stat ended{};
  if (::fstatat(d.get(), ended_file, &ended, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(ended.st_mode))
    return RunState::stopped;
  return RunState::ended;
}

bool run_over(const std::string& dir, std::vector<Fd>& held) { return run_state(dir, held) == RunState::ended; }

void Session::close() {
  // The run layer's work directory stays (unlocked) until the caller
  // removes the run (`nsrun discard`): no other launch ever mounts this layer,
  // and removing its five directories (overlayfs's work/work and, with
  // `volatile`, incompat/volatile/dirty) on a busy file system cost a cow
  // launch more than its whole sandbox set-up (docs/bench.md, the cow row).
  run_work_.reset();
  if (home_slot_) {
    release_work_slot(home_dir_.get(), *home_slot_, home_shown_);
    home_slot_.reset();
    home_dir_.reset();
  }
}

bool Session::discard_unused() {
  if (run_id().empty() || !run_base_) return false;
  run_work_.reset();
  const std::string dir = policy_.layers.run_base + "/" + run_id();
  Fd upper(::openat(run_base_.get(), (run_id() + "/upper").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!upper) return false;
  auto names = list_dir(upper.get(), dir + "/upper");
  if (!names || !names->empty()) return false;
  if (auto r = remove_tree(run_base_.get(), run_id(), dir); !r) return false;
  run_base_.reset();
  return true;
}

bool valid_run_id(std::string_view id) { return valid_run_name(id); }

Result<RunInfo> find_run(const std::string& base, const std::string& id) {
  if (!valid_run_id(id)) return fail(usage_error("run id", fmt::format("'{}' is not a run id", printable(id))));
  if (base.empty()) return fail(usage_error("run id", "no run directory: set XDG_RUNTIME_DIR or HOME, or give --cow-dir DIR"));
  auto b = open_private_dir(base, 0700, false);
  if (!b) return fail(usage_error("run id", fmt::format("no run {} under {} ({})", id, base, b.error().message())));
  Fd run(::openat(b->get(), id.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!run) return fail(usage_error("run id", fmt::format("no run {} under {}", id, base)));
  const std::string shown = base + "/" + id + "/" + run_file;
  auto bad = [&](std::string why) { return fail(Error{"run layer", EINVAL, shown, std::move(why)}); };
  // Written by nsrun as the caller (0600, through a rename): anything else
  // is not trusted to say where to commit and what to refuse.
  struct stat st{};
  if (::fstatat(run.get(), run_file, &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(sys_error("stat", shown));
  // (0600 as written, less whatever the umask took; never a group or
  // other bit.)
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 07077) != 0 || st.st_nlink != 1)
    return bad("not a regular file of the caller's, private to them, with one link (not written by nsrun)");
  auto text = read_at(run.get(), run_file, shown);
  if (!text) return fail(text.error());
  auto v = json::parse(*text);
  if (!v || !v->is_object()) return bad("not a JSON object");
  for (const auto& [key, value] : v->as_object())
    if (key != "id" && key != "workspace" && key != "start_sec" && key != "start_nsec" && key != "protected" &&
        key != "pid_namespace")
      return bad(fmt::format("unknown field '{}'", key));
  RunInfo info;
  info.id = id;
  info.dir = base + "/" + id;
  const json::Value* rid = v->find("id");
  const json::Value* ws = v->find("workspace");
  const json::Value* sec = v->find("start_sec");
  const json::Value* nsec = v->find("start_nsec");
  if (rid == nullptr || !rid->is_string() || rid->as_string() != id) return bad("its id is not the run's");
  if (ws == nullptr || !ws->is_string() || !ws->as_string().starts_with('/') || sec == nullptr || !sec->is_int() ||
      nsec == nullptr || !nsec->is_int() || nsec->as_int() < 0 || nsec->as_int() >= 1000000000)
    return bad("lacks workspace or start");
  info.workspace = ws->as_string();
  info.start.tv_sec = static_cast<time_t>(sec->as_int());
  info.start.tv_nsec = static_cast<long>(nsec->as_int());
  if (const json::Value* pid = v->find("pid_namespace")) {
    if (!pid->is_bool()) return bad("pid_namespace is not true or false");
    info.pid_namespace = pid->as_bool();
  }
  if (const json::Value* set = v->find("protected")) {
    if (!set->is_array()) return bad("protected is not an array");
    std::vector<std::string> paths;
    for (const auto& e : set->as_array()) {
      if (!e.is_string()) return bad("a protected entry is not a string");
      auto norm = normal_relative(e.as_string());
      if (!norm || *norm != e.as_string()) return bad(fmt::format("protected entry '{}' is not a normal relative path", e.as_string()));
      paths.push_back(*norm);
    }
    info.protected_set = std::move(paths);
  }
  return info;
}

}  // namespace nsrun::layers
