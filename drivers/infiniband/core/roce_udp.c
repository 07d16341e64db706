// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RoCEv2 UDP port of a network namespace, shared by software RoCE drivers.
 *
 * A RoCEv2 device receives UDP datagrams to port 4791.  One socket per
 * namespace and address family can hold that port, so when software RoCE
 * drivers (rdma_rxe, ferroce) each opened their own, whichever came first took
 * every packet of the namespace and the other's devices went deaf.  Here the
 * namespace has one receive point instead: the first endpoint added in a
 * namespace opens its sockets (IPv4, and IPv6 unless the kernel has none),
 * the last one removed closes them, and each packet goes to the endpoint of
 * the netdev it arrived on, or of the real device under a VLAN netdev that has
 * none.
 *
 * A UDP GSO datagram (a train of RoCEv2 packets that a sender's stack cuts
 * only on the way out of the host, which a veth passes whole to the other
 * namespace) reaches an endpoint that asks for it (@gso) whole and linear
 * (linearized if need be, cut if that fails), if the stack would cut it
 * into at most UDP_MAX_SEGMENTS pieces: the driver walks its packets in
 * place.  Every other endpoint gets the pieces, each in its own skb, as a
 * plain UDP socket would.
 *
 * An endpoint that asks for it (@spread) gets the trains it takes whole from
 * a work item queued on the next CPU (one per endpoint, so in order: while it
 * is busy it stays where it runs), and with them every packet that comes
 * while one waits or is being handled.  On a veth the receiving namespace's
 * softirq runs on the sender's CPU: without this, the sender's copy out of
 * its memory and the receiver's copy into its own take turns on one CPU
 * while the others idle.  So do the packets that come while a work item is
 * busy on the CPU (an acknowledgement of the train it just took, whose
 * sender would send its next train from where it handles it).  Any other
 * plain packet that finds nothing waiting is handed over at once (a small
 * message's latency pays for no wakeup).  At most netdev_max_backlog packets
 * of at most ROCE_UDP_BACKLOG_BYTES wait; more are dropped and counted in the
 * netdev's rx_dropped.
 *
 * Packets that arrive on the loopback device are dropped: any local process
 * may send those, from any local address, and none of them is a RoCE device's
 * (a device sends to another device of the host through its netdev).
 *
 * Endpoints are found by ifindex in an xarray, under RCU on the receive path.
 * Adding takes RTNL (a netdev's namespace and ifindex change under it),
 * then one mutex, under which endpoints are added and removed and sockets
 * opened and closed.  An endpoint's netdev unregistering, or leaving the
 * namespace, removes the endpoint at once (drivers may free their device
 * later, from a work item, after the namespace is gone), so no socket
 * outlives its namespace.
 */

#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/sched/isolation.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/hotdata.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <rdma/roce_udp.h>

/**
 * struct roce_udp_net - the receive point of one namespace
 * @sk4: the IPv4 socket while the namespace has endpoints
 * @sk6: the IPv6 socket then, unless IPv6 is unavailable
 * @eps: the endpoints, by their netdev's ifindex
 * @count: how many endpoints @eps holds
 */
struct roce_udp_net {
	struct socket *sk4;
	struct socket *sk6;
	struct xarray eps;
	unsigned int count;
};

static unsigned int roce_udp_net_id __read_mostly;

/* Serialises endpoint changes and socket opening and closing everywhere. */
static DEFINE_MUTEX(roce_udp_mutex);

/*
 * Runs the endpoints' work items.  High priority: a CPU's busy-polling
 * process must not starve the receiver of what it polls for.  Reclaim
 * capable: block storage (NVMe over Fabrics) completes its I/O through it.
 */
static struct workqueue_struct *roce_udp_wq;

/* Packets a work item hands to its endpoint before it lets others run. */
#define ROCE_UDP_WORK_BATCH 64

/*
 * What the packets waiting for one endpoint may hold at most (truesize):
 * a sender's window of trains (256 packets of 4 KiB) several times over.
 */
#define ROCE_UDP_BACKLOG_BYTES (16 << 20)

/*
 * Set while an endpoint's work item hands a packet over on this CPU, and
 * while the softirqs raised meanwhile run at its end: what an endpoint
 * receives then (the acknowledgement its own peer sent, which starts that
 * peer sending again) goes to another CPU too, or both ends of a stream end
 * up on this one.  Only a hint: a task that preempts the work item sees it
 * set, and softirqs left to ksoftirqd do not.
 */
static DEFINE_PER_CPU(bool, roce_udp_busy);

/* The endpoint of @dev, a netdev of @net; under RCU. */
static struct roce_udp_endpoint *roce_udp_lookup(struct net *net, struct roce_udp_net *rn,
						 const struct net_device *dev)
{
	struct roce_udp_endpoint *ep = xa_load(&rn->eps, dev->ifindex);
	struct net_device *real;

	if (ep)
		return ep->ndev == dev ? ep : NULL;
	if (!is_vlan_dev(dev))
		return NULL;
	/* A VLAN and its real device may live in different namespaces. */
	real = vlan_dev_real_dev(dev);
	if (!net_eq(dev_net(real), net))
		return NULL;
	ep = xa_load(&rn->eps, real->ifindex);
	return ep && ep->ndev == real ? ep : NULL;
}

/*
 * The endpoint of @rn that serves the real device of @ndev, a VLAN device, or
 * a VLAN device on @ndev.  A RoCE port has the GIDs of the VLANs on its
 * netdev too (roce_gid_mgmt), while a VLAN with an endpoint of its own takes
 * the VLAN's packets: two devices would have GIDs only one of them receives
 * for.  Under roce_udp_mutex.
 */
static struct roce_udp_endpoint *roce_udp_vlan_relative(struct roce_udp_net *rn,
							 struct net_device *ndev)
{
	struct roce_udp_endpoint *ep;
	unsigned long i;

	xa_for_each(&rn->eps, i, ep) {
		if (is_vlan_dev(ndev) && vlan_dev_real_dev(ndev) == ep->ndev)
			return ep;
		if (is_vlan_dev(ep->ndev) && vlan_dev_real_dev(ep->ndev) == ndev)
			return ep;
	}
	return NULL;
}

/*
 * Makes @skb linear without emergency reserves: a train's sender can send
 * its packets again, and other atomic allocations need them more.
 */
static int roce_udp_linearize(struct sk_buff *skb)
{
	int grow;

	if (!skb_is_nonlinear(skb))
		return 0;
	grow = max_t(int, skb->data_len - skb_tailroom(skb), 0);
	if ((grow || skb_cloned(skb)) &&
	    pskb_expand_head(skb, 0, grow, GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC))
		return -ENOMEM;
	/* Room enough and not shared: pulls without allocating. */
	return __skb_linearize(skb);
}

/*
 * Whether @ep takes @skb whole: a plain packet, or a UDP GSO datagram (a
 * train of packets that a sender in another namespace had the stack cut,
 * still whole after a veth) if @ep walks trains itself, the stack would cut
 * it (as __udp_gso_segment() checks: two pieces or more, the checksum where
 * UDP's is) into no more pieces than a UDP socket may send, and it is linear
 * or made so.  Every other datagram is cut, or dropped, as UDP would.
 */
static bool roce_udp_takes_whole(const struct roce_udp_endpoint *ep, struct sk_buff *skb)
{
	const struct skb_shared_info *shinfo = skb_shinfo(skb);
	unsigned int payload = skb->len - sizeof(struct udphdr);

	if (!skb_is_gso(skb))
		return true;
	if (!ep->gso || (shinfo->gso_type & ~SKB_GSO_DODGY) != SKB_GSO_UDP_L4)
		return false;
	if (skb->len <= sizeof(struct udphdr) + shinfo->gso_size ||
	    DIV_ROUND_UP(payload, shinfo->gso_size) > UDP_MAX_SEGMENTS)
		return false;
	if (skb->ip_summed == CHECKSUM_PARTIAL &&
	    skb_checksum_start(skb) != skb_transport_header(skb))
		return false;
	return !roce_udp_linearize(skb);
}

/*
 * The CPU after the current one among the online ones that take unbound
 * kernel work (not those isolated for other tasks); the current one if
 * there is none other.
 */
static int roce_udp_next_cpu(void)
{
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_WQ);
	int cpu = cpumask_next_and(smp_processor_id(), cpu_online_mask, hk);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first_and(cpu_online_mask, hk);
	return cpu < nr_cpu_ids ? cpu : smp_processor_id();
}

/*
 * Hands @skb to @ep (softirq, under rcu_read_lock()): now, or through its
 * work item on another CPU if @ep spreads and @skb is a train or must stay
 * behind the packets waiting there.
 */
static void roce_udp_deliver(struct roce_udp_endpoint *ep, struct sk_buff *skb, bool train)
{
	int cpu;

	/*
	 * A plain packet with nothing waiting: at once, without the lock.  A
	 * packet this CPU queued before is seen (its own write), and one queued
	 * by another CPU need not be waited for (no order holds across CPUs).
	 */
	if (!ep->spread ||
	    (!train && !READ_ONCE(ep->inflight) && !READ_ONCE(*this_cpu_ptr(&roce_udp_busy)))) {
		ep->rcv(ep, skb);
		return;
	}
	cpu = roce_udp_next_cpu();
	spin_lock(&ep->backlog.lock);
	if (!ep->inflight && cpu == smp_processor_id()) {
		/* No other CPU to hand it to, and nothing to wait behind. */
		spin_unlock(&ep->backlog.lock);
		ep->rcv(ep, skb);
		return;
	}
	if (ep->inflight >= READ_ONCE(net_hotdata.max_backlog) ||
	    ep->inflight_bytes + skb->truesize > ROCE_UDP_BACKLOG_BYTES) {
		spin_unlock(&ep->backlog.lock);
		dev_core_stats_rx_dropped_inc(skb->dev);
		kfree_skb_reason(skb, SKB_DROP_REASON_SOCKET_RCVBUFF);
		return;
	}
	/*
	 * Its route (which may be held only for this softirq) is of no use
	 * later; the netdev it came on may be a VLAN that goes meanwhile, the
	 * endpoint's (whose going purges the queue) stands in for it.
	 */
	skb_dst_drop(skb);
	/*
	 * The VLAN it came on stays known as its VLAN tag (which the VLAN
	 * layer took off: no packet reaches a UDP socket with one).
	 */
	if (is_vlan_dev(skb->dev) && !skb_vlan_tag_present(skb))
		__vlan_hwaccel_put_tag(skb, vlan_dev_vlan_proto(skb->dev),
				       vlan_dev_vlan_id(skb->dev));
	skb->dev = ep->ndev;
	__skb_queue_tail(&ep->backlog, skb);
	WRITE_ONCE(ep->inflight, ep->inflight + 1);
	ep->inflight_bytes += skb->truesize;
	spin_unlock(&ep->backlog.lock);
	queue_work_on(cpu, roce_udp_wq, &ep->work);
}

/*
 * An endpoint's work item: its waiting packets to its @rcv, as softirq would
 * (bottom halves disabled, under rcu_read_lock()), in order.
 */
static void roce_udp_work(struct work_struct *work)
{
	struct roce_udp_endpoint *ep = container_of(work, struct roce_udp_endpoint, work);
	/* A bound worker's: it stays there (but for CPU hotplug, which this survives). */
	int cpu = raw_smp_processor_id();
	unsigned int n, truesize;
	struct sk_buff *skb;

	for (n = 0; n < ROCE_UDP_WORK_BATCH; n++) {
		local_bh_disable();
		spin_lock(&ep->backlog.lock);
		skb = __skb_dequeue(&ep->backlog);
		spin_unlock(&ep->backlog.lock);
		if (!skb) {
			local_bh_enable();
			return;
		}
		truesize = skb->truesize;
		/* Kept until the softirqs raised meanwhile have run (bh enabled). */
		WRITE_ONCE(per_cpu(roce_udp_busy, cpu), true);
		rcu_read_lock();
		ep->rcv(ep, skb);
		rcu_read_unlock();
		/* Handled: a packet that comes now may be handed over at once. */
		spin_lock(&ep->backlog.lock);
		WRITE_ONCE(ep->inflight, ep->inflight - 1);
		ep->inflight_bytes -= truesize;
		spin_unlock(&ep->backlog.lock);
		local_bh_enable();
		WRITE_ONCE(per_cpu(roce_udp_busy, cpu), false);
		cond_resched();
	}
	/* More may wait: behind the other work of this CPU. */
	queue_work(roce_udp_wq, work);
}

/*
 * Cuts a GSO packet into its pieces and hands them to @ep one by one, as UDP
 * does for sockets that take no GSO packets (udp_queue_rcv_skb()), counting
 * each piece as a UDP datagram received, as it would (UDP counted the whole
 * once before encap_rcv).
 */
static void roce_udp_rcv_pieces(struct sock *sk, struct roce_udp_endpoint *ep,
				struct sk_buff *skb)
{
	bool ipv4 = sk->sk_family == AF_INET;
	struct sk_buff *segs, *next;
	unsigned int pieces = 0;

	__skb_push(skb, -skb_mac_offset(skb));
	segs = udp_rcv_segment(sk, skb, ipv4);
	skb_list_walk_safe(segs, skb, next) {
		skb_mark_not_on_list(skb);
		__skb_pull(skb, skb_transport_offset(skb));
		udp_post_segment_fix_csum(skb);
		roce_udp_deliver(ep, skb, false);
		pieces++;
	}
	if (pieces > 1)
		SNMP_ADD_STATS(__UDPX_MIB(sk, ipv4), UDP_MIB_INDATAGRAMS, pieces - 1);
}

/* The sockets' encap_rcv: softirq, under rcu_read_lock(). Always consumes. */
static int roce_udp_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct net *net = sock_net(sk);
	struct roce_udp_net *rn = net_generic(net, roce_udp_net_id);
	struct net_device *dev = skb->dev;
	struct roce_udp_endpoint *ep = NULL;

	if (dev && !(dev->flags & IFF_LOOPBACK))
		ep = roce_udp_lookup(net, rn, dev);
	if (!ep) {
		kfree_skb(skb);
		return 0;
	}
	if (roce_udp_takes_whole(ep, skb))
		roce_udp_deliver(ep, skb, skb_is_gso(skb));
	else
		roce_udp_rcv_pieces(sk, ep, skb);
	return 0;
}

