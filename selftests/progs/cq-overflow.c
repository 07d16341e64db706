// SPDX-License-Identifier: GPL-2.0
/*
 * An overflowed CQ lost a completion, so it must not look merely empty: the
 * owner gets IBV_EVENT_CQ_ERR, polls return the completions the CQ still
 * holds, then fail on every poll (an application waiting for the lost
 * completion would otherwise poll an empty CQ forever).
 *
 * A resize moves a CQ to a new ring, which must keep what the old one had:
 * an overrun CQ stays overrun (the kernel sets FERROCE_QUEUE_OVERFLOW in
 * the new ring, next to the held completions it copies), and an armed CQ
 * stays armed (the kernel copies notify; the provider arms under the lock
 * a resize holds).
 *
 *   cq-overflow DEVICE
 */
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];

static struct ibv_qp *make_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	CHECK(qp, "create_qp: %s", strerror(errno));
	return qp;
}

/* Ten flushes, wr_id 100 to 109, into a CQ of four. */
static struct ibv_qp *overflow(struct ibv_cq *cq)
{
	struct ibv_qp *qp = make_qp(cq);
	struct ibv_async_event ev;
	int i;

	to_init(qp);
	for (i = 0; i < 10; i++)
		CHECK(post_recv_id(qp, mr, 100 + i) == 0, "post_recv %d", i);
	modify_state(qp, IBV_QPS_ERR);
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_CQ_ERR &&
		      ev.element.cq == cq,
	      "no IBV_EVENT_CQ_ERR for the overflowed CQ");
	printf("IBV_EVENT_CQ_ERR\n");
	return qp;
}

/* The four held completions, in order, in polls of 3 and 8. */
static void held_then_fail(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc[8];
	int n, i;

	n = ibv_poll_cq(cq, 3, wc);
	CHECK(n == 3, "%s: first poll returned %d, expected 3", what, n);
	n = ibv_poll_cq(cq, 5, wc + 3);
	CHECK(n == 1, "%s: second poll returned %d, expected the last held completion",
	      what, n);
	for (i = 0; i < 4; i++)
		CHECK(wc[i].wr_id == 100 + (uint64_t)i &&
			      wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "%s: held completion %d: wr_id %llu status %d", what, i,
		      (unsigned long long)wc[i].wr_id, wc[i].status);
	printf("%s: the 4 held completions polled, in order\n", what);
	for (i = 0; i < 3; i++) {
		n = ibv_poll_cq(cq, 8, wc);
		CHECK(n < 0, "%s: poll %d of the emptied overflowed CQ returned %d, expected a failure",
		      what, i, n);
	}
}

static void overflowed_cq_fails(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wc wc[8];
	struct ibv_qp *qp;
	int n;

	CHECK(cq && cq->cqe == 4, "create_cq of 4");
	qp = overflow(cq);
	held_then_fail(cq, "overflowed");
	/* Then every poll fails, even after more work completes. */
	CHECK(post_recv_id(qp, mr, 200) == 0, "post_recv in ERR");
	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n < 0, "poll after another flush returned %d", n);
	printf("every later poll fails (%d)\n", n);
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

/*
 * Resized after the overflow, with room to spare: the held completions
 * move to the new ring and the CQ stays overrun there.  A provider that
 * read the overflow only from the old ring, or a kernel that left it
 * behind, would report the big new CQ as merely empty.
 */
static void overflow_survives_resize(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wc wc[8];
	struct ibv_qp *qp;
	int ret, n;

	CHECK(cq && cq->cqe == 4, "create_cq of 4");
	qp = overflow(cq);
	ret = ibv_resize_cq(cq, 64);
	CHECK(ret == 0 && cq->cqe >= 64, "resize_cq of the overflowed CQ to 64: %s",
	      strerror(ret));
	held_then_fail(cq, "overflowed, then resized");
	CHECK(post_recv_id(qp, mr, 200) == 0, "post_recv in ERR");
	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n < 0, "resized: poll after another flush returned %d", n);
	printf("overflowed, then resized: still overrun (%d)\n", n);
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

/* The next completion of an armed CQ signals ch, and only one does. */
static void expect_event(struct ibv_comp_channel *ch, struct ibv_cq *cq,
			 struct ibv_qp *qp, uint64_t wr_id, const char *what)
{
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ev_ctx;

	CHECK(!readable(ch->fd, 0), "%s: the channel fired before any completion", what);
	/* In ERR each receive is flushed at once by its doorbell. */
	CHECK(post_recv_id(qp, mr, wr_id) == 0, "%s: post_recv in ERR", what);
	CHECK(readable(ch->fd, 5000), "%s: the flush completion did not signal the channel",
	      what);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq,
	      "%s: get_cq_event", what);
	ibv_ack_cq_events(cq, 1);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == wr_id &&
		      wc.status == IBV_WC_WR_FLUSH_ERR,
	      "%s: the flush completion", what);
	printf("%s: the completion signalled the channel\n", what);
}

/*
 * Armed, then resized: the request must move to the new ring (the kernel
 * copies notify), or the next completion signals nothing.  Armed after the
 * resize: the provider must arm the new ring, not the unmapped old one.
 */
static void arm_survives_resize(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret;

	CHECK(ch, "create_comp_channel: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 4, NULL, ch, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	qp = make_qp(cq);
	to_init(qp);
	modify_state(qp, IBV_QPS_ERR);

	CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	ret = ibv_resize_cq(cq, 64);
	CHECK(ret == 0 && cq->cqe >= 64, "resize_cq to 64: %s", strerror(ret));
	expect_event(ch, cq, qp, 300, "armed, then resized");

	ret = ibv_resize_cq(cq, 128);
	CHECK(ret == 0 && cq->cqe >= 128, "resize_cq to 128: %s", strerror(ret));
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq after the resize");
	expect_event(ch, cq, qp, 301, "resized, then armed");

	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: cq-overflow DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));

	overflowed_cq_fails();
	overflow_survives_resize();
	arm_survives_resize();

	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
