// The microVM tests' common half (tests/vm): the tools an image needs,
// packing it, booting it with qemu. Each test supplies its own init.
#pragma once

#include <string>
#include <string_view>

#include "harness.hpp"

namespace nsrun_test::vm {

struct Tools {
  std::string qemu, kernel, nsrun, busybox;
};
// qemu-system-x86_64, a kernel image (/boot/vmlinuz-*, or
// $NSRUN_TEST_KERNEL), the static nsrun and a static busybox; skips loudly
// without one ("vm" in $NSRUN_TEST_REQUIRE turns the skip into a failure).
Tools tools();

// A 64-bit ELF with no PT_INTERP: it needs no dynamic loader in the image.
bool is_static(const std::string& path);

// The image's tree under `root`: busybox, nsrun and `init` (a common
// preamble, then `init`), and the empty directories the inits mount on or
// work in.
void make_image_root(const Tools& t, const std::string& root, std::string_view init);
// Packs `root` as a newc cpio beside it; returns its path.
std::string pack(const Tools& t, const std::string& root);

struct Boot {
  std::string append;       // more kernel command line, with a leading space
  unsigned memory_mib = 512;
  Millis limit = 180s;
};
// Boots the image; returns the console. `first_line` is the init's first
// console line, which a working KVM prints within 60 s.
RunResult boot(const Tools& t, const std::string& initrd, std::string_view first_line, const Boot& how = {});

// To stderr and as a Catch2 warning.
void say(const std::string& text);

}  // namespace nsrun_test::vm
