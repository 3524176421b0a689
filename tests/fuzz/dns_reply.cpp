// nsrun's resolver on a reply from the network (net/resolve.hpp
// parse_reply), for the question a.test A (the first two bytes are taken
// as the id, so every input is a reply to its own query). A nameserver,
// or whoever controls an allowed name's zone, writes these bytes.
// Properties: at most one address per record the packet can hold; every
// CNAME is a name of at most 255 bytes; read_name never leaves its
// cursor past the packet.
#include <string>

#include "fuzz.hpp"
#include "net/resolve.hpp"
#include "net/wire.hpp"

using namespace nsrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  if (in.size() >= 12) {
    std::size_t at = 12;
    if (auto name = resolve::read_name(in, at); name && (at > in.size() || name->size() > 255))
      nsrun_fuzz::broken("read_name past the packet or over 255 bytes");
  }
  if (in.size() < 2) return 0;
  const uint16_t id = egress::be16(in, 0);
  for (uint16_t type : {resolve::type_a, resolve::type_aaaa}) {
    auto reply = resolve::parse_reply(in, id, "a.test", type);
    if (!reply) continue;
    if (reply->addresses.size() * 14 > in.size()) nsrun_fuzz::broken("more addresses than the packet holds");
    for (const auto& c : reply->cnames)
      if (c.empty() || c.size() > 255) nsrun_fuzz::broken("a CNAME outside 1 to 255 bytes");
    for (const auto& a : reply->addresses)
      if (a.v4 != (type == resolve::type_a)) nsrun_fuzz::broken("an address of another type");
  }
  return 0;
}
