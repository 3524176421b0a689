// nsrun's own command line: parse_native on NUL-separated arguments.
// Property: the Policy it builds survives to_json / from_json unchanged
// (what `nsrun policy` prints, `--policy` reads back).
#include <string>

#include "cli/native.hpp"
#include "fuzz.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"

using namespace nsrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto args = nsrun_fuzz::split_args(nsrun_fuzz::bytes(data, size));
  // --policy opens a file by name: the policy harness covers its contents,
  // and a fuzzer that names /dev/stdin or a FIFO would only hang.
  for (const auto& a : args)
    if (a == "--policy" || a.starts_with("--policy=")) return -1;
  const CallerContext ctx{.cwd = "/work/ws", .cwd_errno = 0, .host_backend_env = std::nullopt, .lakebox_marker = false, .socket_env = {}, .lookup = {}, .xdg_state_home = {}};
  auto inv = parse_native(args, ctx);
  if (!inv) {
    (void)inv.error().message();
    (void)inv.error().exit_code();
    return 0;
  }
  const std::string written = json::dump(to_json(inv->policy));
  auto doc = json::parse(written);
  if (!doc) nsrun_fuzz::broken("to_json wrote what parse refuses", written);
  auto back = from_json(*doc);
  if (!back) nsrun_fuzz::broken("from_json(to_json(p)) failed", back.error().message() + "\n" + written);
  if (!(*back == inv->policy)) nsrun_fuzz::broken("from_json(to_json(p)) != p", written + "\nread back as\n" + json::dump(to_json(*back)));
  return 0;
}
