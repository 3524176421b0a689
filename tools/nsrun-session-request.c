/* nsrun-session-request SOCKET PAYLOAD...: one exec request over an nsrun
 * session's control socket (docs/sessions.md), as a harness that keeps
 * its own process makes it: connect, send {"op":"exec","argv":[...]} with
 * stdin, stdout and stderr as SCM_RIGHTS, wait for {"exit":C}, exit C.
 * A static C program, so that the bench's "session socket" row costs one
 * small exec beside the request (the floor rows measure that exec alone).
 * Payload words are sent unescaped: one holding '"', '\\' or a control
 * character is refused (exit 125). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fputs("usage: nsrun-session-request SOCKET PAYLOAD...\n", stderr);
    return 125;
  }
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof addr.sun_path) return 125;
  strcpy(addr.sun_path, argv[1]);
  char msg[8192];
  size_t n = (size_t)snprintf(msg, sizeof msg, "{\"op\":\"exec\",\"argv\":[");
  for (int i = 2; i < argc; i++) {
    for (const char *c = argv[i]; *c; c++)
      if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) return 125;
    n += (size_t)snprintf(msg + n, n < sizeof msg ? sizeof msg - n : 0, "%s\"%s\"", i > 2 ? "," : "", argv[i]);
  }
  n += (size_t)snprintf(msg + n, n < sizeof msg ? sizeof msg - n : 0, "]}");
  if (n >= sizeof msg) return 125;
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) return 125;
  const int fds[3] = {0, 1, 2};
  struct iovec iov = {msg, n};
  union {
    char buf[CMSG_SPACE(sizeof fds)];
    struct cmsghdr align;
  } ctl;
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (sendmsg(s, &m, MSG_NOSIGNAL) < 0) return 125;
  static char reply[65537];
  for (;;) {
    const ssize_t r = recv(s, reply, sizeof reply - 1, 0);
    if (r <= 0) return 125;
    reply[r] = 0;
    const char *e = strstr(reply, "\"exit\":");
    if (e) return atoi(e + 7);
  }
}
