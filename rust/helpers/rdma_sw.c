// SPDX-License-Identifier: GPL-2.0

/*
 * The C helpers of kernel::rdma::sw, the part of the RDMA abstractions that
 * only software RDMA devices use: their RoCEv2 wire, their QPs' timers and
 * work items, link creation and the context checks of work done in system
 * calls.
 */

#if IS_ENABLED(CONFIG_RUST_RDMA_SW)

#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/workqueue.h>
#include <linux/crc32.h>
#include <linux/if_vlan.h>
#include <linux/skbuff.h>
#include <linux/timer.h>
#include <linux/udp.h>
#include <net/dst_cache.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>
#include <net/route.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <rdma/roce_udp.h>

/*
 * kernel::rdma::sw::link: ib_core runs `rdma link add` callbacks concurrently
 * (under a read lock); a driver's "is this netdev taken?" check and its
 * registration must not interleave with another's, so the Rust link types'
 * callbacks run one at a time.
 */
static DEFINE_MUTEX(rust_rdma_newlink_mutex);

void rust_helper_rdma_newlink_lock(void)
{
	mutex_lock(&rust_rdma_newlink_mutex);
}

void rust_helper_rdma_newlink_unlock(void)
{
	mutex_unlock(&rust_rdma_newlink_mutex);
}

/*
 * kernel::rdma::sw::context: the data path executes work in the system call that
 * rang a doorbell, and yields the CPU between work requests.
 */
void rust_helper_rdma_cond_resched(void)
{
	cond_resched();
}

bool rust_helper_rdma_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}

/* kernel::rdma::sw::context: kernel users may post work with interrupts off. */
bool rust_helper_rdma_irqs_disabled(void)
{
	return irqs_disabled();
}

bool rust_helper_rdma_in_interrupt(void)
{
	return in_interrupt();
}

/*
 * kernel::rdma::sw::deferred: a QP's work item, run by the unbound system workqueue
 * (process context, on any CPU).
 */
void rust_helper_rdma_qp_work_setup(struct work_struct *w, void (*fn)(struct work_struct *))
{
	INIT_WORK(w, fn);
}

void rust_helper_rdma_qp_work_queue(struct work_struct *w)
{
	queue_work(system_unbound_wq, w);
}
/* kernel::rdma::sw::deferred: a QP's timer (one lockdep class for all of them). */
void rust_helper_rdma_qp_timer_setup(struct timer_list *t, void (*fn)(struct timer_list *))
{
	timer_setup(t, fn, 0);
}

bool rust_helper_rdma_qp_timer_pending(const struct timer_list *t)
{
	return timer_pending(t);
}

void rust_helper_rdma_qp_timer_arm(struct timer_list *t, u32 usecs)
{
	unsigned long ticks = usecs_to_jiffies(usecs);

	mod_timer(t, jiffies + (ticks ? ticks : 1));
}

/*
 * kernel::rdma::sw::wire: an endpoint at the shared RoCEv2 port of @ndev's
 * namespace, for the device @name, receiving @ndev's packets in @rcv, and
 * trains whole if @gso (on another CPU if @spread).
 */
struct roce_udp_endpoint *rust_helper_rdma_wire_open(struct net_device *ndev, const char *name,
						     roce_udp_rcv_t rcv, bool gso, bool spread)
{
	struct roce_udp_endpoint *ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	int err;

	if (!ep)
		return ERR_PTR(-ENOMEM);
	ep->gso = gso;
	ep->spread = spread;
	err = roce_udp_add(ep, ndev, name, rcv);
	if (err) {
		kfree(ep);
		return ERR_PTR(err);
	}
	/* The callback reads ep->ndev: held while the endpoint exists. */
	dev_hold(ndev);
	return ep;
}

/* Removes and frees an endpoint of rust_helper_rdma_wire_open; no callback runs afterwards. */
void rust_helper_rdma_wire_close(struct roce_udp_endpoint *ep)
{
	roce_udp_del(ep);
	dev_put(ep->ndev);
	kfree(ep);
}

