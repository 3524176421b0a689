// The home layer's work slots (src/layers/work_slots.hpp): their names,
// the lowest free slot taken and reused, a locked one skipped, an overflow
// slot removed after use, and a writable layer the kernel mounted
// read-only counted as the overlay refused.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "launch/ladder.hpp"
#include "layers/dirs.hpp"
#include "layers/work_slots.hpp"
#include "mount/plan.hpp"
#include "policy/policy.hpp"
#include "sys/fd.hpp"

using namespace nsrun;
using namespace nsrun::layers;

namespace {

struct Dir {
  std::string path;
  Fd fd;
  Dir() {
    char tmpl[] = "/tmp/nsrun-slots-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
    fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
  }
  ~Dir() {
    Fd parent(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    (void)remove_tree(parent.get(), path.substr(5), path);
  }
  std::vector<std::string> names() const { return *list_dir(fd.get(), path); }
};

}  // namespace

TEST_CASE("work slots: names are work-<n>, nothing else parses as one") {
  CHECK(work_slot_name(0) == "work-0");
  CHECK(work_slot_name(17) == "work-17");
  CHECK(work_slot_index("work-0") == 0U);
  CHECK(work_slot_index("work-4095") == 4095U);
  for (const char* bad : {"work-", "work-00", "work-01", "work-4096", "work--1", "work-+1", "work-1a",
                          "work-0123456789ab", "work-123456789012", "upper", "redirect", ".new-0123"})
    CHECK_FALSE(work_slot_index(bad).has_value());
}

TEST_CASE("work slots: the lowest free slot is taken, a locked one skipped, a kept one reused, an overflow one "
          "removed") {
  Dir d;
  {
    auto a = take_work_slot(d.fd.get(), d.path);
    REQUIRE(a);
    CHECK(a->name == "work-0");
    // Held: the next launch takes the next slot.
    auto b = take_work_slot(d.fd.get(), d.path);
    REQUIRE(b);
    CHECK(b->name == "work-1");
    release_work_slot(d.fd.get(), *b, d.path);
    release_work_slot(d.fd.get(), *a, d.path);
  }
  CHECK(d.names() == std::vector<std::string>{"work-0", "work-1"});
  // Released: reused, nothing new made.
  auto again = take_work_slot(d.fd.get(), d.path);
  REQUIRE(again);
  CHECK(again->name == "work-0");
  release_work_slot(d.fd.get(), *again, d.path);

  // All kept slots held: one more goes past them and is removed after.
  std::vector<WorkSlot> held;
  for (unsigned i = 0; i < kept_work_slots; ++i) {
    auto s = take_work_slot(d.fd.get(), d.path);
    REQUIRE(s);
    CHECK(s->index == i);
    held.push_back(std::move(*s));
  }
  auto over = take_work_slot(d.fd.get(), d.path);
  REQUIRE(over);
  CHECK(over->name == work_slot_name(kept_work_slots));
  CHECK_FALSE(over->kept());
  release_work_slot(d.fd.get(), *over, d.path);
  for (auto& s : held) release_work_slot(d.fd.get(), s, d.path);
  CHECK(d.names().size() == kept_work_slots);
  for (const auto& n : d.names()) CHECK(work_slot_index(n) < kept_work_slots);
}

TEST_CASE("work slots: a symlink or a file where a slot goes is refused, nothing followed") {
  Dir d;
  Dir elsewhere;
  REQUIRE(::symlinkat(elsewhere.path.c_str(), d.fd.get(), "work-0") == 0);
  auto s = take_work_slot(d.fd.get(), d.path);
  CHECK_FALSE(s);
  CHECK(elsewhere.names().empty());
}

TEST_CASE("work slots: a writable layer the kernel mounted read-only is the overlay refused") {
  Error e = sys_error_named(Operation::mount_layer, "mount overlay on", "/home/u", EROFS);
  CHECK(classify_namespace_failure(e, ProcMode::fresh) == "overlay-unavailable");
}
