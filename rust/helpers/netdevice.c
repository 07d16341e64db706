// SPDX-License-Identifier: GPL-2.0

#ifdef CONFIG_NET

#include <linux/if_vlan.h>
#include <linux/netdevice.h>

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

bool rust_helper_is_vlan_dev(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

struct net_device *
rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}
#endif /* CONFIG_NET */