static struct socket *roce_udp_open(struct net *net, bool ipv6)
{
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.ipv6_v6only = ipv6,
		.local_udp_port = htons(ROCE_V2_UDP_DPORT),
	};
	struct udp_tunnel_sock_cfg tnl = {
		.encap_type = 1,
		.encap_rcv = roce_udp_rcv,
	};
	struct socket *sock;
	int err;

	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tnl);
	/* GSO packets come whole; roce_udp_rcv() cuts those an endpoint does not take. */
	udp_encap_allow_gso(sock->sk);
	return sock;
}

static void roce_udp_close(struct roce_udp_net *rn)
{
	if (rn->sk6)
		udp_tunnel_sock_release(rn->sk6);
	if (rn->sk4)
		udp_tunnel_sock_release(rn->sk4);
	rn->sk6 = NULL;
	rn->sk4 = NULL;
}

static int roce_udp_open_all(struct net *net, struct roce_udp_net *rn)
{
	struct socket *sock;

	sock = roce_udp_open(net, false);
	if (IS_ERR(sock))
		return PTR_ERR(sock);
	rn->sk4 = sock;
	if (IS_ENABLED(CONFIG_IPV6)) {
		sock = roce_udp_open(net, true);
		/* IPv6 disabled at boot: IPv4 only. */
		if (IS_ERR(sock) && PTR_ERR(sock) != -EAFNOSUPPORT) {
			roce_udp_close(rn);
			return PTR_ERR(sock);
		}
		rn->sk6 = IS_ERR(sock) ? NULL : sock;
	}
	return 0;
}

