#include "session/wire.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace nsrun::session {

Result<void> send_message(int sock, const json::Value& message, std::span<const int> fds) {
  const std::string text = json::dump(message, false);
  if (text.size() > max_message) return fail(sys_error("session message", {}, EMSGSIZE));
  struct iovec iov{const_cast<char*>(text.data()), text.size()};
  struct msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_fds)]{};
  if (!fds.empty()) {
    if (fds.size() > max_fds) return fail(sys_error("session message", {}, E2BIG));
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  while ((n = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n < 0) return fail(sys_error("session send"));
  return {};
}

Result<Message> receive_message(int sock, std::size_t fds_allowed) {
  std::string buf(max_message, '\0');
  struct iovec iov{buf.data(), buf.size()};
  struct msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for more than allowed, so that an excess is seen and refused
  // rather than silently cut (MSG_CTRUNC closes nothing it dropped).
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * (max_fds + 1))]{};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return fail(sys_error("session receive"));
  Message out;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      out.fds.emplace_back(fd);
    }
  }
  auto bad = [](std::string why) { return fail(usage_error("session message", why)); };
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return bad("too large");
  if (out.fds.size() > fds_allowed) return bad("too many descriptors");
  if (n == 0) {
    if (!out.fds.empty()) return bad("descriptors without a message");
    out.eof = true;
    return out;
  }
  auto value = json::parse(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  if (!value) return bad("not JSON");
  if (!value->is_object()) return bad("not a JSON object");
  out.value = std::move(*value);
  return out;
}

const std::string* string_field(const json::Value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  const json::Value* f = v.find(key);
  return f != nullptr && f->is_string() ? &f->as_string() : nullptr;
}

std::optional<int64_t> int_field(const json::Value& v, std::string_view key) {
  if (!v.is_object()) return std::nullopt;
  const json::Value* f = v.find(key);
  if (f == nullptr || !f->is_int()) return std::nullopt;
  return f->as_int();
}

bool bool_field(const json::Value& v, std::string_view key) {
  if (!v.is_object()) return false;
  const json::Value* f = v.find(key);
  return f != nullptr && f->is_bool() && f->as_bool();
}

std::optional<std::vector<std::string>> strings_field(const json::Value& v, std::string_view key) {
  if (!v.is_object()) return std::nullopt;
  const json::Value* f = v.find(key);
  if (f == nullptr || !f->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& item : f->as_array()) {
    if (!item.is_string() || item.as_string().find('\0') != std::string::npos) return std::nullopt;
    out.push_back(item.as_string());
  }
  return out;
}

json::Value strings_value(const std::vector<std::string>& items) {
  json::Value out = json::Value::array();
  for (const auto& s : items) out.push_back(s);
  return out;
}

}  // namespace nsrun::session
