// SPDX-License-Identifier: GPL-2.0
/*
 * The send doorbell (the empty POST_SEND write()) in states where the send
 * queue takes no work: a QP in RESET, INIT or RTR answers EINVAL, and the
 * refusal queues nothing and does not put the (sane) ring in error; the
 * same QP in RTS takes the doorbell, and moved to the error state it
 * flushes nothing, since nothing was posted.
 *
 *   doorbell-state DEVICE
 */
#include "uverbs-raw.h"

static void refused_in(struct ibv_qp *qp, struct ferroce_queue_ctrl *sq,
		       const char *state)
{
	int ret = sq_doorbell(qp);

	CHECK(ret == -EINVAL, "doorbell in %s returned %d, expected -EINVAL",
	      state, ret);
	CHECK(!(ring_load(&sq->flags) & FERROCE_QUEUE_ERROR),
	      "a doorbell refused in %s put the sane SQ in error (flags %#x)",
	      state, ring_load(&sq->flags));
	CHECK(ring_load(&sq->consumer) == 0 && ring_load(&sq->producer) == 0,
	      "a doorbell refused in %s moved the SQ (producer %u consumer %u)",
	      state, ring_load(&sq->producer), ring_load(&sq->consumer));
	printf("doorbell in %s: EINVAL, the SQ untouched\n", state);
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ring_map before[16], after[16];
	struct ferroce_queue_ctrl *sq;
	struct ibv_context *ctx;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_wc wc;
	int nb, na, ret;

	CHECK(argc == 2, "usage: doorbell-state DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	srq = ibv_create_srq(pd, &si);
	CHECK(srq, "create_srq: %s", strerror(errno));
	/* A QP on an SRQ maps one queue, its SQ. */
	struct ibv_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	nb = uverbs_maps(before, 16);
	qp = ibv_create_qp(pd, &qi);
	CHECK(qp, "create_qp: %s", strerror(errno));
	na = uverbs_maps(after, 16);
	sq = new_ring(before, nb, after, na);

	refused_in(qp, sq, "RESET");
	ud_to_init(qp, 0x11);
	refused_in(qp, sq, "INIT");
	modify_state(qp, IBV_QPS_RTR);
	refused_in(qp, sq, "RTR");
	ud_rtr_to_rts(qp);
	ret = sq_doorbell(qp);
	CHECK(ret == 0, "doorbell of an empty SQ in RTS returned %d", ret);
	modify_state(qp, IBV_QPS_ERR);
	ret = ibv_poll_cq(cq, 1, &wc);
	CHECK(ret == 0, "the QP moved to ERR flushed %d requests (wr_id %llu); none was posted",
	      ret, (unsigned long long)wc.wr_id);
	printf("RTS: doorbell taken; ERR: nothing to flush\n");

	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_srq(srq), "destroy QP, SRQ");
	CHECK(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "destroy CQ, PD");
	ibv_close_device(ctx);
	return 0;
}
