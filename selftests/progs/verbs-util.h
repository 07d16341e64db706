/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the selftest programs: open a device by name, move a
 * QP through its states, wait for a completion or async event with a
 * timeout.  A failed CHECK prints why and exits 1.
 */
#ifndef FERROCE_SELFTEST_VERBS_UTIL_H
#define FERROCE_SELFTEST_VERBS_UTIL_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

/*
 * A program may define CHECK_CONTEXT() before including this file: it runs
 * after the message of every failed CHECK (e.g. to print the seed and the
 * phase), before the newline.
 */
#ifndef CHECK_CONTEXT
#define CHECK_CONTEXT() do { } while (0)
#endif

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "FAIL: " __VA_ARGS__);            \
			CHECK_CONTEXT();                                  \
			fprintf(stderr, "\n");                            \
			exit(1);                                          \
		}                                                         \
	} while (0)

static inline struct ibv_context *open_device(const char *name)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(ctx, "cannot open %s", name);
	return ctx;
}

/* Whether fd becomes readable within ms milliseconds. */
static inline int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The next async event, or -1 if none arrives within ms milliseconds. */
static inline int next_async_event(struct ibv_context *ctx, int ms,
				   struct ibv_async_event *ev)
{
	if (!readable(ctx->async_fd, ms))
		return -1;
	CHECK(ibv_get_async_event(ctx, ev) == 0, "get_async_event: %s",
	      strerror(errno));
	ibv_ack_async_event(ev);
	return ev->event_type;
}

static inline void modify_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);

	CHECK(ret == 0, "modify QP %u to state %d: %s", qp->qp_num, state,
	      strerror(ret));
}

/* RESET -> INIT, allowing peers `access` (IBV_ACCESS_REMOTE_*). */
static inline void init_with(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(ret == 0, "to INIT: %s", strerror(ret));
}

/* RESET -> INIT, with the attributes that transition requires. */
static inline void to_init(struct ibv_qp *qp)
{
	init_with(qp, IBV_ACCESS_REMOTE_WRITE);
}

/*
 * INIT -> RTR, connected to the QP `dest` at the GID `dgid` (of this device or
 * another one), from the local GID index `sgid_index`, expecting the PSN
 * `rq_psn` first.
 */
static inline void rtr_to_gid(struct ibv_qp *qp, uint32_t dest,
			      const union ibv_gid *dgid, int sgid_index,
			      uint32_t rq_psn)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid = *dgid;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	CHECK(ret == 0, "QP %u to RTR (to QP %u): %s", qp->qp_num, dest,
	      strerror(ret));
}

/* INIT -> RTR, connected to the QP `dest` of this device through GID index 1. */
static inline void rtr_to(struct ibv_qp *qp, uint32_t dest)
{
	union ibv_gid gid;

	CHECK(ibv_query_gid(qp->context, 1, 1, &gid) == 0, "query_gid 1");
	rtr_to_gid(qp, dest, &gid, 1, 1);
}

/* INIT -> RTR, connected to itself through GID index 1. */
static inline void to_rtr(struct ibv_qp *qp)
{
	rtr_to(qp, qp->qp_num);
}

/*
 * RTR -> RTS, retrying RNR NAKs `rnr_retry` times (7: for ever) and
 * transport timeouts (4.096 us << `timeout`) `retry_cnt` times, sending
 * from the PSN `sq_psn`.
 */
static inline void rts_with(struct ibv_qp *qp, int rnr_retry, int retry_cnt,
			    int timeout, uint32_t sq_psn)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "QP %u to RTS: %s", qp->qp_num, strerror(ret));
}

/* RTR -> RTS, retrying RNR NAKs `rnr_retry` times (7: for ever). */
static inline void rtr_to_rts(struct ibv_qp *qp, int rnr_retry)
{
	rts_with(qp, rnr_retry, 7, 14, 1);
}

/* RESET -> INIT -> RTR -> RTS, connected to itself through GID index 1. */
static inline void to_rts(struct ibv_qp *qp)
{
	to_init(qp);
	to_rtr(qp);
	rtr_to_rts(qp, 7);
}

/*
 * RTS -> SQD: the send queue takes work without starting it (sends execute
 * in the doorbell in RTS), so tests of what ERR flushes park work here.
 */
static inline void hold_sends(struct ibv_qp *qp)
{
	modify_state(qp, IBV_QPS_SQD);
}

/* RESET -> INIT for a UD QP, with its Q_Key. */
static inline void ud_to_init(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey,
	};
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_QKEY);

	CHECK(ret == 0, "UD to INIT: %s", strerror(ret));
}

/* RTR -> RTS for a UD QP. */
static inline void ud_rtr_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);

	CHECK(ret == 0, "UD to RTS: %s", strerror(ret));
}

/* RESET -> INIT -> RTR -> RTS for a UD QP. */
static inline void ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	ud_to_init(qp, qkey);
	modify_state(qp, IBV_QPS_RTR);
	ud_rtr_to_rts(qp);
}

static inline int post_recv_id(struct ibv_qp *qp, struct ibv_mr *mr,
			       uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static inline int post_srq_recv_id(struct ibv_srq *srq, struct ibv_mr *mr,
				   uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

static inline int post_send_id(struct ibv_qp *qp, struct ibv_mr *mr,
			       uint64_t wr_id, enum ibv_wr_opcode op,
			       unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)mr->addr, 64, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = flags }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)mr->addr;
	wr.wr.rdma.rkey = mr->rkey;
	return ibv_post_send(qp, &wr, &bad);
}

#endif /* FERROCE_SELFTEST_VERBS_UTIL_H */
