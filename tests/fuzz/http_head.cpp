// The egress proxy's HTTP request head (net/wire.hpp): parse_http_head,
// then what serve_http reads from it (the body length, the CONNECT
// authority, the absolute URI). Properties: an accepted head has no CR,
// LF or NUL in any field it keeps, a token method and an HTTP/1.x
// version; written out again from its parts it parses to the same parts;
// a Transfer-Encoding is never given a length; an accepted authority has
// a host and a port, and an origin form starts with '/' and carries no
// fragment.
#include <string>

#include "fuzz.hpp"
#include "net/wire.hpp"

using namespace nsrun::egress;

namespace {

bool clean(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos; }

void check_authority(const Authority& a) {
  if (a.host.empty() || a.port == 0) nsrun_fuzz::broken("an authority without a host or a port");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view in = nsrun_fuzz::bytes(data, size);
  // Heads end with the blank line: give most inputs one.
  const std::string head = in.ends_with("\r\n\r\n") ? std::string(in) : std::string(in) + "\r\n\r\n";
  const auto h = parse_http_head(head);
  (void)parse_authority(in, 80);
  if (!h) return 0;
  if (h->version != "HTTP/1.1" && h->version != "HTTP/1.0") nsrun_fuzz::broken("a version other than HTTP/1.x", head);
  if (h->method.empty() || h->target.empty()) nsrun_fuzz::broken("an empty method or target", head);
  std::string again = h->method + " " + h->target + " " + h->version + "\r\n";
  bool transfer_encoding = false;
  for (const auto& [name, value] : h->headers) {
    if (name.empty() || !clean(name) || !clean(value)) nsrun_fuzz::broken("a header keeps CR, LF or NUL", head);
    if (name.find(':') != std::string::npos) nsrun_fuzz::broken("a header name with ':'", head);
    std::string lower;
    for (char c : name) lower.push_back(static_cast<char>(c | 0x20));
    transfer_encoding = transfer_encoding || lower == "transfer-encoding";
    again += name + ": " + value + "\r\n";
  }
  if (!clean(h->method) || !clean(h->target)) nsrun_fuzz::broken("the request line keeps CR, LF or NUL", head);
  again += "\r\n";
  const auto h2 = parse_http_head(again);
  if (!h2 || h2->method != h->method || h2->target != h->target || h2->version != h->version || h2->headers != h->headers)
    nsrun_fuzz::broken("the head written out again parses otherwise", head);
  const BodyLength body = request_body_length(h->headers);
  if (transfer_encoding && body.error.empty()) nsrun_fuzz::broken("a Transfer-Encoding was given a length", head);
  if (auto a = parse_authority(h->target, 0)) check_authority(*a);
  if (auto u = parse_absolute_uri(h->target)) {
    check_authority(u->authority);
    if (!u->origin_form.starts_with('/') || u->origin_form.find('#') != std::string::npos)
      nsrun_fuzz::broken("an origin form that is not a path", head);
    if (!clean(u->origin_form)) nsrun_fuzz::broken("an origin form keeps CR, LF or NUL", head);
  }
  return 0;
}
