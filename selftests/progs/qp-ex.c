// SPDX-License-Identifier: GPL-2.0
/*
 * The extended verbs on the shared rings: ibv_create_qp_ex with ibv_qp_ex's
 * wr_* batches, ibv_create_cq_ex with start_poll/next_poll/end_poll, and
 * ibv_create_srq_ex.  Without a data path the only completions are flushes,
 * so batches are posted to QPs in the error state, which the doorbell
 * flushes at once: the flush completions show what each batch published.
 *
 *   qp-ex DEVICE
 */
#include <endian.h>
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096] __attribute__((aligned(64)));

static struct ibv_cq_ex *make_cq_ex(int cqe, uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe, .wc_flags = wc_flags };

	return ibv_create_cq_ex(ctx, &a);
}

static struct ibv_qp *make_qp_ex(struct ibv_cq_ex *cq, enum ibv_qp_type type,
				 uint64_t ops, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = ibv_cq_ex_to_cq(cq),
		.recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	if (qp && cap)
		*cap = a.cap;
	return qp;
}

enum {
	RC_OPS = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
		 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
};

/* The flush completions the CQ holds, through start/next/end_poll. */
struct seen {
	int n;
	uint64_t wr_id[64];
	int opcode[64];
};

/* 0 (completions in *s, maybe none) or the errno that start/next_poll failed with. */
static int drain(struct ibv_cq_ex *cq, struct ibv_qp *qp, struct seen *s)
{
	struct ibv_poll_cq_attr attr = {};
	int ret;

	s->n = 0;
	ret = ibv_start_poll(cq, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret)
		return ret;
	do {
		CHECK(s->n < 64, "more than 64 completions");
		CHECK(cq->status == IBV_WC_WR_FLUSH_ERR,
		      "wr_id %llu: status %d, not a flush",
		      (unsigned long long)cq->wr_id, cq->status);
		CHECK(ibv_wc_read_qp_num(cq) == qp->qp_num,
		      "wr_id %llu: qp_num %u, expected %u",
		      (unsigned long long)cq->wr_id, ibv_wc_read_qp_num(cq),
		      qp->qp_num);
		CHECK(ibv_wc_read_vendor_err(cq) == 0 &&
			      ibv_wc_read_byte_len(cq) == 0 &&
			      ibv_wc_read_wc_flags(cq) == 0,
		      "wr_id %llu: vendor_err %u, byte_len %u, wc_flags %u in a flush",
		      (unsigned long long)cq->wr_id, ibv_wc_read_vendor_err(cq),
		      ibv_wc_read_byte_len(cq), ibv_wc_read_wc_flags(cq));
		s->wr_id[s->n] = cq->wr_id;
		s->opcode[s->n] = ibv_wc_read_opcode(cq);
		s->n++;
		ret = ibv_next_poll(cq);
	} while (!ret);
	ibv_end_poll(cq);
	return ret == ENOENT ? 0 : ret;
}

static void expect_nothing(struct ibv_cq_ex *cq, struct ibv_qp *qp,
			   const char *what)
{
	struct seen s;

	CHECK(drain(cq, qp, &s) == 0 && s.n == 0,
	      "%s: %d completions (first wr_id %llu)", what, s.n,
	      (unsigned long long)s.wr_id[0]);
}

