// `nsrun changes|commit|discard` (a copy-on-write workspace's run layer)
// and `nsrun home list|diff|reset` (the home layers), all as the caller,
// without privileges.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "sys/error.hpp"

namespace nsrun {

// Whether `verb` is one of these commands.
bool is_layers_command(std::string_view verb);

// args[0] is the verb. Returns the exit status.
int layers_main(std::span<const std::string> args);

// Prints "nsrun: <message>" on stderr; returns the error's exit status.
int command_error(const Error& e);

// The run base a launch from here would use (--cow-dir DIR wins); empty
// when the environment names none.
std::string run_base_here(const std::string& cow_dir);

}  // namespace nsrun
