// The server name of a TLS ClientHello (net/wire.hpp client_hello_sni), as
// the proxy checks it on a tunnel to port 443. Properties: an accepted
// hello's record is within the bytes given, is accepted with the same
// name from exactly the record's bytes, and every strict prefix of the
// record is incomplete (the proxy waits rather than refusing a slow
// client, and reads no byte past the record); the name is a part of the
// record.
#include <string>

#include "fuzz.hpp"
#include "net/wire.hpp"

using namespace nsrun::egress;
using S = ClientHello::Status;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  const ClientHello h = client_hello_sni(in);
  if (h.status != S::ok) {
    if (!h.sni.empty() && h.status == S::incomplete) nsrun_fuzz::broken("an incomplete hello with a name");
    return 0;
  }
  if (h.record_size < 5 || h.record_size > in.size()) nsrun_fuzz::broken("a record outside the input");
  const std::string_view record = in.substr(0, h.record_size);
  if (!h.sni.empty() && record.find(h.sni) == std::string_view::npos) nsrun_fuzz::broken("a name that is not in the record");
  const ClientHello exact = client_hello_sni(record);
  if (exact.status != S::ok || exact.sni != h.sni || exact.record_size != h.record_size)
    nsrun_fuzz::broken("not the same from the record's own bytes");
  for (std::size_t n = 0; n < h.record_size; ++n)
    if (client_hello_sni(record.substr(0, n)).status != S::incomplete) nsrun_fuzz::broken("a prefix of the record is not incomplete");
  return 0;
}
