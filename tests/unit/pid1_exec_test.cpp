// When the sandbox's PID 1 re-execs itself inside the sandbox's user
// namespace (launch/pid1_exec.hpp): only where that gives the caller its
// namespaces and takes nothing from the command's side of the boundary.
#include <catch2/catch_test_macros.hpp>

#include "launch/pid1_exec.hpp"

using nsrun::Pid1ExecCase;
using nsrun::pid1_execs_in_sandbox;

namespace {

Pid1ExecCase published() {
  Pid1ExecCase c;
  c.reaper = true;
  c.new_pid_namespace = true;
  c.new_user_namespace = true;
  c.pid_published = true;
  return c;
}

}  // namespace

TEST_CASE("PID 1 re-execs only in a user namespace of its own, its pid published", "[pid1-reach]") {
  CHECK(pid1_execs_in_sandbox(published()));
  Pid1ExecCase c = published();
  c.pid_published = false;
  CHECK_FALSE(pid1_execs_in_sandbox(c));
  c = published();
  c.new_user_namespace = false;  // --userns: a namespace others may share
  CHECK_FALSE(pid1_execs_in_sandbox(c));
  c = published();
  c.inner_user_namespace = true;  // --userns2
  CHECK_FALSE(pid1_execs_in_sandbox(c));
  c = published();
  c.reaper = false;  // --as-pid-1: the command is PID 1
  CHECK_FALSE(pid1_execs_in_sandbox(c));
  c = published();
  c.new_pid_namespace = false;  // no PID 1 of its own to publish
  CHECK_FALSE(pid1_execs_in_sandbox(c));
}

TEST_CASE("PID 1 stays a fork of nsrun when the command may ptrace in the namespace", "[pid1-reach]") {
  Pid1ExecCase c = published();
  c.command_may_ptrace = true;
  CHECK_FALSE(pid1_execs_in_sandbox(c));
}

TEST_CASE("PID 1 does not re-exec a dynamic nsrun, whose loader the root may lack", "[pid1-reach]") {
  Pid1ExecCase c = published();
  c.self_has_interpreter = true;
  CHECK_FALSE(pid1_execs_in_sandbox(c));
  // The unit tests are a dynamic executable themselves.
  CHECK(nsrun::self_has_interpreter());
}
