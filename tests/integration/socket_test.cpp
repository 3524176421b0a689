// Issue 10, item 6: host pathname sockets (filled in below).
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