/**
 * roce_udp_add - receive the RoCEv2 packets of a netdev
 * @ep: the endpoint, zeroed (or removed) before
 * @ndev: the netdev, registered; its namespace's port is opened if needed
 * @name: the RDMA device's name, for messages
 * @rcv: called with each packet for @ndev until roce_udp_del(), or until
 *	@ndev unregisters
 *
 * Process context, without RTNL (taken here).  Returns -EBUSY if another
 * endpoint serves @ndev, -ENODEV if @ndev is unregistering, the error of
 * opening the port otherwise (-EADDRINUSE: a socket that is no endpoint's
 * holds it), or 0.
 */
int roce_udp_add(struct roce_udp_endpoint *ep, struct net_device *ndev,
		 const char *name, roce_udp_rcv_t rcv)
{
	struct roce_udp_endpoint *other;
	struct roce_udp_net *rn;
	struct net *net;
	int err;

	/*
	 * Under RTNL the netdev neither unregisters nor moves to another
	 * namespace (both notify NETDEV_UNREGISTER, which removes endpoints)
	 * until the endpoint is in place, in the namespace it is in.
	 */
	rtnl_lock();
	mutex_lock(&roce_udp_mutex);
	if (WARN_ON(ep->rn)) {
		err = -EINVAL;
		goto out;
	}
	if (ndev->reg_state != NETREG_REGISTERED) {
		err = -ENODEV;
		goto out;
	}
	net = dev_net(ndev);
	rn = net_generic(net, roce_udp_net_id);
	other = xa_load(&rn->eps, ndev->ifindex);
	if (other) {
		pr_err("%s: %s is already served by RDMA device %s\n", name, ndev->name,
		       other->name);
		err = -EBUSY;
		goto out;
	}
	other = roce_udp_vlan_relative(rn, ndev);
	if (other) {
		pr_err("%s: %s is a VLAN of, or under, %s, which RDMA device %s serves\n", name,
		       ndev->name, other->ndev->name, other->name);
		err = -EBUSY;
		goto out;
	}
	if (!rn->count) {
		err = roce_udp_open_all(net, rn);
		if (err) {
			pr_err("%s: cannot open UDP port %u in the namespace of %s: %d\n", name,
			       ROCE_V2_UDP_DPORT, ndev->name, err);
			goto out;
		}
	}
	ep->ndev = ndev;
	ep->ifindex = ndev->ifindex;
	ep->rcv = rcv;
	ep->spread = ep->spread && ep->gso;
	strscpy(ep->name, name, sizeof(ep->name));
	skb_queue_head_init(&ep->backlog);
	ep->inflight = 0;
	ep->inflight_bytes = 0;
	INIT_WORK(&ep->work, roce_udp_work);
	err = xa_insert(&rn->eps, ndev->ifindex, ep, GFP_KERNEL);
	if (err) {
		if (!rn->count)
			roce_udp_close(rn);
		goto out;
	}
	ep->rn = rn;
	rn->count++;
out:
	mutex_unlock(&roce_udp_mutex);
	rtnl_unlock();
	return err;
}
EXPORT_SYMBOL(roce_udp_add);

