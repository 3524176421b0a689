#include <catch2/catch_test_macros.hpp>

#include "sys/timeline.hpp"

using nsrun::Timeline;

TEST_CASE("timeline phases are durations between marks, in order") {
  Timeline t;
  t.start();
  t.mark("prepare");
  t.mark("clone");
  auto phases = t.phases();
  REQUIRE(phases.size() == 2);
  CHECK(phases[0].name == "prepare");
  CHECK(phases[1].name == "clone");
  CHECK(t.total_micros() >= phases[0].micros + phases[1].micros);
}

TEST_CASE("marks from a forked child merge after the parent's own") {
  Timeline parent;
  parent.start();
  parent.mark("prepare");
  Timeline child = parent;  // what fork() copies
  child.mark("clone");
  child.mark("mounts-and-a-very-long-name");
  parent.merge(child.encode());
  parent.mark("exec");
  auto phases = parent.phases();
  REQUIRE(phases.size() == 4);
  CHECK(phases[0].name == "prepare");
  CHECK(phases[1].name == "clone");
  CHECK(phases[2].name == "mounts-and-a-ve");  // names are cut at 15 bytes
  CHECK(phases[3].name == "exec");
}

TEST_CASE("garbage on the wire is ignored") {
  Timeline t;
  t.start();
  t.merge("nonsense,,=,x=");
  CHECK(t.phases().empty());
}
