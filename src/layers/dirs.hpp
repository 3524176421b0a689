// Directories nsrun makes and removes on the caller's behalf for the
// copy-on-write layers: every path is walked one component at a time
// through no symlink (CVE-2019-12439's lesson: a planted link must not
// steer where nsrun creates or removes), and what nsrun makes is 0700.
#pragma once

#include <sys/types.h>

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

// A random name of `hex` hexadecimal digits (getrandom).
std::string random_hex(std::size_t hex);

// Writes `text` to `name` in `dir` through a temporary name and a rename:
// a reader sees the old file or the new one.
Result<void> write_atomically(int dir, const std::string& name, std::string_view text, mode_t mode,
                              const std::string& shown);

// Reads a whole regular file `name` in `dir` (no symlink followed).
Result<std::string> read_at(int dir, const std::string& name, const std::string& shown);

}  // namespace nsrun::layers