/*
 * A received packet, linear, from its network header to its end; @segment:
 * 0, or the length of each piece of a train (a linear UDP GSO datagram, as
 * the port hands those over); @vouched: a train whose bytes the stack vouches
 * for (see kernel::rdma::sw::wire::RxPacket::vouched_for).
 */
int rust_helper_rdma_wire_rx(struct sk_buff *skb, const u8 **data, u32 *len, u32 *segment,
			     bool *vouched, u16 *vlan_id)
{
	*segment = 0;
	/*
	 * The 802.1Q VLAN it came on: its VLAN device received it, or the port
	 * kept the VLAN as its tag for a packet it handed over later.
	 */
	if (skb_vlan_tag_present(skb))
		*vlan_id = skb_vlan_tag_get_id(skb);
	else if (skb->dev && is_vlan_dev(skb->dev))
		*vlan_id = vlan_dev_vlan_id(skb->dev);
	else
		*vlan_id = 0xffff;
	/*
	 * Built by this host's UDP stack (or merged by its GRO, which checked
	 * each piece's UDP checksum), its checksum left to be filled in; not
	 * from a source the stack does not vouch for (tun, packet sockets,
	 * virtio: SKB_GSO_DODGY).
	 */
	*vouched = skb_is_gso(skb) && skb->ip_summed == CHECKSUM_PARTIAL &&
		   !(skb_shinfo(skb)->gso_type & SKB_GSO_DODGY);
	if (skb_is_gso(skb)) {
		if (skb_is_nonlinear(skb) ||
		    (skb_shinfo(skb)->gso_type & ~SKB_GSO_DODGY) != SKB_GSO_UDP_L4)
			return -EINVAL;
		*segment = skb_shinfo(skb)->gso_size;
	} else if (skb_linearize(skb)) {
		return -ENOMEM;
	}
	*data = skb_network_header(skb);
	*len = skb_tail_pointer(skb) - skb_network_header(skb);
	return 0;
}

/* The CRC-32 of the ICRC (reflected, no pre- or post-inversion), as the kernel computes it. */
u32 rust_helper_rdma_crc32_le(u32 crc, const u8 *p, size_t len)
{
	return crc32_le(crc, p, len);
}

/* Frees a packet: @consumed if the driver took it, dropped otherwise. */
void rust_helper_rdma_wire_free(struct sk_buff *skb, bool consumed)
{
	if (consumed)
		consume_skb(skb);
	else
		kfree_skb(skb);
}

/*
 * An skb with @len zeroed bytes of data, room for @ndev's link layer before
 * them.  @optional: the caller can do without it (a train, whose packets can go
 * one by one): no emergency reserves, no warning on failure.
 */
struct sk_buff *rust_helper_rdma_wire_alloc(struct net_device *ndev, u32 len, bool optional,
					    u8 **data)
{
	unsigned int head = LL_RESERVED_SPACE(ndev);
	gfp_t gfp = optional ? GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC : GFP_ATOMIC;
	struct sk_buff *skb = alloc_skb(head + len, gfp);

	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	*data = skb_put_zero(skb, len);
	return skb;
}

/*
 * kernel::rdma::sw::wire::RouteCache: the route of a connection's IPv4
 * packets, kept between them (per CPU); one destination per cache.
 * dst_cache wants bottom halves off; senders run in any context but hard
 * interrupts.  Per CPU, so charged to the QP owner's memory cgroup.
 */
int rust_helper_rdma_route_cache_init(struct dst_cache *routes)
{
	return dst_cache_init(routes, GFP_KERNEL_ACCOUNT);
}

/*
 * The route from @saddr to @daddr through @ndev: @routes' if it holds one
 * from @saddr, else looked up (and kept in @routes, if any).
 */
static struct dst_entry *rdma_wire_route4(struct net *net, struct net_device *ndev,
					  __be32 saddr, __be32 daddr,
					  struct dst_cache *routes)
{
	struct flowi4 fl = {};
	__be32 cached_saddr;
	struct rtable *rt;

