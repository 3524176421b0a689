// Policy files: json::parse on any bytes, then Policy from_json.
// Properties (src/policy/json.hpp, policy_json.hpp): parse(dump(v)) == v,
// pretty or compact; and a Policy written with to_json reads back equal.
#include <string>

#include "fuzz.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"

using namespace nsrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  auto v = json::parse(nsrun_fuzz::bytes(data, size));
  if (!v) {
    (void)v.error().message();
    return 0;
  }
  for (bool pretty : {true, false}) {
    const std::string text = json::dump(*v, pretty);
    auto again = json::parse(text);
    if (!again) nsrun_fuzz::broken("parse(dump(v)) failed", again.error().message() + "\n" + text);
    if (!(*again == *v)) nsrun_fuzz::broken("parse(dump(v)) != v", text);
  }
  auto policy = from_json(*v);
  if (!policy) {
    (void)policy.error().message();
    return 0;
  }
  const std::string written = json::dump(to_json(*policy));
  auto doc = json::parse(written);
  if (!doc) nsrun_fuzz::broken("to_json wrote what parse refuses", written);
  auto back = from_json(*doc);
  if (!back) nsrun_fuzz::broken("from_json(to_json(p)) failed", back.error().message() + "\n" + written);
  if (!(*back == *policy)) nsrun_fuzz::broken("from_json(to_json(p)) != p", written + "\nread back as\n" + json::dump(to_json(*back)));
  return 0;
}
