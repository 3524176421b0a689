// The copy-on-write home is the default: its layers go under
// $XDG_STATE_HOME/nsrun/home, else ~/.local/state/nsrun/home. One private
// state directory per run of the suite, so no test leaves layers in the
// caller's real home (root's /root) and a test's own HOME stays
// byte-identical unless the test names XDG_STATE_HOME itself (the tests of
// the default location do).
#include "harness.hpp"

#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include <cstdlib>
#include <memory>

namespace nsrun_test {
namespace {

class StateHome : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testRunStarting(const Catch::TestRunInfo&) override {
    dir_ = std::make_unique<TempDir>("state-home");
    ::setenv("XDG_STATE_HOME", dir_->path().c_str(), 1);
  }
  void testRunEnded(const Catch::TestRunStats&) override { dir_.reset(); }

 private:
  std::unique_ptr<TempDir> dir_;
};

}  // namespace
}  // namespace nsrun_test

CATCH_REGISTER_LISTENER(nsrun_test::StateHome)
