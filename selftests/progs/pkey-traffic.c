// SPDX-License-Identifier: GPL-2.0
/*
 * Traffic between two devices whose QPs use chosen P_Key table entries:
 *
 *   pkey-traffic rc|ud DEV_A GIDX_A PKIDX_A DEV_B GIDX_B PKIDX_B COUNT [SECONDS]
 *
 * A's QP (P_Key index PKIDX_A, sending from its GID GIDX_A) sends COUNT
 * messages of 64 bytes to B's (PKIDX_B, GIDX_B): RC over a connected pair
 * (a few short retries: a message B never takes fails quickly with
 * RETRY_EXC_ERR), UD as datagrams through an AH.  B's receive completions
 * are then counted for up to 2 s.  With SECONDS (RC), A sends one message at
 * a time for that long, or until one fails, and prints "ready" once the
 * first arrived, so that a test can change a table under the live pair.
 * Prints "sent S received R status STATUS" (the status of A's last
 * completion); the caller judges the numbers.  Both devices are opened by
 * this one process (RDMA devices are visible in every namespace).
 */
#include <time.h>
#include <unistd.h>
#include "verbs-util.h"

#define MSG 64
#define QKEY 0x11111111
#define GRH 40

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
	int gidx;
	int pkidx;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void open_end(struct end *e, const char *dev, int gidx, int pkidx, enum ibv_qp_type type,
		     int count)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 16, .max_recv_wr = count, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = type,
	};
	size_t len = (size_t)count * (MSG + GRH);

	e->ctx = open_device(dev);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, count + 16, NULL, NULL, 0);
	CHECK(e->pd && e->cq, "%s: PD/CQ: %s", dev, strerror(errno));
	init.send_cq = init.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &init);
	CHECK(e->qp, "%s: create QP: %s", dev, strerror(errno));
	e->buf = calloc(1, len);
	e->mr = ibv_reg_mr(e->pd, e->buf, len, IBV_ACCESS_LOCAL_WRITE);
	CHECK(e->buf && e->mr, "%s: MR: %s", dev, strerror(errno));
	CHECK(!ibv_query_gid(e->ctx, 1, gidx, &e->gid), "%s: GID %d", dev, gidx);
	e->gidx = gidx;
	e->pkidx = pkidx;
}

/* RESET -> INIT with the end's P_Key index (RC: remote write; UD: the Q_Key). */
static void init_with_pkey(struct end *e)
{
	int ud = e->qp->qp_type == IBV_QPT_UD;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = e->pkidx,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
		.qkey = QKEY,
	};
	int ret = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));

	CHECK(!ret, "to INIT with P_Key index %d: %s", e->pkidx, strerror(ret));
}

static void rc_connect(struct end *e, const struct end *peer)
{
	init_with_pkey(e);
	rtr_to_gid(e->qp, peer->qp->qp_num, &peer->gid, e->gidx, 1);
	/* 4.096 us << 10: 4 ms, twice again: a refused message fails fast. */
	rts_with(e->qp, 7, 2, 10, 1);
}

static void ud_ready(struct end *e)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	int ret;

	init_with_pkey(e);
	modify_state(e->qp, IBV_QPS_RTR);
	ret = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	CHECK(!ret, "UD to RTS: %s", strerror(ret));
}

static void post_recvs(struct end *b, int count)
{
	int i, slot = b->qp->qp_type == IBV_QPT_UD ? MSG + GRH : MSG;

	for (i = 0; i < count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)b->buf + (size_t)i * slot,
			.length = slot,
			.lkey = b->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		CHECK(!ibv_post_recv(b->qp, &wr, &bad), "post_recv");
	}
}

/* Sends one message; returns its completion status (or -1: none within 5 s). */
static int send_one(struct end *a, struct ibv_ah *ah, uint32_t dest_qpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)a->buf, .length = MSG, .lkey = a->mr->lkey };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	double end = now() + 5;

	if (ah) {
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = dest_qpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	CHECK(!ibv_post_send(a->qp, &wr, &bad), "post_send");
	while (now() < end) {
		int n = ibv_poll_cq(a->cq, 1, &wc);

		CHECK(n >= 0, "poll_cq");
		if (n)
			return wc.status;
		usleep(100);
	}
	return -1;
}

/* B's successful receives within `secs` seconds, up to `count`. */
static int received(struct end *b, int count, double secs)
{
	double end = now() + secs;
	struct ibv_wc wc;
	int got = 0;

	while (got < count && now() < end) {
		int n = ibv_poll_cq(b->cq, 1, &wc);

		CHECK(n >= 0, "poll_cq");
		if (n && wc.status == IBV_WC_SUCCESS)
			got++;
		else if (!n)
			usleep(1000);
	}
	return got;
}

int main(int argc, char **argv)
{
	struct end a = {}, b = {};
	struct ibv_ah *ah = NULL;
	int rc, count, sent = 0, status = IBV_WC_SUCCESS, seconds = 0;

	CHECK(argc == 9 || argc == 10,
	      "usage: %s rc|ud DEV_A GIDX_A PKIDX_A DEV_B GIDX_B PKIDX_B COUNT [SECONDS]", argv[0]);
	rc = !strcmp(argv[1], "rc");
	CHECK(rc || !strcmp(argv[1], "ud"), "rc or ud, not %s", argv[1]);
	count = atoi(argv[8]);
	if (argc == 10)
		seconds = atoi(argv[9]);
	CHECK(count > 0 && count <= 4096 && (!seconds || rc), "bad COUNT or SECONDS");
	open_end(&a, argv[2], atoi(argv[3]), atoi(argv[4]), rc ? IBV_QPT_RC : IBV_QPT_UD, count);
	open_end(&b, argv[5], atoi(argv[6]), atoi(argv[7]), rc ? IBV_QPT_RC : IBV_QPT_UD, count);
	if (rc) {
		rc_connect(&a, &b);
		rc_connect(&b, &a);
	} else {
		struct ibv_ah_attr attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = b.gid, .sgid_index = a.gidx, .hop_limit = 64 },
		};

		ud_ready(&a);
		ud_ready(&b);
		ah = ibv_create_ah(a.pd, &attr);
		CHECK(ah, "create AH: %s", strerror(errno));
	}
	post_recvs(&b, count);
	if (seconds) {
		double end = now() + seconds;

		while (sent < count && now() < end) {
			status = send_one(&a, NULL, 0);
			if (status != IBV_WC_SUCCESS)
				break;
			if (!sent++) {
				printf("ready\n");
				fflush(stdout);
			}
			usleep(20000);
		}
	} else {
		while (sent < count) {
			status = send_one(&a, ah, b.qp->qp_num);
			if (status != IBV_WC_SUCCESS)
				break;
			sent++;
		}
	}
	printf("sent %d received %d status %s\n", sent, received(&b, sent ? sent : 1, 2),
	       status < 0 ? "none" : ibv_wc_status_str(status));
	return 0;
}