static void refusals(void)
{
	struct ibv_srq_init_attr_ex sa = {};
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp;

	CHECK(!make_cq_ex(4, IBV_WC_STANDARD_FLAGS |
				     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) &&
		      errno == EOPNOTSUPP,
	      "a CQ with completion timestamps: errno %d", errno);
	CHECK(!make_cq_ex(4, IBV_WC_EX_WITH_FLOW_TAG) && errno == EOPNOTSUPP,
	      "a CQ with flow tags: errno %d", errno);
	cq = make_cq_ex(4, IBV_WC_STANDARD_FLAGS);
	CHECK(cq, "create_cq_ex: %s", strerror(errno));
	CHECK(!make_qp_ex(cq, IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV, NULL) &&
		      errno == EOPNOTSUPP,
	      "UD with LOCAL_INV: errno %d", errno);
	CHECK(!make_qp_ex(cq, IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, NULL) &&
		      errno == EOPNOTSUPP,
	      "UD with BIND_MW: errno %d", errno);
	CHECK(!make_qp_ex(cq, IBV_QPT_RC, IBV_QP_EX_WITH_TSO, NULL) &&
		      errno == EOPNOTSUPP,
	      "RC with TSO: errno %d", errno);
	CHECK(!make_qp_ex(cq, IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, NULL) &&
		      errno == EOPNOTSUPP,
	      "UD with RDMA_WRITE: errno %d", errno);
	CHECK(!make_qp_ex(cq, IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, NULL) &&
		      errno == EOPNOTSUPP,
	      "UC with RDMA_READ: errno %d", errno);
	/* Only the builders asked for are there. */
	qp = make_qp_ex(cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, NULL);
	CHECK(qp && ibv_qp_to_qp_ex(qp), "RC with SEND: %s", strerror(errno));
	CHECK(ibv_qp_to_qp_ex(qp)->wr_send &&
		      !ibv_qp_to_qp_ex(qp)->wr_rdma_write &&
		      ibv_qp_to_qp_ex(qp)->wr_set_sge,
	      "builders of an RC QP with SEND only");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	/* Memory windows: the connected QPs bind and invalidate them. */
	qp = make_qp_ex(cq, IBV_QPT_RC, RC_OPS | IBV_QP_EX_WITH_LOCAL_INV |
					    IBV_QP_EX_WITH_BIND_MW, NULL);
	CHECK(qp && ibv_qp_to_qp_ex(qp)->wr_local_inv && ibv_qp_to_qp_ex(qp)->wr_bind_mw,
	      "RC with LOCAL_INV and BIND_MW: %s", strerror(errno));
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");

	sa.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	sa.pd = pd;
	sa.srq_type = IBV_SRQT_TM;
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	CHECK(!ibv_create_srq_ex(ctx, &sa) && errno == EOPNOTSUPP,
	      "a tag-matching SRQ: errno %d", errno);
	sa.srq_type = IBV_SRQT_XRC;
	CHECK(!ibv_create_srq_ex(ctx, &sa) && errno == EOPNOTSUPP,
	      "an XRC SRQ: errno %d", errno);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy_cq");
	printf("refused: timestamps and flow tags in wc_flags, TSO on RC, LOCAL_INV/BIND_MW/RDMA on UD, READ on UC, TM and XRC SRQs; RC gets wr_local_inv and wr_bind_mw\n");
}

/* One work request of every RC operation, in one batch. */
static void post_every_op(struct ibv_qp_ex *x, uint64_t first)
{
	struct ibv_sge two[2] = {
		{ (uintptr_t)buf, 16, mr->lkey },
		{ (uintptr_t)buf + 16, 16, mr->lkey },
	};
	struct ibv_data_buf inl[2] = { { buf, 5 }, { buf + 5, 7 } };
	uint64_t remote = (uintptr_t)buf + 64;

	x->wr_id = first;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 32);
	x->wr_id = first + 1;
	x->wr_flags = 0; /* unsignaled: flushed all the same */
	ibv_wr_send_imm(x, htobe32(0x1234));
	ibv_wr_set_inline_data(x, buf, 20);
	x->wr_id = first + 2;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, mr->rkey, remote);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = first + 3;
	ibv_wr_rdma_write_imm(x, mr->rkey, remote, htobe32(7));
	ibv_wr_set_inline_data_list(x, 2, inl);
	x->wr_id = first + 4;
	ibv_wr_rdma_read(x, mr->rkey, remote);
	ibv_wr_set_sge_list(x, 2, two);
	x->wr_id = first + 5;
	ibv_wr_atomic_cmp_swp(x, mr->rkey, remote, 1, 2);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
	x->wr_id = first + 6;
	ibv_wr_atomic_fetch_add(x, mr->rkey, remote, 3);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf + 8, 8);
	x->wr_id = first + 7;
	ibv_wr_send_inv(x, mr->rkey);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 1);
}

static const int every_op_wc[8] = {
	IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
	IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD, IBV_WC_SEND,
};

