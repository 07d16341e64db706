// SPDX-License-Identifier: GPL-2.0
/*
 * An overflowed CQ lost a completion, so it must not look merely empty: the
 * owner gets IBV_EVENT_CQ_ERR, polls return the completions the CQ still
 * holds, then fail on every poll (an application waiting for the lost
 * completion would otherwise poll an empty CQ forever).
 *
 *   cq-overflow DEVICE
 */
#include "verbs-util.h"

static char buf[4096];

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_async_event ev;
	struct ibv_context *ctx;
	struct ibv_wc wc[8];
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n, i;

	CHECK(argc == 2, "usage: cq-overflow DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	CHECK(cq && cq->cqe == 4, "create_cq of 4");
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	CHECK(qp, "create_qp: %s", strerror(errno));

	/* Ten flushes into a CQ of four. */
	to_init(qp);
	for (i = 0; i < 10; i++)
		CHECK(post_recv_id(qp, mr, 100 + i) == 0, "post_recv %d", i);
	modify_state(qp, IBV_QPS_ERR);
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_CQ_ERR &&
		      ev.element.cq == cq,
	      "no IBV_EVENT_CQ_ERR for the overflowed CQ");
	printf("IBV_EVENT_CQ_ERR\n");

	/* What the CQ holds comes first, in order, in any batch size. */
	n = ibv_poll_cq(cq, 3, wc);
	CHECK(n == 3, "first poll of the overflowed CQ returned %d, expected 3", n);
	n = ibv_poll_cq(cq, 8, wc + 3);
	CHECK(n == 1, "second poll returned %d, expected the last held completion", n);
	for (i = 0; i < 4; i++)
		CHECK(wc[i].wr_id == 100 + (uint64_t)i &&
			      wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "held completion %d: wr_id %llu status %d", i,
		      (unsigned long long)wc[i].wr_id, wc[i].status);
	printf("the 4 held completions polled, in order\n");

	/* Then every poll fails, even after more work completes. */
	for (i = 0; i < 3; i++) {
		n = ibv_poll_cq(cq, 8, wc);
		CHECK(n < 0, "poll %d of the emptied overflowed CQ returned %d, expected a failure",
		      i, n);
	}
	CHECK(post_recv_id(qp, mr, 200) == 0, "post_recv in ERR");
	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n < 0, "poll after another flush returned %d", n);
	printf("every later poll fails (%d)\n", n);

	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
