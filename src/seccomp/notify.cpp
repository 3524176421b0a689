#include "seccomp/notify.hpp"

#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/core.h>

#include "seccomp/precompiled.hpp"

namespace nsrun {

Result<Fd> load_filter_listening(const BpfProgram& program) {
  sock_fprog prog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
  const long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (fd < 0) return fail(sys_error("seccomp listener"));
  return Fd(static_cast<int>(fd));
}

// The kernel's structures may be larger than this build's headers; the
// buffers follow the kernel's sizes (SECCOMP_GET_NOTIF_SIZES).
const NotifySizes& notify_sizes() {
  static const NotifySizes s = [] {
    NotifySizes out{sizeof(seccomp_notif), sizeof(seccomp_notif_resp)};
    seccomp_notif_sizes k{};
    if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &k) == 0) {
      out.notif = std::max<std::size_t>(out.notif, k.seccomp_notif);
      out.resp = std::max<std::size_t>(out.resp, k.seccomp_notif_resp);
    }
    return out;
  }();
  return s;
}

Notification Notification::receive(int listener) {
  const NotifySizes& s = notify_sizes();
  Notification out;
  auto buf = std::make_unique<unsigned char[]>(s.notif);
  std::memset(buf.get(), 0, s.notif);
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buf.get()) != 0) return out;
  out.buf_ = std::move(buf);
  return out;
}

const FilterSpec& DenialLog::spec() const {
  if (key_) {
    spec_ = notify_spec(filter_spec(*key_));
    key_.reset();
  }
  return spec_;
}

bool DenialLog::serve(int listener) {
  Notification n = Notification::receive(listener);
  // ENOENT: the caller died or was interrupted before we took it.
  if (!n) return errno == EINTR || errno == ENOENT;
  answer(listener, n.get());
  return true;
}

const Denial& DenialLog::answer(int listener, const seccomp_notif& n) {
  const NotifySizes& s = notify_sizes();
  const seccomp_notif* notif = &n;
  auto resp_buf = std::make_unique<unsigned char[]>(s.resp);
  std::memset(resp_buf.get(), 0, s.resp);
  auto* resp = reinterpret_cast<seccomp_notif_resp*>(resp_buf.get());
  const int nr = notif->data.nr;
  const std::string_view known = precompiled_syscall_name(nr);
  std::array<uint64_t, 6> args{};
  for (std::size_t i = 0; i < args.size(); ++i) args[i] = notif->data.args[i];
  // Only refusing rules notify, so some rule matches; EPERM whatever
  // happens (fail closed).
  int err = known.empty() ? EPERM : decide(spec(), known, args).value_or(EPERM);
  if (err <= 0) err = EPERM;
  resp->id = notif->id;
  resp->error = -err;
  resp->val = 0;
  resp->flags = 0;
  // ENOENT here too: the caller is gone; nothing to answer.
  (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);

  auto it = std::find_if(denials_.begin(), denials_.end(), [&](const Denial& d) { return d.nr == nr; });
  if (it != denials_.end()) {
    ++it->count;
    return *it;
  }
  Denial d;
  d.nr = nr;
  d.syscall = known.empty() ? fmt::format("syscall {}", nr) : std::string(known);
  d.count = 1;
  d.first_pid = static_cast<pid_t>(notif->pid);
  d.args = fmt::format("{:#x}, {:#x}, {:#x}", notif->data.args[0], notif->data.args[1], notif->data.args[2]);
  denials_.push_back(std::move(d));
  return denials_.back();
}

}  // namespace nsrun
