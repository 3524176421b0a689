// A rung never writes its LaunchSpec: every entry point of a rung, and
// every function they hand the spec on to, takes it `const LaunchSpec&`;
// what a rung learns or decides late goes into its Attempt.
//
// Held at compile time: for each entry point the spec's parameter type is
// taken from the function's own type, and `can_write_spec` asks the
// compiler whether a write a rung would make (clear the mounts, push onto
// the environment, mark the timeline) is well-formed through it. With
// `const LaunchSpec&` it is not; a rung changed to take `LaunchSpec&` (or
// a copy it could then hand on written) makes the static_assert false and
// this file stops compiling. Inside a function that takes `const
// LaunchSpec&`, the write itself does not compile either (the language's
// const), and a const spec cannot be passed on to a helper that takes it
// writable, so the check of the entry points covers what they call. The
// positive controls below show the concept is not vacuous.
#include <catch2/catch_test_macros.hpp>

#include <linux/capability.h>

#include <string>
#include <type_traits>
#include <vector>

#include "launch/attempt.hpp"
#include "launch/command.hpp"
#include "launch/home_fallback.hpp"
#include "launch/ladder.hpp"
#include "launch/landlock_rung.hpp"
#include "launch/namespaces_rung.hpp"
#include "launch/rung.hpp"
#include "launch/spec.hpp"
#include "launch/supervise.hpp"

using namespace nsrun;

namespace {

// The writes a rung would make, tried through a parameter of type `Param`.
template <class Param>
concept can_write_spec = requires(Param spec) {
  spec.plan.mounts.clear();
  spec.env.push_back("X=1");
  spec.keep_caps.clear();
  spec.timeline.mark("x");
};

template <class Param>
concept can_write_attempt = requires(Param a) {
  a.timeline.mark("x");
  a.keep_caps.clear();
  a.words_fd = 3;
};

// The type of the parameter of `F` that is a LaunchSpec (by value or by
// reference, const or not); void when none is.
template <class... A>
struct spec_param_of {
  using type = void;
};
template <class First, class... Rest>
struct spec_param_of<First, Rest...> {
  using type = std::conditional_t<std::is_same_v<std::remove_cvref_t<First>, LaunchSpec>, First,
                                  typename spec_param_of<Rest...>::type>;
};
template <class F>
struct spec_param;
template <class R, class... A>
struct spec_param<R (*)(A...)> {
  using type = typename spec_param_of<A...>::type;
};
template <class R, class C, class... A>
struct spec_param<R (C::*)(A...) const> {
  using type = typename spec_param_of<A...>::type;
};
template <class R, class C, class... A>
struct spec_param<R (C::*)(A...)> {
  using type = typename spec_param_of<A...>::type;
};
template <class F>
using spec_param_t = typename spec_param<F>::type;

// An entry point that reads a spec and cannot write it.
template <class F>
constexpr bool reads_spec_only = !std::is_void_v<spec_param_t<F>> && !can_write_spec<spec_param_t<F>>;

// Positive controls: a writable spec and an attempt are seen as writable.
static_assert(can_write_spec<LaunchSpec&>);
static_assert(can_write_spec<LaunchSpec>);
static_assert(!can_write_spec<const LaunchSpec&>);
static_assert(can_write_attempt<Attempt&>);

// The rungs' entry points and what they hand the spec on to.
static_assert(reads_spec_only<decltype(&run_namespaces)>);
static_assert(reads_spec_only<decltype(&landlock::run)>);
static_assert(reads_spec_only<decltype(&supervise)>);
static_assert(reads_spec_only<decltype(&start_command)>);
static_assert(reads_spec_only<decltype(&spawn_command)>);
static_assert(reads_spec_only<decltype(&spawn_held_command)>);
static_assert(reads_spec_only<decltype(&load_command_filter)>);
static_assert(reads_spec_only<decltype(&try_exec)>);
static_assert(reads_spec_only<decltype(&run_ladder)>);
// The home's cache redirect makes a new spec from the old one.
static_assert(reads_spec_only<decltype(&cache_redirect_spec)>);
static_assert(std::is_same_v<decltype(cache_redirect_spec(std::declval<const LaunchSpec&>(), std::declval<const Policy&>(),
                                                          std::declval<const std::string&>())),
                             Result<LaunchSpec>>);
// A rung of the ladder's table: each one overrides these (an override
// must take the same parameter types, so no rung can take the spec
// writable).
static_assert(reads_spec_only<decltype(&Rung::assess)>);
static_assert(reads_spec_only<decltype(&Rung::run)>);

}  // namespace

TEST_CASE("a rung reads its spec const and writes only its attempt", "[unit][spec]") {
  LaunchSpec spec;
  spec.keep_caps = {CAP_NET_ADMIN};
  spec.timeline.start();
  spec.timeline.mark("prepare");
  Attempt a(spec);
  // What PID 1 decides late (the capabilities it can hand on) and the
  // timeline's later phases are the attempt's.
  a.keep_caps.clear();
  a.timeline.mark("clone");
  a.env = std::vector<std::string>{"TMPDIR=/tmp/x"};
  CHECK(spec.keep_caps == std::vector<cap_value_t>{CAP_NET_ADMIN});
  CHECK(spec.timeline.phases().size() == 1);
  CHECK(a.timeline.phases().size() == 2);
  CHECK(spec.env.empty());
  CHECK(command_env(spec, a) == std::vector<std::string>{"TMPDIR=/tmp/x"});
  // A fresh attempt starts from the spec again: nothing of one rung's try
  // reaches the next.
  Attempt next(spec, a.timeline);
  CHECK(next.keep_caps == spec.keep_caps);
  CHECK(!next.env);
  CHECK(next.words_fd == -1);
  CHECK(!next.child_is_command);
  CHECK(next.timeline.phases().size() == 2);
}
