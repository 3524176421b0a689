// The egress proxy's SOCKS requests (net/wire.hpp): the first byte picks
// the version, as serve_client does (5: the greeting, then the request
// in the bytes after it; 4: SOCKS4/4a). Properties: an accepted message
// is within the bytes given and is accepted the same from exactly its own
// bytes, every shorter prefix of it is incomplete (the proxy reads no
// further than it must, and refuses nothing it would accept later); an
// incomplete input is shorter than max_socks_request; a refused SOCKS4
// request has a reply.
#include <string>

#include "fuzz.hpp"
#include "net/wire.hpp"

using namespace nsrun::egress;

namespace {

template <typename Parsed>
void check(std::string_view in, Parsed (*parse)(std::string_view), std::string_view what) {
  const Parsed r = parse(in);
  if (r.status == SocksStatus::incomplete && in.size() >= max_socks_request)
    nsrun_fuzz::broken(what, "incomplete past max_socks_request");
  if (r.status != SocksStatus::ok) return;
  if (r.consumed == 0 || r.consumed > in.size()) nsrun_fuzz::broken(what, "consumed outside the input");
  const Parsed exact = parse(in.substr(0, r.consumed));
  if (exact.status != SocksStatus::ok || exact.consumed != r.consumed) nsrun_fuzz::broken(what, "not the same from its own bytes");
  for (std::size_t n = 0; n < r.consumed; ++n)
    if (parse(in.substr(0, n)).status != SocksStatus::incomplete) nsrun_fuzz::broken(what, "a prefix is not incomplete");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  if (in.empty()) return 0;
  if (in[0] == 4) {
    check(in, parse_socks4_request, "socks4");
    const SocksRequest r = parse_socks4_request(in);
    if (r.status == SocksStatus::bad && r.reply != 0x5b) nsrun_fuzz::broken("socks4", "refused without a reply");
    if (r.status == SocksStatus::ok && r.is_name && r.host.size() > 255)
      nsrun_fuzz::broken("socks4", "a name longer than 255 bytes");
    return 0;
  }
  check(in, parse_socks5_greeting, "socks5 greeting");
  const Socks5Greeting g = parse_socks5_greeting(in);
  if (g.status == SocksStatus::ok) {
    const std::string_view rest = in.substr(g.consumed);
    check(rest, parse_socks5_request, "socks5 request");
    const SocksRequest r = parse_socks5_request(rest);
    if (r.status == SocksStatus::ok && r.is_name && r.host.size() > 255)
      nsrun_fuzz::broken("socks5 request", "a name longer than 255 bytes");
  }
  return 0;
}
