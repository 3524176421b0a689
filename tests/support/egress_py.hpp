// Python shared by the egress tests, prepended to their
// servers' scripts.
#pragma once

#include <string_view>

namespace nsrun_test {

// serve_http(listening_socket, tag): answers every request with
// "hello <tag> <Host header>" and closes.
inline constexpr std::string_view http_hello_py = R"PY(
def serve_http(s, tag):
    while True:
        c, _ = s.accept()
        data = b''
        while b'\r\n\r\n' not in data:
            d = c.recv(4096)
            if not d: break
            data += d
        host = b'?'
        for line in data.split(b'\r\n'):
            if line.lower().startswith(b'host:'): host = line[5:].strip()
        body = b'hello ' + tag + b' ' + host + b'\n'
        c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % len(body) + body)
        c.close()
)PY";

}  // namespace nsrun_test
