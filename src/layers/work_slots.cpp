#include "layers/work_slots.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "layers/dirs.hpp"

namespace nsrun::layers {

namespace {

constexpr std::string_view slot_prefix = "work-";
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
    if (made) remove_leftovers(layer, shown);
    return WorkSlot{std::move(fd), name, i};
  }
  return fail(Error{"lock", EAGAIN, shown, fmt::format("all {} work slots are in use", max_slots)});
}

void release_work_slot(int layer, WorkSlot& slot, const std::string& shown) {
  if (!slot.lock) return;
  if (!slot.kept()) (void)remove_tree(layer, slot.name, shown + "/" + slot.name);
  slot.lock.reset();
}

}  // namespace nsrun::layers