	if (routes) {
		local_bh_disable();
		rt = dst_cache_get_ip4(routes, &cached_saddr);
		local_bh_enable();
		if (rt && cached_saddr == saddr)
			return &rt->dst;
		if (rt)
			ip_rt_put(rt);
	}
	fl.flowi4_oif = ndev->ifindex;
	fl.saddr = saddr;
	fl.daddr = daddr;
	fl.flowi4_proto = IPPROTO_UDP;
	rt = ip_route_output_key(net, &fl);
	if (IS_ERR(rt))
		return ERR_CAST(rt);
	if (routes) {
		local_bh_disable();
		dst_cache_set_ip4(routes, &rt->dst, saddr);
		local_bh_enable();
	}
	return &rt->dst;
}

#if IS_ENABLED(CONFIG_IPV6)
/*
 * The route from @saddr to @daddr through @ndev.  Not cached: an IPv6 route
 * refers to its namespace's dst_ops, which a cache that outlived the
 * namespace would free into.
 */
static struct dst_entry *rdma_wire_route6(struct net *net, struct net_device *ndev,
					  const struct in6_addr *saddr,
					  const struct in6_addr *daddr)
{
	struct flowi6 fl6 = {};
	struct dst_entry *dst;
	int err;

	fl6.flowi6_oif = ndev->ifindex;
	fl6.saddr = *saddr;
	fl6.daddr = *daddr;
	fl6.flowi6_proto = IPPROTO_UDP;
	dst = ip6_route_output(net, NULL, &fl6);
	if (dst->error) {
		err = dst->error;
		dst_release(dst);
		return ERR_PTR(err);
	}
	return dst;
}
#endif

/*
 * Makes @skb, an IP packet of @ipv6's family carrying UDP (its data starts
 * with the IP header), a UDP GSO datagram that the stack cuts into pieces of
 * @gso_size bytes after the UDP header, the last one shorter or as long, as
 * a UDP socket's UDP_SEGMENT sends (udp_send_skb): each piece gets its own
 * lengths, UDP checksum and (IPv4) identification.  At least two pieces,
 * at most UDP_MAX_SEGMENTS.
 */
static int rdma_wire_train(struct sk_buff *skb, bool ipv6, u32 gso_size)
{
	unsigned int ip = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	unsigned int ulen, segs;
	struct udphdr *uh;

	if (skb->len < ip + sizeof(*uh) || skb_headlen(skb) != skb->len)
		return -EINVAL;
	if (ipv6) {
		if (((const struct ipv6hdr *)skb->data)->nexthdr != IPPROTO_UDP)
			return -EINVAL;
	} else {
		const struct iphdr *iph = (const struct iphdr *)skb->data;

		if (iph->ihl != 5 || iph->protocol != IPPROTO_UDP)
			return -EINVAL;
	}
	uh = (struct udphdr *)(skb->data + ip);
	ulen = skb->len - ip;
	if (!gso_size || ulen <= sizeof(*uh) + gso_size || ntohs(uh->len) != ulen)
		return -EINVAL;
	segs = DIV_ROUND_UP(ulen - sizeof(*uh), gso_size);
	if (segs > UDP_MAX_SEGMENTS)
		return -EINVAL;
	skb_shinfo(skb)->gso_size = gso_size;
	skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
	skb_shinfo(skb)->gso_segs = segs;
	/* GSO needs the checksum offloaded: the pseudo-header sum goes in first. */
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = (unsigned char *)uh - skb->head;
	skb->csum_offset = offsetof(struct udphdr, check);
	if (ipv6) {
#if IS_ENABLED(CONFIG_IPV6)
		const struct ipv6hdr *ip6h = (const struct ipv6hdr *)skb->data;

		uh->check = ~udp_v6_check(ulen, &ip6h->saddr, &ip6h->daddr, 0);
#else
		return -EAFNOSUPPORT;
#endif
	} else {
		const struct iphdr *iph = (const struct iphdr *)skb->data;

		uh->check = ~udp_v4_check(ulen, iph->saddr, iph->daddr, 0);
	}
	return 0;
}

