// A repository's .git/config as the command leaves it in a copy-on-write
// layer (policy/gitconfig.hpp): the host's file before the first NUL, the
// layer's after it. Properties: what parses is written back canonically
// and reads back as the same entries (the file commit writes is exactly
// what was judged); the review's result holds no entry of a refused key
// the host did not have, and reads back as itself too.
#include <string>

#include "fuzz.hpp"
#include "policy/gitconfig.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  const std::size_t nul = in.find('\0');
  const std::string_view layer = nul == std::string_view::npos ? in : in.substr(nul + 1);
  const std::optional<std::string> host =
      nul == std::string_view::npos ? std::nullopt : std::optional<std::string>(in.substr(0, nul));

  const nsrun::ConfigParse parsed = nsrun::parse_git_config(layer);
  if (parsed.error.empty()) {
    const std::string written = nsrun::serialize(parsed.entries);
    const nsrun::ConfigParse again = nsrun::parse_git_config(written);
    if (!again.error.empty() || again.entries != parsed.entries)
      nsrun_fuzz::broken("serialize() does not read back as what was parsed", written);
  }
  const nsrun::ConfigReview review = nsrun::review_git_config(host, layer);
  if (!review.error.empty()) {
    if (!review.result.empty()) nsrun_fuzz::broken("a refused file has a result", review.error);
    return 0;
  }
  const nsrun::ConfigParse result = nsrun::parse_git_config(nsrun::serialize(review.result));
  if (!result.error.empty() || result.entries != review.result)
    nsrun_fuzz::broken("the review's result does not read back as itself", nsrun::serialize(review.result));
  const nsrun::ConfigParse old = host ? nsrun::parse_git_config(*host) : nsrun::ConfigParse{};
  for (const auto& e : review.result) {
    if (nsrun::config_key_danger(e).empty()) continue;
    bool had = false;
    for (const auto& o : old.entries) had = had || o == e;
    if (!had) nsrun_fuzz::broken("a key that runs something reached the result", nsrun::config_key(e));
  }
  return 0;
}
