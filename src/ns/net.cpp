#include "ns/net.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "sys/fd.hpp"

namespace nsrun {

namespace {

// SIOCGIFFLAGS: is `lo` up already? Used only when the netlink request was
// refused, to tell "already configured" from a real failure.
bool loopback_is_up() {
  Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return false;
  return (ifr.ifr_flags & IFF_UP) != 0;
}

}  // namespace

Result<void> bring_up_loopback() {
  Fd nl(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!nl) return fail(sys_error(Operation::loopback_up, "netlink socket"));

  // RTM_NEWLINK on an existing device changes its flags: ifi_change names
  // the bits to touch, ifi_flags their new value. The device is named, not
  // numbered: `lo` is index 1 in a new namespace, but nothing promises it.
  struct {
    nlmsghdr hdr;
    ifinfomsg ifi;
    char attrs[RTA_SPACE(IFNAMSIZ)];
  } req{};
  rtattr* name = reinterpret_cast<rtattr*>(req.attrs);
  name->rta_type = IFLA_IFNAME;
  name->rta_len = RTA_LENGTH(sizeof "lo");
  std::memcpy(RTA_DATA(name), "lo", sizeof "lo");
  req.hdr.nlmsg_len = NLMSG_LENGTH(sizeof req.ifi) + RTA_ALIGN(name->rta_len);
  req.hdr.nlmsg_type = RTM_NEWLINK;
  req.hdr.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  req.hdr.nlmsg_seq = 1;
  req.ifi.ifi_family = AF_UNSPEC;
  req.ifi.ifi_flags = IFF_UP;
  req.ifi.ifi_change = IFF_UP;

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.get(), &req, req.hdr.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    return fail(sys_error(Operation::loopback_up, "RTM_NEWLINK lo"));

  // The answer is one NLMSG_ERROR: error 0 is the acknowledgement.
  alignas(nlmsghdr) char buf[4096];
  ssize_t n;
  do n = ::recv(nl.get(), buf, sizeof buf, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0) return fail(sys_error(Operation::loopback_up, "RTM_NEWLINK lo (ack)"));
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(buf);
  if (!NLMSG_OK(hdr, static_cast<unsigned>(n)) || hdr->nlmsg_type != NLMSG_ERROR)
    return fail(sys_error(Operation::loopback_up, "RTM_NEWLINK lo (ack)", EPROTO));
  const auto* answer = static_cast<const nlmsgerr*>(NLMSG_DATA(hdr));
  if (answer->error == 0) return {};
  const int err = -answer->error;
  if (loopback_is_up()) return {};
  return fail(sys_error(Operation::loopback_up, "RTM_NEWLINK lo", err));
}

}  // namespace nsrun