/* A batch whose work request n is refused by bad(); the batch must fail whole. */
static void refused_batch(struct ibv_qp_ex *x, struct ibv_cq_ex *cq,
			  struct ibv_qp *qp, const struct ibv_qp_cap *cap,
			  int which, const char *what)
{
	static struct ibv_sge many[64];
	int ret;

	for (int i = 0; i < 64; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)buf, 1, mr->lkey };
	ibv_wr_start(x);
	x->wr_id = 900;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
	x->wr_id = 901;
	switch (which) {
	case 0:
		ibv_wr_send(x);
		ibv_wr_set_sge_list(x, cap->max_send_sge + 1, many);
		break;
	case 1:
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, buf, cap->max_inline_data + 1);
		break;
	case 2:
		ibv_wr_atomic_fetch_add(x, mr->rkey, (uintptr_t)buf + 4, 1);
		ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
		break;
	case 3:
		ibv_wr_rdma_read(x, mr->rkey, (uintptr_t)buf);
		ibv_wr_set_inline_data(x, buf, 8);
		break;
	}
	x->wr_id = 902;
	ibv_wr_send(x);
	ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL, "%s: wr_complete returned %d, expected EINVAL", what,
	      ret);
	expect_nothing(cq, qp, what);
}

static void batches(void)
{
	struct ibv_qp_cap cap;
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *x;
	struct ibv_qp *qp;
	struct seen s;
	int ret;

	cq = make_cq_ex(64, IBV_WC_STANDARD_FLAGS);
	CHECK(cq, "create_cq_ex: %s", strerror(errno));
	qp = make_qp_ex(cq, IBV_QPT_RC, RC_OPS, &cap);
	CHECK(qp, "create_qp_ex RC: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(qp);
	CHECK(x, "ibv_qp_to_qp_ex");
	CHECK(cap.max_send_sge >= 2 && cap.max_send_sge < 64 &&
		      cap.max_inline_data >= 20 &&
		      cap.max_inline_data < sizeof(buf),
	      "caps %u SGEs, %u inline", cap.max_send_sge, cap.max_inline_data);

	/* RESET takes no send work: the batch fails, nothing is kept. */
	ibv_wr_start(x);
	x->wr_id = 1;
	ibv_wr_send(x);
	ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL, "a batch in RESET: %d", ret);
	expect_nothing(cq, qp, "a batch in RESET");

	to_init(qp);
	modify_state(qp, IBV_QPS_ERR);
	expect_nothing(cq, qp, "ERR with nothing posted");

	ibv_wr_start(x);
	post_every_op(x, 10);
	ret = ibv_wr_complete(x);
	CHECK(ret == 0, "wr_complete: %s", strerror(ret));
	ret = drain(cq, qp, &s);
	CHECK(ret == 0 && s.n == 8, "flush of the batch: %d completions (%d)",
	      s.n, ret);
	for (int i = 0; i < 8; i++)
		CHECK(s.wr_id[i] == 10 + (uint64_t)i && s.opcode[i] == every_op_wc[i],
		      "completion %d: wr_id %llu opcode %d; expected %d, %d", i,
		      (unsigned long long)s.wr_id[i], s.opcode[i], 10 + i,
		      every_op_wc[i]);
	printf("a batch of every RC operation (SGEs, SGE lists, inline data and lists) flushes in order with its opcodes\n");

	refused_batch(x, cq, qp, &cap, 0, "max_send_sge + 1 SGEs");
	refused_batch(x, cq, qp, &cap, 1, "max_inline_data + 1 bytes inline");
	refused_batch(x, cq, qp, &cap, 2, "an unaligned atomic");
	refused_batch(x, cq, qp, &cap, 3, "an inline RDMA read");
	printf("a refused work request fails its whole batch (EINVAL): SGEs, inline size, unaligned atomic, inline read\n");

	/* Aborted work leaves nothing behind, not even for the next batch. */
	ibv_wr_start(x);
	x->wr_id = 50;
	ibv_wr_send(x);
	x->wr_id = 51;
	ibv_wr_rdma_write(x, mr->rkey, (uintptr_t)buf);
	ibv_wr_abort(x);
	expect_nothing(cq, qp, "after wr_abort");
	ibv_wr_start(x);
	x->wr_id = 52;
	ibv_wr_send(x);
	CHECK(ibv_wr_complete(x) == 0, "the batch after an abort");
	CHECK(drain(cq, qp, &s) == 0 && s.n == 1 && s.wr_id[0] == 52,
	      "after an abort, a batch of one gave %d completions (first %llu)",
	      s.n, (unsigned long long)s.wr_id[0]);

	/* More than the ring holds: the whole batch fails. */
	ibv_wr_start(x);
	for (int i = 0; i < 4096; i++) {
		x->wr_id = 1000 + i;
		ibv_wr_send(x);
	}
	ret = ibv_wr_complete(x);
	CHECK(ret == ENOMEM, "a batch of 4096 on a queue of %u: %d",
	      cap.max_send_wr, ret);
	expect_nothing(cq, qp, "an overfull batch");

	/* ibv_post_send and batches share the ring, in order. */
	CHECK(post_send_id(qp, mr, 60, IBV_WR_SEND, 0) == 0, "post_send");
	ibv_wr_start(x);
	x->wr_id = 61;
	ibv_wr_rdma_read(x, mr->rkey, (uintptr_t)buf);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 4);
	CHECK(ibv_wr_complete(x) == 0, "wr_complete");
	CHECK(drain(cq, qp, &s) == 0 && s.n == 2 && s.wr_id[0] == 60 &&
		      s.wr_id[1] == 61 && s.opcode[1] == IBV_WC_RDMA_READ,
	      "post_send then a batch: %d completions", s.n);
	printf("wr_abort leaves nothing queued; an overfull batch fails whole (ENOMEM); post_send and batches share the ring\n");

	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy_cq");
}

