// SPDX-License-Identifier: GPL-2.0
/*
 * A doorbell write() that fails before the driver runs (uverbs' kmalloc of
 * the command, a signal) leaves the published work in a healthy ring.  The
 * provider rings again on EINTR, EAGAIN and ENOMEM, a bounded number of
 * times (8); any other error, or one that outlasts the retries, is returned
 * with *bad_wr naming the first work request, and the work is not dropped:
 * the next doorbell runs it (Documentation/abi.rst, "A failed doorbell").
 *
 * The failures are injected by this program's own write(), which the
 * provider's calls bind to (the executable comes first in symbol lookup):
 * it fails the next db.fail doorbells (empty POST_SEND and POST_RECV
 * commands) with db.err and passes everything else to the system call.
 * The QP is in ERR, where every doorbell flushes the work at once, so the
 * completions show which work the kernel saw.
 *
 *   doorbell-fail DEVICE
 */
#include <sys/syscall.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "verbs-util.h"

#define DOORBELL_TRIES 8	/* as in provider/ferroce.c */

static struct {
	int fail;	/* doorbells still to fail */
	int err;	/* with this errno */
	int failed;	/* doorbells failed */
	int rung;	/* doorbells passed to the kernel */
} db;

static int is_doorbell(const void *buf, size_t count)
{
	const struct ib_uverbs_cmd_hdr *hdr = buf;
	const struct ib_uverbs_post_send *cmd = (const void *)(hdr + 1);

	return count == sizeof(*hdr) + sizeof(*cmd) &&
	       (hdr->command == IB_USER_VERBS_CMD_POST_SEND ||
		hdr->command == IB_USER_VERBS_CMD_POST_RECV) &&
	       cmd->wr_count == 0;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	if (is_doorbell(buf, count)) {
		if (db.fail) {
			db.fail--;
			db.failed++;
			errno = db.err;
			return -1;
		}
		db.rung++;
	}
	return syscall(SYS_write, fd, buf, count);
}

static void inject(int n, int err)
{
	db.fail = n;
	db.err = err;
	db.failed = 0;
	db.rung = 0;
}

static struct ibv_mr *mr;
static char buf[4096];

/* The CQ holds exactly these flush completions, in order. */
static void expect(struct ibv_cq *cq, const uint64_t *ids, int n,
		   const char *what)
{
	struct ibv_wc wc[8];
	int got = 0, ret = 0;

	while (got < 8 && (ret = ibv_poll_cq(cq, 8 - got, wc + got)) > 0)
		got += ret;
	CHECK(ret >= 0, "%s: poll_cq failed", what);
	CHECK(got == n, "%s: %d completions, expected %d", what, got, n);
	for (int i = 0; i < n; i++)
		CHECK(wc[i].wr_id == ids[i] && wc[i].status == IBV_WC_WR_FLUSH_ERR,
		      "%s: completion %d is wr_id %llu status %d, expected %llu",
		      what, i, (unsigned long long)wc[i].wr_id, wc[i].status,
		      (unsigned long long)ids[i]);
}

/* Two receive work requests, chained; returns ibv_post_recv's result. */
static int post_recv2(struct ibv_qp *qp, uint64_t id, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	static struct ibv_sge sge;

	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	wr[0] = (struct ibv_recv_wr){ .wr_id = id, .sg_list = &sge,
				      .num_sge = 1, .next = &wr[1] };
	wr[1] = (struct ibv_recv_wr){ .wr_id = id + 1, .sg_list = &sge,
				      .num_sge = 1 };
	*bad = (void *)1;
	return ibv_post_recv(qp, wr, bad);
}

static int post_send2(struct ibv_qp *qp, uint64_t id, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad)
{
	static struct ibv_sge sge;

	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	wr[0] = (struct ibv_send_wr){ .wr_id = id, .sg_list = &sge,
				      .num_sge = 1, .opcode = IBV_WR_SEND,
				      .next = &wr[1] };
	wr[1] = (struct ibv_send_wr){ .wr_id = id + 1, .sg_list = &sge,
				      .num_sge = 1, .opcode = IBV_WR_SEND };
	*bad = (void *)1;
	return ibv_post_send(qp, wr, bad);
}

