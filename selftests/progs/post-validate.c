// SPDX-License-Identifier: GPL-2.0
/*
 * Work requests the provider must refuse before anything reaches the
 * kernel's rings: send work in RESET, INIT and RTR, receive work in RESET,
 * and work requests beyond the QP's (SRQ's) capabilities or not allowed
 * for its type.  Each refusal is EINVAL with *bad_wr naming the refused
 * work request; that nothing was queued shows when the QP moves to ERR and
 * flushes exactly the work that was accepted (and for the SRQ, when its
 * limit event finds it empty).
 *
 *   post-validate DEVICE
 */
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[8192];
static struct ibv_sge sges[64];

static void init_sges(void)
{
	for (int i = 0; i < 64; i++)
		sges[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * i, 64, mr->lkey };
}

/* post_send of wr must fail with EINVAL and *bad_wr == expect_bad. */
static void send_refused(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr *expect_bad, const char *what)
{
	struct ibv_send_wr *bad = (void *)1;
	int ret = ibv_post_send(qp, wr, &bad);

	CHECK(ret == EINVAL, "%s: post_send returned %d (%s), expected EINVAL",
	      what, ret, strerror(ret));
	CHECK(bad == expect_bad, "%s: bad_wr %p, expected %p", what, (void *)bad,
	      (void *)expect_bad);
	printf("refused: %s\n", what);
}

static void recv_refused(struct ibv_qp *qp, struct ibv_srq *srq,
			 struct ibv_recv_wr *wr, const char *what)
{
	struct ibv_recv_wr *bad = (void *)1;
	int ret = srq ? ibv_post_srq_recv(srq, wr, &bad) :
			ibv_post_recv(qp, wr, &bad);

	CHECK(ret == EINVAL, "%s: post_recv returned %d (%s), expected EINVAL",
	      what, ret, strerror(ret));
	CHECK(bad == wr, "%s: bad_wr %p, expected %p", what, (void *)bad,
	      (void *)wr);
	printf("refused: %s\n", what);
}

/* The CQ holds exactly these flush completions, in order. */
static void expect_flushes(struct ibv_cq *cq, const uint64_t *ids, int n,
			   const char *what)
{
	struct ibv_wc wc[16], scratch[4];
	int got = 0, ret = 0;

	/* Flushes are written synchronously by modify_qp: all there now. */
	while (got < 16 && (ret = ibv_poll_cq(cq, 16 - got, wc + got)) > 0)
		got += ret;
	CHECK(ret >= 0, "%s: poll_cq failed", what);
	/* Never past wc[]: whatever else the CQ holds goes to scratch. */
	ret = ibv_poll_cq(cq, 4, scratch);
	CHECK(ret == 0, "%s: %d more completions after %d (or a failed poll), expected none",
	      what, ret, got);
	for (int i = 0; i < got; i++)
		fprintf(stderr, "  completion wr_id %llu status %d\n",
			(unsigned long long)wc[i].wr_id, wc[i].status);
	CHECK(got == n, "%s: %d completions, expected %d (refused work reached the kernel?)",
	      what, got, n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == ids[i] && wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "%s: completion %d is wr_id %llu, expected %llu", what, i,
		      (unsigned long long)wc[i].wr_id,
		      (unsigned long long)ids[i]);
	printf("%s: only the accepted work was flushed\n", what);
}