/*
 * The netdev a packet of @ndev's device leaves by: @ndev, or for @vlan_id
 * (not 0xffff) the 802.1Q VLAN device of that id on it (@ndev itself if it is
 * that VLAN).  NULL if there is none (any more).  Under RCU.
 */
static struct net_device *rdma_wire_egress(struct net_device *ndev, u16 vlan_id)
{
	struct net_device *vlan;

	if (vlan_id == 0xffff)
		return ndev;
	if (is_vlan_dev(ndev) && vlan_dev_vlan_id(ndev) == vlan_id)
		return ndev;
	vlan = __vlan_find_dev_deep_rcu(ndev, htons(ETH_P_8021Q), vlan_id);
	/* Its packets arrive in the VLAN's namespace, where no device takes them. */
	return vlan && net_eq(dev_net(vlan), dev_net(ndev)) ? vlan : NULL;
}

/* rust_helper_rdma_wire_xmit through @ndev, the egress netdev; under RCU. */
static int rdma_wire_xmit_via(struct net *net, struct net_device *ndev, struct sk_buff *skb,
			      bool ipv6, struct dst_cache *routes, u32 gso_size, u8 tos)
{
	struct dst_entry *dst;
	int err;

	if (gso_size) {
		err = rdma_wire_train(skb, ipv6, gso_size);
		if (err) {
			kfree_skb(skb);
			return err;
		}
	}

	if (!ipv6) {
		const struct iphdr *iph = (const struct iphdr *)skb->data;

		dst = rdma_wire_route4(net, ndev, iph->saddr, iph->daddr, routes);
		skb->protocol = htons(ETH_P_IP);
	} else {
#if IS_ENABLED(CONFIG_IPV6)
		const struct ipv6hdr *ip6h = (const struct ipv6hdr *)skb->data;

		dst = rdma_wire_route6(net, ndev, &ip6h->saddr, &ip6h->daddr);
		skb->protocol = htons(ETH_P_IPV6);
#else
		dst = ERR_PTR(-EAFNOSUPPORT);
#endif
	}
	if (IS_ERR(dst)) {
		kfree_skb(skb);
		return PTR_ERR(dst);
	}
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->priority = rt_tos2priority(tos);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr));
	if (ipv6) {
#if IS_ENABLED(CONFIG_IPV6)
		err = ip6_local_out(net, NULL, skb);
#else
		err = -EAFNOSUPPORT;
#endif
	} else {
		err = ip_local_out(net, NULL, skb);
	}
	return err > 0 ? net_xmit_errno(err) : err;
}


/*
 * Sends the IP packet @skb (its data starts with the IP header) through
 * @ndev, or its VLAN device of @vlan_id (not 0xffff), routed by the header's
 * addresses (IPv4: with @routes, if not NULL), at the priority the kernel
 * gives IP packets of its TOS (which a VLAN device maps to the frame's PCP);
 * if @gso_size is not 0, as a train the stack cuts (rdma_wire_train).
 * Consumes @skb.
 */
int rust_helper_rdma_wire_xmit(struct net_device *ndev, struct sk_buff *skb, bool ipv6,
			       struct dst_cache *routes, u32 gso_size, u16 vlan_id, u8 tos)
{
	struct net_device *egress;
	int err;

	/* The IP layer enables bottom halves again: not with interrupts off. */
	if (WARN_ON_ONCE(in_hardirq() || irqs_disabled())) {
		kfree_skb(skb);
		return -EINVAL;
	}
	/* The VLAN device, if any, stays while the packet is handed over. */
	rcu_read_lock();
	egress = rdma_wire_egress(ndev, vlan_id);
	if (egress) {
		err = rdma_wire_xmit_via(dev_net(egress), egress, skb, ipv6, routes, gso_size,
					 tos);
	} else {
		kfree_skb(skb);
		err = -ENETUNREACH;
	}
	rcu_read_unlock();
	return err;
}

#endif /* CONFIG_RUST_RDMA_SW */
