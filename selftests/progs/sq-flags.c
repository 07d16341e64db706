// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel changes a queue's flags one bit at a time (atomic OR and
 * AND-NOT), never by storing the whole word: a send queue whose producer
 * index the process corrupted is marked FERROCE_QUEUE_ERROR by the
 * doorbell, which fails with EINVAL, and the SQ still asks for its doorbell
 * (FERROCE_QUEUE_NEED_WAKEUP), which was set before.  Another QP is not
 * affected.
 *
 *   sq-flags DEVICE
 */
#include "uverbs-raw.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_srq *srq;

/* A UD QP on the SRQ in RTS, and its SQ's mapping (its only one). */
static struct ibv_qp *make_qp(struct ferroce_queue_ctrl **sq)
{
	struct ibv_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ring_map before[16], after[16];
	struct ibv_qp *qp;
	int nb, na;

	nb = uverbs_maps(before, 16);
	qp = ibv_create_qp(pd, &qi);
	CHECK(qp, "create_qp: %s", strerror(errno));
	na = uverbs_maps(after, 16);
	*sq = new_ring(before, nb, after, na);
	ud_to_rts(qp, 0x11);
	return qp;
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ferroce_queue_ctrl *sq, *other_sq;
	struct ibv_qp *qp, *other;
	uint32_t flags;
	int ret;

	CHECK(argc == 2, "usage: sq-flags DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	srq = ibv_create_srq(pd, &si);
	CHECK(srq, "create_srq: %s", strerror(errno));
	qp = make_qp(&sq);
	other = make_qp(&other_sq);

	flags = ring_load(&sq->flags);
	CHECK(flags == FERROCE_QUEUE_NEED_WAKEUP,
	      "a new SQ's flags are %#x, expected NEED_WAKEUP (%#x): nothing in the kernel watches it",
	      flags, FERROCE_QUEUE_NEED_WAKEUP);
	CHECK(sq_doorbell(qp) == 0, "doorbell of a sane SQ");

	/* More entries outstanding than any ring holds. */
	__atomic_store_n(&sq->producer, ring_load(&sq->consumer) + 0x80000000u,
			 __ATOMIC_RELEASE);
	ret = sq_doorbell(qp);
	CHECK(ret == -EINVAL, "doorbell of a corrupted SQ returned %d, expected -EINVAL", ret);
	flags = ring_load(&sq->flags);
	CHECK(flags & FERROCE_QUEUE_ERROR, "corrupted SQ not marked in error (flags %#x)", flags);
	CHECK(flags & FERROCE_QUEUE_NEED_WAKEUP,
	      "marking the SQ in error cleared NEED_WAKEUP (flags %#x): the flags word was overwritten, not ORed",
	      flags);
	CHECK(flags == (FERROCE_QUEUE_ERROR | FERROCE_QUEUE_NEED_WAKEUP),
	      "corrupted SQ: flags %#x, expected ERROR | NEED_WAKEUP", flags);
	printf("corrupted SQ: doorbell EINVAL, flags ERROR | NEED_WAKEUP\n");

	flags = ring_load(&other_sq->flags);
	CHECK(flags == FERROCE_QUEUE_NEED_WAKEUP && sq_doorbell(other) == 0,
	      "another QP's SQ was affected (flags %#x)", flags);
	printf("another QP: unaffected\n");

	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_qp(other), "destroy QPs");
	CHECK(!ibv_destroy_srq(srq) && !ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd),
	      "destroy SRQ, CQ, PD");
	ibv_close_device(ctx);
	return 0;
}