static void rc_states_and_caps(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		/*
		 * Entries hold more than the caps here (1 KiB entries: 60
		 * SGEs, 960 inline bytes): the provider must check the caps,
		 * not the room.
		 */
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 32, .max_recv_sge = 32,
			 .max_inline_data = 512 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_send_wr wr[2], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_cap cap;
	struct ibv_qp *qp;
	const uint64_t flushed[] = { 2000, 1001 };

	CHECK(cq, "create_cq");
	qp = ibv_create_qp(pd, &init);
	CHECK(qp, "create_qp: %s", strerror(errno));
	cap = init.cap;
	CHECK(cap.max_send_sge + 1 <= 64 && cap.max_recv_sge + 1 <= 64 &&
		      cap.max_inline_data + 1 <= sizeof(buf),
	      "caps %u %u %u larger than the test's buffers", cap.max_send_sge,
	      cap.max_recv_sge, cap.max_inline_data);

	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 1, .sg_list = sges, .num_sge = 1,
				      .opcode = IBV_WR_SEND, .next = &wr[1] };
	wr[1] = (struct ibv_send_wr){ .wr_id = 2, .sg_list = sges, .num_sge = 1,
				      .opcode = IBV_WR_SEND };
	rwr = (struct ibv_recv_wr){ .wr_id = 1000, .sg_list = sges, .num_sge = 1 };

	/* RESET takes no work at all: a chain is refused at its head. */
	send_refused(qp, wr, wr, "post_send of a chain in RESET");
	recv_refused(qp, NULL, &rwr, "post_recv in RESET");
	to_rts(qp);
	hold_sends(qp);

	/* SQD, as RTS: work requests beyond the caps or not for an RC QP. */
	wr[0].next = NULL;
	wr[0].num_sge = cap.max_send_sge + 1;
	send_refused(qp, wr, wr, "num_sge > max_send_sge");
	wr[0].num_sge = 1;
	sges[63] = (struct ibv_sge){ (uintptr_t)buf, cap.max_inline_data + 1, mr->lkey };
	wr[0].sg_list = &sges[63];
	wr[0].send_flags = IBV_SEND_INLINE;
	send_refused(qp, wr, wr, "inline data > max_inline_data");
	sges[63].length = 8;
	wr[0].opcode = IBV_WR_RDMA_READ;
	wr[0].wr.rdma.remote_addr = (uintptr_t)buf;
	wr[0].wr.rdma.rkey = mr->rkey;
	send_refused(qp, wr, wr, "inline RDMA read");
	wr[0].send_flags = 0;
	wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[0].wr.atomic.remote_addr = (uintptr_t)buf + 4;
	wr[0].wr.atomic.rkey = mr->rkey;
	send_refused(qp, wr, wr, "atomic on an unaligned remote address");
	wr[0].wr.atomic.remote_addr = (uintptr_t)buf;
	sges[63].length = 4;
	send_refused(qp, wr, wr, "atomic into 4 bytes");
	sges[63].length = 8;
	wr[0].opcode = IBV_WR_TSO;
	send_refused(qp, wr, wr, "TSO (unsupported opcode)");
	wr[0].opcode = IBV_WR_DRIVER1;
	send_refused(qp, wr, wr, "a driver opcode (unsupported)");

	/* A chain: the first is posted, the second refused. */
	wr[0] = (struct ibv_send_wr){ .wr_id = 2000, .sg_list = sges, .num_sge = 1,
				      .opcode = IBV_WR_SEND, .next = &wr[1] };
	wr[1] = (struct ibv_send_wr){ .wr_id = 2001, .sg_list = sges,
				      .num_sge = cap.max_send_sge + 1,
				      .opcode = IBV_WR_SEND };
	send_refused(qp, wr, &wr[1], "second of a chain beyond max_send_sge");

	rwr.wr_id = 1002;
	rwr.num_sge = cap.max_recv_sge + 1;
	recv_refused(qp, NULL, &rwr, "num_sge > max_recv_sge");
	rwr.wr_id = 1001;
	rwr.num_sge = cap.max_recv_sge;
	CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0,
	      "post_recv of max_recv_sge SGEs");

	/*
	 * The QP took only the chain's first send and the last receive (the
	 * send waits in SQD, where it does not execute).
	 */
	modify_state(qp, IBV_QPS_ERR);
	expect_flushes(cq, flushed, 2, "RC QP in RESET and RTS");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");

	/* A second QP through INIT and RTR without RESET in between. */
	{
		struct ibv_qp_init_attr init2 = init;
		const uint64_t ids[] = { 1000, 1001 };

		init2.cap = (struct ibv_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1 };
		qp = ibv_create_qp(pd, &init2);
		CHECK(qp, "create_qp: %s", strerror(errno));
		wr[0] = (struct ibv_send_wr){ .wr_id = 3, .sg_list = sges,
					      .num_sge = 1, .opcode = IBV_WR_SEND };
		send_refused(qp, wr, wr, "post_send in RESET");
		to_init(qp);
		send_refused(qp, wr, wr, "post_send in INIT");
		rwr = (struct ibv_recv_wr){ .wr_id = 1000, .sg_list = sges, .num_sge = 1 };
		CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0,
		      "post_recv in INIT");
		to_rtr(qp);
		send_refused(qp, wr, wr, "post_send in RTR");
		rwr.wr_id = 1001;
		CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0,
		      "post_recv in RTR");
		/* The sends refused in RESET, INIT and RTR must not flush now. */
		modify_state(qp, IBV_QPS_ERR);
		expect_flushes(cq, ids, 2, "QP refused in RESET/INIT/RTR");
		/* ERR takes work (flushed at once). */
		wr[0].wr_id = 4;
		CHECK(ibv_post_send(qp, wr, &bad) == 0, "post_send in ERR");
		expect_flushes(cq, &wr[0].wr_id, 1, "post_send in ERR");
		CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	}
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

