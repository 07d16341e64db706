// SPDX-License-Identifier: GPL-2.0
/*
 * Completions the kernel writes before the data path exists: a QP moved to
 * the error state flushes every outstanding work request (send queue, then
 * receive queue, unsignaled ones included) as IBV_WC_WR_FLUSH_ERR; work
 * posted in the error state is flushed at once; RESET drops work without
 * completions; an armed CQ signals its channel; SQD reports the send queue
 * drained when asked; a CQ too small for the flush overruns into
 * IBV_EVENT_CQ_ERR without losing what it holds.
 *
 *   flush DEVICE
 */
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];

static struct ibv_qp *make_qp(struct ibv_cq *cq, int send_wr, int recv_wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	CHECK(qp, "create_qp: %s", strerror(errno));
	return qp;
}

static void expect_wc(struct ibv_cq *cq, struct ibv_qp *qp, uint64_t wr_id,
		      enum ibv_wc_opcode opcode)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	CHECK(n == 1, "expected the completion of wr_id %llu, poll returned %d",
	      (unsigned long long)wr_id, n);
	CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_WR_FLUSH_ERR &&
		      wc.qp_num == qp->qp_num && wc.opcode == opcode,
	      "completion wr_id %llu status %d opcode %d qp %u; expected wr_id %llu flushed, opcode %d, qp %u",
	      (unsigned long long)wc.wr_id, wc.status, wc.opcode, wc.qp_num,
	      (unsigned long long)wr_id, opcode, qp->qp_num);
}

static void expect_empty(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	CHECK(n == 0, "%s: poll returned %d (wr_id %llu)", what, n,
	      (unsigned long long)wc.wr_id);
}

static void flush_in_order(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp;
	void *ev_ctx;

	CHECK(ch, "create_comp_channel: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 32, NULL, ch, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	qp = make_qp(cq, 8, 8);
	to_rts(qp);
	hold_sends(qp);
	for (int i = 0; i < 3; i++)
		CHECK(post_recv_id(qp, mr, 100 + i) == 0, "post_recv");
	CHECK(post_send_id(qp, mr, 200, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0,
	      "post_send");
	CHECK(post_send_id(qp, mr, 201, IBV_WR_RDMA_WRITE, 0) == 0, "post_send");
	CHECK(post_send_id(qp, mr, 202, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED) == 0,
	      "post_send");
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq");
	CHECK(!readable(ch->fd, 0), "the channel fired before any completion");

	modify_state(qp, IBV_QPS_ERR);
	CHECK(readable(ch->fd, 5000), "no completion event after the flush");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq,
	      "get_cq_event");
	ibv_ack_cq_events(cq, 1);
	expect_wc(cq, qp, 200, IBV_WC_SEND);
	expect_wc(cq, qp, 201, IBV_WC_RDMA_WRITE);
	expect_wc(cq, qp, 202, IBV_WC_RDMA_READ);
	for (int i = 0; i < 3; i++)
		expect_wc(cq, qp, 100 + i, IBV_WC_RECV);
	expect_empty(cq, "after the flush");
	printf("ERR flushes 3 sends (one unsignaled) and 3 receives, in order; the armed CQ signalled once\n");

	/* Disarmed by that completion: more completions stay silent. */
	CHECK(post_recv_id(qp, mr, 103) == 0, "post_recv in ERR");
	expect_wc(cq, qp, 103, IBV_WC_RECV);
	CHECK(post_send_id(qp, mr, 203, IBV_WR_SEND, 0) == 0, "post_send in ERR");
	expect_wc(cq, qp, 203, IBV_WC_SEND);
	CHECK(!readable(ch->fd, 100), "a disarmed CQ signalled");
	printf("work posted in ERR is flushed at once; a disarmed CQ stays silent\n");

	/*
	 * A flushed completion is unsuccessful, and ibv_req_notify_cq(3) counts
	 * every unsuccessful completion as solicited: it wakes a CQ armed for
	 * solicited completions only.
	 */
	CHECK(ibv_req_notify_cq(cq, 1) == 0, "req_notify_cq solicited");
	CHECK(post_recv_id(qp, mr, 104) == 0, "post_recv in ERR");
	CHECK(readable(ch->fd, 5000), "solicited-only arming missed a flushed completion");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq,
	      "get_cq_event");
	ibv_ack_cq_events(cq, 1);
	expect_wc(cq, qp, 104, IBV_WC_RECV);
	printf("solicited-only arming wakes on a flushed completion\n");

	/* RESET drops posted work without completions. */
	modify_state(qp, IBV_QPS_RESET);
	to_init(qp);
	CHECK(post_recv_id(qp, mr, 105) == 0, "post_recv in INIT");
	modify_state(qp, IBV_QPS_RESET);
	expect_empty(cq, "RESET");
	to_init(qp);
	modify_state(qp, IBV_QPS_ERR);
	expect_empty(cq, "ERR after RESET dropped the queue");
	printf("RESET drops posted work without completions\n");

	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
}

/* RTS -> SQD with en_sqd_async_notify: the send queue reports it drained. */
static void sq_drained(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_async_event ev;
	struct ibv_qp *qp;

	CHECK(cq, "create_cq");
	qp = make_qp(cq, 4, 4);
	to_rts(qp);
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0,
	      "RTS -> SQD");
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_SQ_DRAINED &&
		      ev.element.qp == qp,
	      "no IBV_EVENT_SQ_DRAINED");
	modify_state(qp, IBV_QPS_RTS);
	a.en_sqd_async_notify = 0;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0,
	      "RTS -> SQD, quietly");
	CHECK(next_async_event(ctx, 200, &ev) == -1, "SQ drained reported unasked");
	printf("RTS -> SQD: IBV_EVENT_SQ_DRAINED when asked for, silence otherwise\n");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

static void overrun(void)
{
	struct ibv_async_event ev;
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n;

	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	CHECK(cq && cq->cqe == 4, "create_cq of 4");
	qp = make_qp(cq, 4, 16);
	to_init(qp);
	for (int i = 0; i < 10; i++)
		CHECK(post_recv_id(qp, mr, 300 + i) == 0, "post_recv %d", i);
	modify_state(qp, IBV_QPS_ERR);
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_CQ_ERR &&
		      ev.element.cq == cq,
	      "no IBV_EVENT_CQ_ERR for the overrun CQ");
	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n == 4, "an overrun CQ of 4 entries gave %d completions", n);
	for (int i = 0; i < 4; i++)
		CHECK(wc[i].wr_id == 300 + (uint64_t)i &&
			      wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "overrun CQ entry %d: wr_id %llu", i,
		      (unsigned long long)wc[i].wr_id);
	CHECK(next_async_event(ctx, 200, &ev) == -1,
	      "a second event for the same overrun (%d)", ev.event_type);
	printf("a CQ of 4 overrun by 10 flushes: IBV_EVENT_CQ_ERR once, its 4 entries intact\n");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: flush DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	flush_in_order();
	sq_drained();
	overrun();
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