/* Takes @ep out of its namespace; no @ep->rcv runs any more when this returns. */
static void roce_udp_detach(struct roce_udp_endpoint *ep)
{
	struct roce_udp_net *rn = ep->rn;

	lockdep_assert_held(&roce_udp_mutex);
	if (!rn)
		return;
	xa_erase(&rn->eps, ep->ifindex);
	ep->rn = NULL;
	if (!--rn->count)
		roce_udp_close(rn);
	/* Receivers that found @ep run under RCU. */
	synchronize_net();
	/* None queues work or packets any more; what waits goes. */
	cancel_work_sync(&ep->work);
	skb_queue_purge(&ep->backlog);
	ep->inflight = 0;
	ep->inflight_bytes = 0;
}

/**
 * roce_udp_del - stop receiving for an endpoint
 * @ep: the endpoint; added, removed already (its netdev unregistered), or
 *	never added
 *
 * Process context.  When this returns, no call of @ep->rcv is running or
 * will start, and @ep may be freed; the namespace's port closes with its
 * last endpoint.
 */
void roce_udp_del(struct roce_udp_endpoint *ep)
{
	mutex_lock(&roce_udp_mutex);
	roce_udp_detach(ep);
	mutex_unlock(&roce_udp_mutex);
}
EXPORT_SYMBOL(roce_udp_del);