static void ud_opcodes(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_ah_attr ah_attr = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .sgid_index = 1, .hop_limit = 64 },
	};
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint64_t id = 3000;

	CHECK(cq, "create_cq");
	qp = ibv_create_qp(pd, &init);
	CHECK(qp, "create UD QP: %s", strerror(errno));
	CHECK(ibv_query_gid(ctx, 1, 1, &ah_attr.grh.dgid) == 0, "query_gid");
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah, "create_ah: %s", strerror(errno));

	ud_to_rts(qp, 0x11111111);
	hold_sends(qp);

	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = sges, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	send_refused(qp, &wr, &wr, "RDMA write on a UD QP");
	wr.opcode = IBV_WR_RDMA_READ;
	send_refused(qp, &wr, &wr, "RDMA read on a UD QP");
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	send_refused(qp, &wr, &wr, "atomic on a UD QP");
	wr.opcode = IBV_WR_SEND_WITH_INV;
	send_refused(qp, &wr, &wr, "send with invalidate on a UD QP");
	wr.opcode = IBV_WR_SEND;
	wr.wr_id = id;
	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "UD send");
	modify_state(qp, IBV_QPS_ERR);
	expect_flushes(cq, &id, 1, "UD QP");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

static void srq_caps(void)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 8, .max_sge = 32 } };
	struct ibv_srq_attr a = { .srq_limit = 1 };
	struct ibv_async_event ev;
	struct ibv_recv_wr rwr;
	struct ibv_srq *srq;

	srq = ibv_create_srq(pd, &init);
	CHECK(srq, "create_srq: %s", strerror(errno));
	CHECK(init.attr.max_sge + 1 <= 64, "SRQ max_sge %u", init.attr.max_sge);
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sges,
				    .num_sge = init.attr.max_sge + 1 };
	recv_refused(NULL, srq, &rwr, "SRQ: num_sge > max_sge");
	/*
	 * Armed at 1, an SRQ holding no WQE reports the limit at once: the
	 * refused work request was not queued.
	 */
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "arm the SRQ limit");
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_SRQ_LIMIT_REACHED &&
		      ev.element.srq == srq,
	      "no SRQ limit event: the refused work request was queued");
	printf("SRQ: the refused work request was not queued\n");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: post-validate DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	init_sges();
	rc_states_and_caps();
	ud_opcodes();
	srq_caps();
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
