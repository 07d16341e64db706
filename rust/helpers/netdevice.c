// SPDX-License-Identifier: GPL-2.0

#ifdef CONFIG_NET

#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <net/ipv6.h>

void rust_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

bool rust_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

bool rust_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

struct net_device *
rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

/*
 * kernel::net::netdev::NetDevice::{join,leave}_ip_multicast: one membership
 * of the host in the IP multicast group @group (IPv6, or IPv4-mapped) on
 * @dev, counted as a socket's is.  Sleeps.
 */
int rust_helper_netdev_ip_multicast(struct net_device *dev, const u8 *group, bool join)
{
	const struct in6_addr *a6 = (const struct in6_addr *)group;

	if (ipv6_addr_v4mapped(a6)) {
		__be32 addr = a6->s6_addr32[3];
		struct in_device *in_dev;

		if (!ipv4_is_multicast(addr))
			return -EINVAL;
		rtnl_lock();
		in_dev = __in_dev_get_rtnl(dev);
		if (in_dev) {
			if (join)
				ip_mc_inc_group(in_dev, addr);
			else
				ip_mc_dec_group(in_dev, addr);
		}
		rtnl_unlock();
		return in_dev ? 0 : -ENODEV;
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (!ipv6_addr_is_multicast(a6))
		return -EINVAL;
	/* IPv6 off on the device: not a bad address (ipv6_dev_mc_inc says EINVAL). */
	if (!rcu_access_pointer(dev->ip6_ptr))
		return -ENODEV;
	return join ? ipv6_dev_mc_inc(dev, a6) : ipv6_dev_mc_dec(dev, a6);
#else
	return -EAFNOSUPPORT;
#endif
}
#endif /* CONFIG_NET */
