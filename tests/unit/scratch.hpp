// A scratch directory of a unit test's own (mkdtemp under $TMPDIR, else
// /var/tmp), removed with everything the test made in it at the end, even
// what it left unreadable.
#pragma once

#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "sys/fd.hpp"

namespace nsrun_unit {

struct Scratch {
  std::string path;
  nsrun::Fd fd;  // the directory, O_PATH
  explicit Scratch(std::string_view tag = "scratch") {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base && *base ? base : "/var/tmp") + "/nsrun-" + std::string(tag) + "-XXXXXX";
    REQUIRE(::mkdtemp(path.data()) != nullptr);
    fd.reset(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(fd);
  }
  ~Scratch() { (void)std::system(("chmod -R u+rwx -- '" + path + "' 2>/dev/null; rm -rf -- '" + path + "'").c_str()); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::string at(const std::string& rel) const { return path + "/" + rel; }
  void mkdir(const std::string& rel) const { REQUIRE(::mkdir(at(rel).c_str(), 0755) == 0); }
  void write(const std::string& rel, const std::string& text) const {
    const int out = ::open(at(rel).c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(out >= 0);
    REQUIRE(::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(out);
  }
  void touch(const std::string& rel) const { write(rel, ""); }
};

}  // namespace nsrun_unit