int main(int argc, char **argv)
{
	static const struct { int err, n; } transient[] = {
		{ EINTR, 3 }, { EAGAIN, 3 }, { ENOMEM, DOORBELL_TRIES - 1 },
	};
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_send_wr swr[2], *sbad;
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int ret;

	CHECK(argc == 2, "usage: doorbell-fail DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	CHECK(qp, "create_qp: %s", strerror(errno));
	to_init(qp);
	modify_state(qp, IBV_QPS_ERR);

	/* Without this the test would prove nothing. */
	inject(0, 0);
	CHECK(post_recv_id(qp, mr, 1) == 0, "post_recv in ERR");
	CHECK(db.rung == 1, "the provider's doorbell did not go through this program's write() (rung %d)",
	      db.rung);
	expect(cq, (uint64_t[]){ 1 }, 1, "plain doorbell");

	/* Transient failures: rung again until the kernel takes it. */
	for (unsigned int i = 0; i < sizeof(transient) / sizeof(transient[0]); i++) {
		uint64_t id = 10 + 2 * i;

		inject(transient[i].n, transient[i].err);
		ret = post_recv2(qp, id, rwr, &rbad);
		CHECK(ret == 0 && !rbad,
		      "receive doorbell failing %d times with %s: post returned %d (%s)",
		      transient[i].n, strerror(transient[i].err), ret, strerror(ret));
		CHECK(db.failed == transient[i].n && db.rung == 1,
		      "%s: %d failed, %d rung", strerror(transient[i].err),
		      db.failed, db.rung);
		expect(cq, (uint64_t[]){ id, id + 1 }, 2, "transient receive doorbell failures");
		printf("receive doorbell failed %d times with %s: retried, posted\n",
		       transient[i].n, strerror(transient[i].err));
	}
	inject(2, EAGAIN);
	ret = post_send2(qp, 20, swr, &sbad);
	CHECK(ret == 0 && !sbad && db.failed == 2 && db.rung == 1,
	      "send doorbell failing twice with EAGAIN: post returned %d, %d failed, %d rung",
	      ret, db.failed, db.rung);
	expect(cq, (uint64_t[]){ 20, 21 }, 2, "transient send doorbell failures");
	printf("send doorbell failed twice with EAGAIN: retried, posted\n");

	/*
	 * ENOMEM that outlasts the retries: returned, with the first work
	 * request in *bad_wr; the kernel saw nothing, but the work stays
	 * published and the next doorbell runs it.
	 */
	inject(1000, ENOMEM);
	ret = post_recv2(qp, 30, rwr, &rbad);
	CHECK(ret == ENOMEM && rbad == &rwr[0],
	      "receive doorbell always failing with ENOMEM: post returned %d (%s), bad_wr %p, expected ENOMEM and %p",
	      ret, strerror(ret), (void *)rbad, (void *)&rwr[0]);
	CHECK(db.failed == DOORBELL_TRIES && db.rung == 0,
	      "ENOMEM: %d tries, %d rung; expected %d tries", db.failed,
	      db.rung, DOORBELL_TRIES);
	expect(cq, NULL, 0, "after the failed receive doorbell");
	inject(0, 0);
	CHECK(post_recv_id(qp, mr, 32) == 0, "post_recv after the failure");
	expect(cq, (uint64_t[]){ 30, 31, 32 }, 3,
	       "the next receive doorbell runs the work of the failed one");
	printf("receive doorbell failed %d times with ENOMEM: returned, first WR in bad_wr; the next doorbell ran its work\n",
	       DOORBELL_TRIES);

	/* Any other error: returned at once, not retried; same outcome. */
	inject(1000, EFAULT);
	ret = post_send2(qp, 40, swr, &sbad);
	CHECK(ret == EFAULT && sbad == &swr[0] && db.failed == 1 && db.rung == 0,
	      "send doorbell failing with EFAULT: post returned %d (%s), bad_wr %p (first %p), %d tries",
	      ret, strerror(ret), (void *)sbad, (void *)&swr[0], db.failed);
	expect(cq, NULL, 0, "after the failed send doorbell");
	inject(0, 0);
	CHECK(post_send_id(qp, mr, 42, IBV_WR_SEND, 0) == 0, "post_send after the failure");
	expect(cq, (uint64_t[]){ 40, 41, 42 }, 3,
	       "the next send doorbell runs the work of the failed one");
	printf("send doorbell failed with EFAULT: returned at once, first WR in bad_wr; the next doorbell ran its work\n");

	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
