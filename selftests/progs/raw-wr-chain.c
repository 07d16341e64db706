// SPDX-License-Identifier: GPL-2.0
/*
 * Work requests written through the raw uverbs write() path (POST_SEND,
 * POST_RECV, POST_SRQ_RECV with wr_count >= 1) on a user QP or SRQ.  ib_core
 * turns them into kernel work requests whose SGE addresses (and inline
 * data pointers) are user addresses; the kernel::rdma layer refuses such
 * chains for user objects, whose work goes through the shared rings only.
 * Each chain must fail with EINVAL naming its first request (bad_wr 1; an
 * SRQ's may instead find the command not offered at all, EOPNOTSUPP),
 * queue nothing (the QP moved to the error state flushes only what the
 * provider posted; the SRQ holds only what the provider posted) and leave
 * the kernel log clean.
 *
 *   raw-wr-chain DEVICE
 */
#include "uverbs-raw.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];

/* Three requests: an inline SEND of user memory, an RDMA WRITE, a SEND. */
static int raw_post_send(struct ibv_qp *qp, uint32_t ah, uint32_t *bad_wr)
{
	struct {
		struct ib_uverbs_post_send cmd;
		struct ib_uverbs_send_wr wr[3];
		struct ib_uverbs_sge sge[3];
	} __attribute__((packed)) req;
	struct ib_uverbs_post_send_resp resp = { .bad_wr = 0xdead };
	int i, ret, n = ah ? 1 : 3;

	memset(&req, 0, sizeof(req));
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.wr_count = n;
	req.cmd.sge_count = n;
	req.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	for (i = 0; i < n; i++) {
		req.wr[i].wr_id = 100 + i;
		req.wr[i].num_sge = 1;
		req.wr[i].send_flags = IBV_SEND_SIGNALED;
		req.sge[i].addr = (uintptr_t)buf;
		req.sge[i].length = 64;
		req.sge[i].lkey = mr->lkey;
	}
	req.wr[0].opcode = IBV_WR_SEND;
	if (ah) {
		req.wr[0].wr.ud.ah = ah;
		req.wr[0].wr.ud.remote_qpn = qp->qp_num;
		req.wr[0].wr.ud.remote_qkey = 0x11;
	} else {
		/* Inline data named by a user address. */
		req.wr[0].send_flags |= IBV_SEND_INLINE;
		req.wr[1].opcode = IBV_WR_RDMA_WRITE;
		req.wr[1].wr.rdma.remote_addr = (uintptr_t)buf;
		req.wr[1].wr.rdma.rkey = mr->rkey;
		req.wr[2].opcode = IBV_WR_SEND;
	}
	/* The WQEs, then the SGEs, follow the command. */
	memmove((char *)&req.wr[n], req.sge, n * sizeof(req.sge[0]));
	ret = uverbs_cmd(ctx->cmd_fd, IB_USER_VERBS_CMD_POST_SEND, &req,
			 sizeof(req.cmd) + n * (sizeof(req.wr[0]) + sizeof(req.sge[0])),
			 sizeof(resp));
	*bad_wr = resp.bad_wr;
	return ret;
}

/* Two receive requests on a QP (srq == NULL) or an SRQ. */
static int raw_post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint32_t *bad_wr)
{
	struct {
		union {
			struct ib_uverbs_post_recv qp;
			struct ib_uverbs_post_srq_recv srq;
		} cmd;
		struct ib_uverbs_recv_wr wr[2];
		struct ib_uverbs_sge sge[2];
	} __attribute__((packed)) req;
	struct ib_uverbs_post_recv_resp resp = { .bad_wr = 0xdead };
	int i, ret;

	memset(&req, 0, sizeof(req));
	/* The two commands have the same layout. */
	req.cmd.qp.response = (uintptr_t)&resp;
	req.cmd.qp.qp_handle = srq ? srq->handle : qp->handle;
	req.cmd.qp.wr_count = 2;
	req.cmd.qp.sge_count = 2;
	req.cmd.qp.wqe_size = sizeof(struct ib_uverbs_recv_wr);
	for (i = 0; i < 2; i++) {
		req.wr[i].wr_id = 200 + i;
		req.wr[i].num_sge = 1;
		req.sge[i].addr = (uintptr_t)buf;
		req.sge[i].length = 64;
		req.sge[i].lkey = mr->lkey;
	}
	ret = uverbs_cmd(ctx->cmd_fd,
			 srq ? IB_USER_VERBS_CMD_POST_SRQ_RECV : IB_USER_VERBS_CMD_POST_RECV,
			 &req, sizeof(req), sizeof(resp));
	*bad_wr = resp.bad_wr;
	return ret;
}

static void expect_flushed(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	CHECK(n == 1 && wc.wr_id == wr_id && wc.status == IBV_WC_WR_FLUSH_ERR &&
		      wc.opcode == op,
	      "expected wr_id %llu flushed, got %d completions (wr_id %llu status %d)",
	      (unsigned long long)wr_id, n, (unsigned long long)wc.wr_id,
	      wc.status);
}

