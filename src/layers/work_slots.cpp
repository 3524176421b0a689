#include "layers/work_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "layers/dirs.hpp"

namespace nsrun::layers {

namespace {

constexpr std::string_view slot_prefix = "work-";
constexpr const char* aside_dir = "aside";
// Far more launches at once than a machine runs; past it something is
// wrong (a loop of slots that vanish under us), and the launch stops.
constexpr unsigned max_slots = 4096;

// Removes what no live launch holds and no later launch needs: overflow
// slots and the per-launch work directories older nsrun versions made
// (`work-<12 hex>`, and `.new-<hex>` left between their mkdir and rename),
// each only when its lock is free. Run when a slot is made (seldom: the
// first launches on a layer, or more at once than ever before), not on
// every launch.
void remove_leftovers(int layer, const std::string& shown) {
  auto names = list_dir(layer, shown);
  if (!names) return;
  for (const auto& n : *names) {
    const auto index = work_slot_index(n);
    const bool old = !index && (n.starts_with(slot_prefix) || n.starts_with(".new-"));
    if (!old && !(index && *index >= kept_work_slots)) continue;
    Fd fd(::openat(layer, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    (void)remove_tree(layer, n, shown + "/" + n);
  }
}

// overlayfs empties `work/work` itself when it mounts, but only one level
// of directories deep (ovl_workdir_cleanup); with more it gives up and
// mounts the whole layer read-only. After a clean unmount `work/work` is
// empty, and a killed sandbox cannot interrupt the kernel inside an
// operation, so this finds something only after a host crash or a hand in
// the directory: then the whole `work` goes. One fstatat per launch: a
// directory's link count is 2 plus its subdirectories.
Result<void> clear_deep_work(int slot, const std::string& shown) {
  struct stat st{};
  if (::fstatat(slot, "work", &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return fail(sys_error("stat", shown + "/work"));
  }
  if (S_ISDIR(st.st_mode) && st.st_nlink <= 2) return {};
  return remove_tree(slot, "work", shown + "/work");
}

// The layer's `aside` directory, made when missing, opened through no
// symlink.
Result<Fd> open_aside(int layer, const std::string& shown, bool create) {
  Fd fd(::openat(layer, aside_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT && create) {
    if (::mkdirat(layer, aside_dir, 0700) != 0 && errno != EEXIST) return fail(sys_error("mkdir", shown + "/" + aside_dir));
    fd.reset(::openat(layer, aside_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd) return fail(sys_error("open", shown + "/" + aside_dir));
  return fd;
}

// Moves the slot's `work` (overlayfs's work/work, after a clean unmount an
// empty directory) to aside/<index>. Replacing an empty directory there (a
// set-aside a killed launch did not remove) is part of the rename; one with
// something in it is removed first. Nothing to move: nothing done.
Result<bool> set_aside(int layer, int slot, unsigned index, const std::string& shown) {
  struct stat st{};
  if (::fstatat(slot, "work", &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;  // a new slot, or one only the Landlock rung used
    return fail(sys_error("stat", shown + "/work"));
  }
  auto aside = open_aside(layer, shown, true);
  if (!aside) return fail(aside.error());
  const std::string name = std::to_string(index);
  const std::string target = shown + "/" + aside_dir + "/" + name;
  for (int tries = 0; tries < 3; ++tries) {
    if (::renameat(slot, "work", aside->get(), name.c_str()) == 0) return true;
    // A directory moved to another parent needs write permission on itself
    // (its ".." changes), and overlayfs leaves work/work at mode 0: the
    // caller's own directory, opened up (root needs no such step).
    if (errno == EACCES && S_ISDIR(st.st_mode) && (st.st_mode & 0700) != 0700) {
      if (::fchmodat(slot, "work", 0700, 0) != 0) return fail(sys_error("chmod", shown + "/work"));
      st.st_mode |= 0700;
      continue;
    }
    if (errno != ENOTEMPTY && errno != EEXIST && errno != ENOTDIR && errno != EISDIR)
      return fail(sys_error("rename", target));
    if (auto r = remove_tree(aside->get(), name, target); !r) return fail(r.error());
  }
  return fail(Error{"rename", EAGAIN, target, "the set-aside work directory keeps coming back"});
}

}  // namespace

std::string work_slot_name(unsigned index) { return fmt::format("{}{}", slot_prefix, index); }

std::optional<unsigned> work_slot_index(std::string_view name) {
  if (!name.starts_with(slot_prefix)) return std::nullopt;
  const std::string_view digits = name.substr(slot_prefix.size());
  if (digits.empty() || digits.size() > 4 || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  unsigned n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<unsigned>(c - '0');
  }
  if (n >= max_slots) return std::nullopt;
  return n;
}

Result<WorkSlot> take_work_slot(int layer, const std::string& shown) {
  bool made = false;
  unsigned retries = 0;  // for this slot number: made or replaced under us
  for (unsigned i = 0; i < max_slots;) {
    const std::string name = work_slot_name(i);
    const std::string path = shown + "/" + name;
    Fd fd(::openat(layer, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      // Anything but a missing slot (a symlink or a file there: not
      // nsrun's) is refused; the layer directory is the caller's, 0700.
      if (errno != ENOENT) return fail(sys_error("open", path));
      if (++retries > 64) return fail(Error{"lock", EAGAIN, path, "the work slot keeps being removed"});
      if (::mkdirat(layer, name.c_str(), 0700) != 0 && errno != EEXIST) return fail(sys_error("mkdir", path));
      made = true;
      continue;  // opened (and locked) like any other slot
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return fail(sys_error("lock", path));
      ++i;  // a live launch holds it
      retries = 0;
      continue;
    }
    // Locked, but is it still the slot of that name? The last user of an
    // overflow slot removes it under its lock; whoever opened it just
    // before holds a removed directory and tries the name again.
    struct stat held{}, named{};
    if (::fstat(fd.get(), &held) != 0) return fail(sys_error("stat", path));
    if (::fstatat(layer, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || held.st_dev != named.st_dev ||
        held.st_ino != named.st_ino) {
      if (++retries > 64) return fail(Error{"lock", EAGAIN, path, "the work slot keeps being replaced"});
      continue;
    }
    if (held.st_uid != ::geteuid()) return fail(Error{"lock", EPERM, path, "a work slot the caller does not own"});
    if (auto r = clear_deep_work(fd.get(), path); !r) return fail(r.error());
    auto aside = set_aside(layer, fd.get(), i, path);
    if (!aside) return fail(aside.error());
    if (made) remove_leftovers(layer, shown);
    return WorkSlot{std::move(fd), name, i, *aside};
  }
  return fail(Error{"lock", EAGAIN, shown, fmt::format("all {} work slots are in use", max_slots)});
}

void remove_set_aside(int layer, WorkSlot& slot, const std::string& shown) {
  if (!slot.set_aside) return;
  slot.set_aside = false;
  auto aside = open_aside(layer, shown, false);
  if (!aside) return;
  const std::string name = std::to_string(slot.index);
  // Empty after a clean unmount: one rmdir. Anything else (a host crash in
  // the middle of a copy-up) goes whole.
  if (::unlinkat(aside->get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    (void)remove_tree(aside->get(), name, shown + "/" + aside_dir + "/" + name);
}

void release_work_slot(int layer, WorkSlot& slot, const std::string& shown) {
  if (!slot.lock) return;
  remove_set_aside(layer, slot, shown);
  if (!slot.kept()) (void)remove_tree(layer, slot.name, shown + "/" + slot.name);
  slot.lock.reset();
}

}  // namespace nsrun::layers
