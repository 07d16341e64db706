/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The RoCEv2 UDP port of a network namespace, shared by software RoCE drivers.
 *
 * Only one socket of a namespace can hold UDP port 4791 (per address family),
 * so software RoCE devices do not open their own: each registers an endpoint
 * for the netdev it serves, and the namespace's one receive point hands every
 * packet to the endpoint of the netdev it arrived on, whichever driver made
 * the endpoint.  Transmission does not involve it.
 */
#ifndef _RDMA_ROCE_UDP_H
#define _RDMA_ROCE_UDP_H

#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

struct roce_udp_endpoint;
struct roce_udp_net;

/*
 * Receives one RoCEv2 packet for @ep's netdev, in softirq context under
 * rcu_read_lock() (if @ep->spread, maybe in a work item instead, with bottom
 * halves disabled and under rcu_read_lock() too).  skb->data is the UDP
 * header; the network header is set.
 * If @ep->gso, the packet may also be a (linear) UDP GSO datagram
 * (SKB_GSO_UDP_L4): its payload after the UDP header is a train of RoCEv2
 * packets of gso_size bytes each, the last one as long or shorter, each of
 * which would carry a copy of the IP and UDP headers with its own lengths
 * (and IPv4 identification: the datagram's plus the piece's index) once
 * cut.  The callee owns @skb (frees or keeps it).
 *
 * If @ep->spread, trains taken whole are handed to @rcv from a work item on
 * another CPU than the one that received them (with every packet for @ep
 * that arrives while one is waiting or being handled, so that @rcv sees the
 * packets of a CPU in the order they came, and every one that arrives while
 * such a work item runs on the receiving CPU): the receiver's copy of their
 * payload then runs beside the sender's, which on a veth is on the CPU that
 * received them.
 */
typedef void (*roce_udp_rcv_t)(struct roce_udp_endpoint *ep, struct sk_buff *skb);

/**
 * struct roce_udp_endpoint - a RoCE device's place at its namespace's port
 * @ndev: the netdev whose packets the endpoint takes
 * @rcv: where they go
 * @name: the RDMA device's name, for messages
 * @gso: @rcv takes linear UDP GSO datagrams whole (see roce_udp_rcv_t)
 * @spread: @rcv takes trains on another CPU (see roce_udp_rcv_t); only with @gso
 * @ifindex: @ndev's index in the namespace when added
 * @rn: the namespace's receive point while added; NULL before and after
 * @backlog: the packets waiting for @work (@spread), under its own lock
 * @inflight: how many packets @backlog holds or @work is handling, changed
 *	under @backlog's lock (read without it for a plain packet's fast path)
 * @inflight_bytes: their truesize, likewise
 * @work: hands the packets of @backlog to @rcv
 *
 * Embedded in the driver's device, zeroed before roce_udp_add(); the owner
 * may set @gso and @spread then.  Only @ndev may be read by its owner; the
 * rest belongs to roce_udp.c.
 */
struct roce_udp_endpoint {
	struct net_device *ndev;
	roce_udp_rcv_t rcv;
	bool gso;
	bool spread;
	char name[IB_DEVICE_NAME_MAX];
	int ifindex;
	struct roce_udp_net *rn;
	struct sk_buff_head backlog;
	unsigned int inflight;
	unsigned int inflight_bytes;
	struct work_struct work;
};

#if IS_ENABLED(CONFIG_INFINIBAND_ROCE_UDP)
int roce_udp_add(struct roce_udp_endpoint *ep, struct net_device *ndev,
		 const char *name, roce_udp_rcv_t rcv);
void roce_udp_del(struct roce_udp_endpoint *ep);
#else
static inline int roce_udp_add(struct roce_udp_endpoint *ep, struct net_device *ndev,
			       const char *name, roce_udp_rcv_t rcv)
{
	return -EOPNOTSUPP;
}

static inline void roce_udp_del(struct roce_udp_endpoint *ep)
{
}
#endif

#endif /* _RDMA_ROCE_UDP_H */
