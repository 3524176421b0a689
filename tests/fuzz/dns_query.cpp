// The DNS stub's side (net/wire.hpp): a query from the command parsed,
// then answered as answer_dns does. Properties: an accepted query's
// question is within the packet; every answer carries the query's id
// and its question; and for a name of plain labels (letters, digits,
// '-'), nsrun's own resolver (net/resolve.hpp parse_reply) reads the
// answer back to the same CNAME chain and addresses.
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "net/resolve.hpp"
#include "net/wire.hpp"

using namespace nsrun;
using namespace nsrun::egress;

namespace {

bool plain(std::string_view name) {
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return !name.empty() && !name.starts_with('.') && !name.ends_with('.') && name.find("..") == std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  const std::string formerr = dns_format_error(in);
  if (in.size() >= 2 && formerr.substr(0, 2) != in.substr(0, 2)) nsrun_fuzz::broken("FORMERR with another id");
  const auto q = parse_dns_query(in);
  if (!q) return 0;
  if (q->question_end > in.size() || q->question_end < 12 + 1 + 4) nsrun_fuzz::broken("a question outside the packet");
  if (q->name.size() > 253) nsrun_fuzz::broken("a name over 253 bytes");
  hosts::Address v4, v6;
  v4.bytes = {198, 18, 0, 1};
  v6.v4 = false;
  v6.bytes = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const std::vector<hosts::Address> addresses = {v4, v6};
  const std::vector<std::string> cnames = {"c1.test", "c2.test"};
  for (int rcode : {0, dns_refused}) {
    const std::string answer = dns_answer(in, *q, rcode, addresses, cnames);
    if (answer.size() < 12 || be16(answer, 0) != q->id) nsrun_fuzz::broken("an answer with another id");
    if (answer.substr(12, q->question_end - 12) != in.substr(12, q->question_end - 12))
      nsrun_fuzz::broken("an answer with another question");
  }
  if (!plain(q->name) || q->klass != 1 || (q->type != dns_a && q->type != dns_aaaa)) return 0;
  const std::string answer = dns_answer(in, *q, 0, addresses, cnames);
  auto reply = resolve::parse_reply(answer, q->id, q->name, q->type);
  if (!reply) nsrun_fuzz::broken("nsrun's resolver refuses nsrun's answer", reply.error());
  const hosts::Address& expected = q->type == dns_a ? v4 : v6;
  if (reply->rcode != 0 || reply->cnames != cnames || reply->addresses != std::vector<hosts::Address>{expected})
    nsrun_fuzz::broken("nsrun's resolver reads nsrun's answer otherwise");
  return 0;
}