/* UD work needs an address; ibv_wc read through the ex CQ by ibv_poll_cq too. */
static void ud_batches(void)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *x;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_wc wc[4];
	int ret;

	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	CHECK(ibv_query_gid(ctx, 1, 1, &aa.grh.dgid) == 0, "query_gid");
	ah = ibv_create_ah(pd, &aa);
	CHECK(ah, "create_ah: %s", strerror(errno));
	cq = make_cq_ex(16, IBV_WC_EX_WITH_QP_NUM);
	CHECK(cq, "create_cq_ex: %s", strerror(errno));
	qp = make_qp_ex(cq, IBV_QPT_UD,
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, NULL);
	CHECK(qp, "create_qp_ex UD: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(qp);
	ud_to_init(qp, 0x11111111);
	modify_state(qp, IBV_QPS_ERR);

	ibv_wr_start(x);
	x->wr_id = 70;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
	ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL, "UD send without an address: %d", ret);
	CHECK(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 4, wc) == 0,
	      "a refused UD batch completed");

	ibv_wr_start(x);
	x->wr_id = 71;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, 1, 0x11111111);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
	x->wr_id = 72;
	ibv_wr_send_imm(x, htobe32(9));
	ibv_wr_set_ud_addr(x, ah, 1, 0x11111111);
	ret = ibv_wr_complete(x);
	CHECK(ret == 0, "UD batch: %s", strerror(ret));
	ret = ibv_poll_cq(ibv_cq_ex_to_cq(cq), 4, wc);
	CHECK(ret == 2 && wc[0].wr_id == 71 && wc[1].wr_id == 72 &&
		      wc[0].status == IBV_WC_WR_FLUSH_ERR &&
		      wc[1].opcode == IBV_WC_SEND && wc[1].qp_num == qp->qp_num,
	      "UD batch flush through ibv_poll_cq: %d completions", ret);
	printf("UD: a send without wr_set_ud_addr fails its batch; with it, flushed, and ibv_poll_cq reads the ex CQ\n");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy_cq");
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
}

