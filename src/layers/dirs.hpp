// Directories nsrun makes and removes on the caller's behalf for the
// copy-on-write layers: every path is walked one component at a time
// through no symlink (CVE-2019-12439's lesson: a planted link must not
// steer where nsrun creates or removes), and what nsrun makes is 0700.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <string>
#include <vector>

#include "sys/error.hpp"
#include "sys/fd.hpp"

namespace nsrun::layers {

// Opens the directory `path` (absolute) through no symlink, creating the
// missing components with `mode`. The last component must belong to the
// caller (a directory someone else made is refused: they could read the
// layers or swap them). Returns an O_PATH fd.
// With `create` false nothing is made: a missing component is ENOENT.
Result<Fd> open_private_dir(const std::string& path, mode_t mode = 0700, bool create = true);

// openat(dir, name) of a directory, no symlink followed, for reading.
Result<Fd> open_dir_at(int dir, const std::string& name, const std::string& shown);

// The names in directory `dir` (without "." and ".."), sorted.
Result<std::vector<std::string>> list_dir(int dir, const std::string& shown);

// Removes `name` in `dir` and everything below it, through no symlink and
// on no other file system; directories made unreadable are opened up
// first (they are the caller's own layers).
Result<void> remove_tree(int dir, const std::string& name, const std::string& shown);

// What a tree holds: its regular files and their bytes (st_size). A
// directory nsrun cannot read, or one deeper than max_walk_depth, counts
// as far as it was seen: `nsrun runs` and the git summary are figures for
// a reader, nothing decides on them.
struct TreeSize {
  uint64_t files = 0;
  uint64_t bytes = 0;
  TreeSize& operator+=(const TreeSize& o) {
    files += o.files;
    bytes += o.bytes;
    return *this;
  }
};
// Of `name` in `dir` (a file or a directory), through no symlink and on no
// other file system.
TreeSize tree_size(int dir, const std::string& name);

// How deep the recursive walks of a layer go (commit's, changes' and the
// patch's): the command builds those trees, and 30,000 nested directories
// overflowed nsrun's stack, a crash half-way through `nsrun commit` or
// `discard`. Past it a walk fails, naming the
// path (ENAMETOOLONG). remove_tree() has no such limit: it moves deep
// directories up instead, so `discard` and `home reset` remove any layer.
inline constexpr int max_walk_depth = 512;

// One level of a walk, for as long as it lives (a thread's own count).
class WalkLevel {
 public:
  WalkLevel() { ++depth_; }
  ~WalkLevel() { --depth_; }
  WalkLevel(const WalkLevel&) = delete;
  WalkLevel& operator=(const WalkLevel&) = delete;
  bool too_deep() const { return depth_ > max_walk_depth; }

 private:
  static inline thread_local int depth_ = 0;
};

// The error of a walk past max_walk_depth at `shown`.
Error too_deep(const std::string& shown);

// A random name of `hex` hexadecimal digits (getrandom).
std::string random_hex(std::size_t hex);

// Writes `text` to `name` in `dir` through a temporary name and a rename:
// a reader sees the old file or the new one.
Result<void> write_atomically(int dir, const std::string& name, std::string_view text, mode_t mode,
                              const std::string& shown);

// Reads a whole regular file `name` in `dir` (no symlink followed).
Result<std::string> read_at(int dir, const std::string& name, const std::string& shown);

}  // namespace nsrun::layers
