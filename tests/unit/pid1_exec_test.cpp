// When the sandbox's PID 1 re-execs itself inside the sandbox's user
// namespace (launch/pid1_exec.hpp): only where that gives the caller its
// namespaces and takes nothing from the command's side of the boundary;
// a dynamic nsrun before the root is built, while its loader is in view.
#include <catch2/catch_test_macros.hpp>

#include "launch/pid1_exec.hpp"

using nsrun::Pid1Exec;
using nsrun::Pid1ExecCase;
using nsrun::pid1_exec_moment;

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
  for (bool dynamic : {false, true}) {
    Pid1ExecCase c = published();
    c.self_has_interpreter = dynamic;
    CHECK(pid1_exec_moment(c) == (dynamic ? Pid1Exec::before_root : Pid1Exec::after_root));
    Pid1ExecCase d = c;
    d.pid_published = false;
    CHECK(pid1_exec_moment(d) == Pid1Exec::stays);
    d = c;
    d.new_user_namespace = false;  // --userns: a namespace others may share
    CHECK(pid1_exec_moment(d) == Pid1Exec::stays);
    d = c;
    d.inner_user_namespace = true;  // --userns2
    CHECK(pid1_exec_moment(d) == Pid1Exec::stays);
    d = c;
    d.reaper = false;  // --as-pid-1: the command is PID 1
    CHECK(pid1_exec_moment(d) == Pid1Exec::stays);
    d = c;
    d.new_pid_namespace = false;  // no PID 1 of its own to publish
    CHECK(pid1_exec_moment(d) == Pid1Exec::stays);
  }
}

TEST_CASE("PID 1 stays a fork of nsrun when the command may ptrace in the namespace", "[pid1-reach]") {
  for (bool dynamic : {false, true}) {
    Pid1ExecCase c = published();
    c.self_has_interpreter = dynamic;
    c.command_may_ptrace = true;
    CHECK(pid1_exec_moment(c) == Pid1Exec::stays);
  }
}

TEST_CASE("a dynamic nsrun's PID 1 execs before the root, and not where a chroot would leave it the host's root",
          "[pid1-reach]") {
  Pid1ExecCase c = published();
  c.self_has_interpreter = true;
  CHECK(pid1_exec_moment(c) == Pid1Exec::before_root);
  c.root_by_chroot = true;  // an initramfs "/": only a pivot moves PID 1's root
  CHECK(pid1_exec_moment(c) == Pid1Exec::stays);
  // A static one execs inside the finished root, however it was entered.
  c.self_has_interpreter = false;
  CHECK(pid1_exec_moment(c) == Pid1Exec::after_root);
  // The unit tests are a dynamic executable themselves.
  CHECK(nsrun::self_has_interpreter());
}