static int roce_udp_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct roce_udp_endpoint *ep;
	struct roce_udp_net *rn;

	/* Also sent when the netdev leaves for another namespace. */
	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	rn = net_generic(dev_net(ndev), roce_udp_net_id);
	mutex_lock(&roce_udp_mutex);
	ep = xa_load(&rn->eps, ndev->ifindex);
	if (ep && ep->ndev == ndev)
		roce_udp_detach(ep);
	mutex_unlock(&roce_udp_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block roce_udp_notifier = {
	.notifier_call = roce_udp_netdev_event,
};

static int __net_init roce_udp_net_init(struct net *net)
{
	struct roce_udp_net *rn = net_generic(net, roce_udp_net_id);

	xa_init(&rn->eps);
	return 0;
}

/*
 * Endpoints leave with their netdevs, before a namespace goes (the netdevs
 * leave first).  Registered after the IPv4 and IPv6 pernet operations (at
 * late_initcall), this runs before theirs, while the namespace's UDP tables
 * still exist.
 */
static void __net_exit roce_udp_net_exit(struct net *net)
{
	struct roce_udp_net *rn = net_generic(net, roce_udp_net_id);
	struct roce_udp_endpoint *ep;
	unsigned long index;

	mutex_lock(&roce_udp_mutex);
	xa_for_each(&rn->eps, index, ep) {
		WARN_ONCE(1, "roce_udp: %s still has an endpoint as its namespace goes\n",
			  ep->name);
		roce_udp_detach(ep);
	}
	mutex_unlock(&roce_udp_mutex);
	xa_destroy(&rn->eps);
}

static struct pernet_operations roce_udp_net_ops = {
	.init = roce_udp_net_init,
	.exit = roce_udp_net_exit,
	.id = &roce_udp_net_id,
	.size = sizeof(struct roce_udp_net),
};

static int __init roce_udp_init(void)
{
	int err;

	roce_udp_wq = alloc_workqueue("roce_udp", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!roce_udp_wq)
		return -ENOMEM;
	err = register_pernet_subsys(&roce_udp_net_ops);
	if (err)
		goto out_wq;
	err = register_netdevice_notifier(&roce_udp_notifier);
	if (err)
		goto out_pernet;
	return 0;
out_pernet:
	unregister_pernet_subsys(&roce_udp_net_ops);
out_wq:
	destroy_workqueue(roce_udp_wq);
	return err;
}

static void __exit roce_udp_exit(void)
{
	unregister_netdevice_notifier(&roce_udp_notifier);
	unregister_pernet_subsys(&roce_udp_net_ops);
	destroy_workqueue(roce_udp_wq);
}

/* After inet_init and inet6_init: see roce_udp_net_exit(). */
late_initcall(roce_udp_init);
module_exit(roce_udp_exit);

MODULE_DESCRIPTION("The RoCEv2 UDP port of each network namespace, shared by software RoCE drivers");
MODULE_LICENSE("Dual BSD/GPL");