static void expect_empty(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	CHECK(n == 0, "%s: a completion (wr_id %llu): the refused chain was queued",
	      what, (unsigned long long)wc.wr_id);
}

/* bad_wr is read after the call that sets it. */
static void refused(int ret, const uint32_t *bad, const char *what)
{
	uint32_t bad_wr = *bad;

	CHECK(ret == -EINVAL, "%s returned %d (%s), expected -EINVAL", what, ret,
	      strerror(-ret));
	CHECK(bad_wr == 1, "%s: bad_wr %u, expected 1 (the first request)", what,
	      bad_wr);
	printf("%s: EINVAL, bad_wr 1\n", what);
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	CHECK(qp, "create_qp: %s", strerror(errno));
	return qp;
}

static void rc_chains(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp *qp;
	uint32_t bad;

	CHECK(cq, "create_cq: %s", strerror(errno));
	qp = make_qp(cq, IBV_QPT_RC);
	to_rts(qp);
	/* Sends wait in SQD, for the flush below. */
	hold_sends(qp);
	/* Work posted the right way, through the rings. */
	CHECK(post_send_id(qp, mr, 1, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0, "post_send");
	CHECK(post_recv_id(qp, mr, 2) == 0, "post_recv");

	refused(raw_post_send(qp, 0, &bad), &bad, "RC QP in SQD: raw POST_SEND of 3 (inline SEND, RDMA WRITE, SEND)");
	refused(raw_post_recv(qp, NULL, &bad), &bad, "RC QP in SQD: raw POST_RECV of 2");
	expect_empty(cq, "RC QP in SQD");

	modify_state(qp, IBV_QPS_ERR);
	expect_flushed(cq, 1, IBV_WC_SEND);
	expect_flushed(cq, 2, IBV_WC_RECV);
	expect_empty(cq, "RC QP moved to ERR (only the provider's two requests)");
	printf("RC QP to ERR: only the provider's two requests flushed\n");

	/* In ERR, a queued request would be flushed at once. */
	refused(raw_post_send(qp, 0, &bad), &bad, "RC QP in ERR: raw POST_SEND of 3");
	refused(raw_post_recv(qp, NULL, &bad), &bad, "RC QP in ERR: raw POST_RECV of 2");
	expect_empty(cq, "RC QP in ERR");
	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq), "destroy RC QP, CQ");
}

static void ud_chain(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = 1, .hop_limit = 64 },
	};
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint32_t bad;

	CHECK(cq, "create_cq: %s", strerror(errno));
	CHECK(ibv_query_gid(ctx, 1, 1, &aa.grh.dgid) == 0, "query_gid 1");
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah, "create_ah: %s", strerror(errno));
	qp = make_qp(cq, IBV_QPT_UD);
	ud_to_rts(qp, 0x11);
	refused(raw_post_send(qp, ah->handle, &bad), &bad, "UD QP in RTS: raw POST_SEND with an AH");
	modify_state(qp, IBV_QPS_ERR);
	expect_empty(cq, "UD QP moved to ERR");
	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_ah(ah) && !ibv_destroy_cq(cq),
	      "destroy UD QP, AH, CQ");
}

static void srq_chain(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr limit = { .srq_limit = 2 };
	struct ibv_async_event ev;
	struct ibv_srq *srq = ibv_create_srq(pd, &init);
	uint32_t bad;
	int type, i, ret;

	CHECK(srq, "create_srq: %s", strerror(errno));
	CHECK(post_srq_recv_id(srq, mr, 3) == 0, "post_srq_recv");
	/*
	 * SRQs need no doorbell, so the device may not offer the POST_SRQ_RECV
	 * command at all (ib_core answers EOPNOTSUPP); if it does, the chain
	 * is refused like the others.
	 */
	ret = raw_post_recv(NULL, srq, &bad);
	if (ret == -EOPNOTSUPP)
		printf("SRQ: raw POST_SRQ_RECV not offered (EOPNOTSUPP)\n");
	else
		refused(ret, &bad, "SRQ: raw POST_SRQ_RECV of 2");
	/*
	 * Armed at 2, the limit fires at once only if the SRQ holds fewer
	 * than 2 WQEs: the provider's one, not the refused two as well.
	 */
	CHECK(ibv_modify_srq(srq, &limit, IBV_SRQ_LIMIT) == 0, "arm the SRQ limit: %s",
	      strerror(errno));
	for (i = 0; i < 4; i++) {
		type = next_async_event(ctx, 2000, &ev);
		if (type == IBV_EVENT_SRQ_LIMIT_REACHED || type < 0)
			break;
	}
	CHECK(type == IBV_EVENT_SRQ_LIMIT_REACHED,
	      "no SRQ limit event with the limit at 2: the SRQ holds more than the provider's WQE");
	printf("SRQ: holds only the provider's WQE (limit 2 reached at once)\n");
	CHECK(!ibv_destroy_srq(srq), "destroy_srq");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: raw-wr-chain DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));

	srq_chain();
	rc_chains();
	ud_chain();

	CHECK(!ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd), "cleanup");
	ibv_close_device(ctx);
	printf("raw work request chains on user objects: refused, nothing queued\n");
	return 0;
}