/* An overrun ex CQ returns what it holds, then fails instead of looking empty. */
static void overflow(void)
{
	struct ibv_poll_cq_attr attr = {};
	struct ibv_async_event ev;
	struct ibv_cq_ex *cq;
	struct ibv_qp_ex *x;
	struct ibv_qp *qp;
	int ret, n = 0;

	cq = make_cq_ex(4, IBV_WC_STANDARD_FLAGS);
	CHECK(cq && ibv_cq_ex_to_cq(cq)->cqe == 4, "create_cq_ex of 4");
	qp = make_qp_ex(cq, IBV_QPT_RC, IBV_QP_EX_WITH_SEND, NULL);
	CHECK(qp, "create_qp_ex: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(qp);
	to_init(qp);
	modify_state(qp, IBV_QPS_ERR);
	ibv_wr_start(x);
	for (int i = 0; i < 10; i++) {
		x->wr_id = 300 + i;
		ibv_wr_send(x);
	}
	CHECK(ibv_wr_complete(x) == 0, "a batch of 10");
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_CQ_ERR &&
		      ev.element.cq == ibv_cq_ex_to_cq(cq),
	      "no IBV_EVENT_CQ_ERR");
	ret = ibv_start_poll(cq, &attr);
	CHECK(ret == 0, "start_poll on the overrun CQ: %d", ret);
	do {
		CHECK(cq->wr_id == 300 + (uint64_t)n, "entry %d: wr_id %llu", n,
		      (unsigned long long)cq->wr_id);
		n++;
		ret = ibv_next_poll(cq);
	} while (!ret);
	ibv_end_poll(cq);
	CHECK(n == 4 && ret == EOVERFLOW,
	      "the overrun CQ gave %d completions, then %d (expected 4, EOVERFLOW)",
	      n, ret);
	for (int i = 0; i < 2; i++) {
		ret = ibv_start_poll(cq, &attr);
		CHECK(ret == EOVERFLOW, "start_poll on the emptied overrun CQ: %d",
		      ret);
	}
	CHECK(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, (struct ibv_wc[1]){}) < 0,
	      "ibv_poll_cq on the emptied overrun CQ did not fail");
	printf("an overrun CQ ex returns its 4 entries, then start_poll and next_poll fail with EOVERFLOW\n");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy_cq");
}

static void srq_ex(void)
{
	struct ibv_srq_init_attr_ex sa = {};
	struct ibv_async_event ev;
	struct ibv_srq_attr a;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;

	cq = make_cq_ex(4, IBV_WC_STANDARD_FLAGS);
	CHECK(cq, "create_cq_ex");
	/* The CQ bit makes libibverbs call create_srq_ex, not create_srq. */
	sa.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
		       IBV_SRQ_INIT_ATTR_CQ;
	sa.pd = pd;
	sa.srq_type = IBV_SRQT_BASIC;
	sa.cq = ibv_cq_ex_to_cq(cq);
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq_ex(ctx, &sa);
	CHECK(srq, "create_srq_ex: %s", strerror(errno));
	CHECK(sa.attr.max_wr >= 8 && sa.attr.max_sge >= 1,
	      "granted %u WRs, %u SGEs", sa.attr.max_wr, sa.attr.max_sge);
	for (int i = 0; i < 2; i++)
		CHECK(post_srq_recv_id(srq, mr, 400 + i) == 0, "post_srq_recv %d", i);
	CHECK(ibv_query_srq(srq, &a) == 0 && a.max_wr >= 8 && a.srq_limit == 0,
	      "query_srq: %u WRs, limit %u", a.max_wr, a.srq_limit);
	a = (struct ibv_srq_attr){ .srq_limit = 1 };
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "arm at 1");
	CHECK(ibv_query_srq(srq, &a) == 0 && a.srq_limit == 1,
	      "armed limit reads %u", a.srq_limit);
	CHECK(next_async_event(ctx, 200, &ev) == -1,
	      "a limit event with 2 WQEs above a limit of 1");
	a = (struct ibv_srq_attr){ .srq_limit = 4 };
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "arm at 4");
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_SRQ_LIMIT_REACHED &&
		      ev.element.srq == srq,
	      "no IBV_EVENT_SRQ_LIMIT_REACHED with 2 WQEs below a limit of 4");
	CHECK(ibv_query_srq(srq, &a) == 0 && a.srq_limit == 0,
	      "the limit did not disarm (%u)", a.srq_limit);
	printf("SRQ ex (basic): takes receives, reports its limit, fires IBV_EVENT_SRQ_LIMIT_REACHED below it\n");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy_cq");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: qp-ex DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	refusals();
	batches();
	ud_batches();
	overflow();
	srq_ex();
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
