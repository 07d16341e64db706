// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA FLUSH (IBTA 1.5 A19, ibv_wr_flush) from an RC QP on DEV_A to one on
 * DEV_B (or on DEV_A itself: direct placement), each case on a fresh pair of
 * QPs:
 *   - RDMA WRITEs of random bytes, unsignaled, then a FLUSH of their range
 *     (global visibility): it completes with IBV_WC_FLUSH, and then the
 *     written bytes are in the responder's memory;
 *   - a FLUSH of the whole region (its length, which means nothing, far
 *     past the MR's end) and of an empty range: they complete;
 *   - the refusals, with the status IBTA gives them: a FLUSH for persistence
 *     into memory that grants global visibility only, into memory that
 *     grants no flush at all, past the end of the MR, under a key that is no
 *     MR's, of an empty range too (remote access errors); to a QP that
 *     allows no flush (an invalid request);
 *   - what the requester refuses at posting: a FLUSH of no placement type,
 *     of an undefined level, of a range longer than 2^31 - 1 bytes (IBTA
 *     A19), and a FLUSH
 *     by ibv_post_send, which has no fields for one (EINVAL);
 *   - the device: it says it flushes for global visibility and not for
 *     persistence (it has no persistent memory), so memory registers with
 *     IBV_ACCESS_FLUSH_GLOBAL and not with IBV_ACCESS_FLUSH_PERSISTENT.
 * With -r, DEV_B is a reference responder (rdma_rxe): the checks of DEV_A's
 * device and posting are made, the responder's checks are rxe's.  With -R,
 * DEV_A is a reference requester: only the FLUSHes and their completions are
 * checked.
 *
 * Built against rdma-core v55's headers and run with v55's libibverbs:
 * Debian's libibverbs 44 has no ibv_wr_flush, and keeps a field of its own
 * where v55's struct ibv_qp_ex has it.  With -o the program runs under such
 * a library and checks only that a QP asking for FLUSH is refused
 * (EOPNOTSUPP) and one that does not ask is made.
 *
 * usage: rdma-flush [-r|-R|-o] DEV_A GIDX_A [DEV_B GIDX_B]
 */
#include <time.h>
#include <unistd.h>

static const char *what = "setup";
#define CHECK_CONTEXT() fprintf(stderr, " (%s)", what)
#include "verbs-util.h"

#define MR_BYTES (64 * 1024)
/* IB_UVERBS_DEVICE_FLUSH_GLOBAL and _PERSISTENT in device_cap_flags_ex. */
#define DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define DEVICE_FLUSH_PERSISTENT (1ULL << 39)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int gidx;
	union ibv_gid gid;
};

struct pair {
	struct ibv_qp *qa, *qb;
	struct ibv_qp_ex *xa;
	struct ibv_mr *ma, *mb;
	uint8_t *ba, *bb;
};

static void open_side(struct side *s, const char *name, int gidx)
{
	s->ctx = open_device(name);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	CHECK(s->pd && s->cq, "PD or CQ on %s", name);
	s->gidx = gidx;
	CHECK(!ibv_query_gid(s->ctx, 1, gidx, &s->gid), "GID %d of %s", gidx, name);
}

/* RESET -> RTS, connected to the QP dqpn of peer, allowing access. */
static void to_rts_with(struct ibv_qp *qp, const struct side *peer, uint32_t dqpn,
			unsigned int access, int sgidx)
{
	init_with(qp, access);
	rtr_to_gid(qp, dqpn, &peer->gid, sgidx, 1);
	rts_with(qp, 7, 7, 14, 1);
}

/* The attributes of a requester QP on a: an ibv_qp_ex doing WRITE and FLUSH. */
static struct ibv_qp_init_attr_ex requester_attr(struct side *a)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = a->cq,
		.recv_cq = a->cq,
		.cap = { .max_send_wr = 32, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = a->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_FLUSH,
	};

	return ia;
}

/* A requester QP on a and a responder QP on b allowing qp_access, with an MR
 * on each; b's grants mr_access. */
static void make_pair(struct pair *p, struct side *a, struct side *b,
		      unsigned int qp_access, unsigned int mr_access)
{
	struct ibv_qp_init_attr_ex ia = requester_attr(a);
	struct ibv_qp_init_attr ib = {
		.send_cq = b->cq,
		.recv_cq = b->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	p->qa = ibv_create_qp_ex(a->ctx, &ia);
	CHECK(p->qa, "ibv_create_qp_ex with IBV_QP_EX_WITH_FLUSH: %s", strerror(errno));
	p->xa = ibv_qp_to_qp_ex(p->qa);
	CHECK(p->xa && p->xa->wr_flush, "no wr_flush");
	p->qb = ibv_create_qp(b->pd, &ib);
	CHECK(p->qb, "responder QP: %s", strerror(errno));
	p->ba = aligned_alloc(4096, MR_BYTES);
	p->bb = aligned_alloc(4096, MR_BYTES);
	CHECK(p->ba && p->bb, "memory");
	memset(p->ba, 0, MR_BYTES);
	memset(p->bb, 0, MR_BYTES);
	p->ma = ibv_reg_mr(a->pd, p->ba, MR_BYTES, IBV_ACCESS_LOCAL_WRITE);
	p->mb = ibv_reg_mr(b->pd, p->bb, MR_BYTES, IBV_ACCESS_LOCAL_WRITE | mr_access);
	CHECK(p->ma && p->mb, "MRs: %s", strerror(errno));
	to_rts_with(p->qa, b, p->qb->qp_num, 0, a->gidx);
	to_rts_with(p->qb, a, p->qa->qp_num, qp_access, b->gidx);
}

static void free_pair(struct pair *p)
{
	ibv_destroy_qp(p->qa);
	ibv_destroy_qp(p->qb);
	ibv_dereg_mr(p->ma);
	ibv_dereg_mr(p->mb);
	free(p->ba);
	free(p->bb);
}

static struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 60;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && time(NULL) < end)
		usleep(100);
	CHECK(n == 1, "no completion within 60 s (poll: %d)", n);
	return wc;
}

/* Posts one FLUSH (after `writes` unsignaled WRITEs of random bytes into b's
 * MR) in one batch; returns what ibv_wr_complete said. */
static int post(struct pair *p, int writes, uint32_t rkey, uint64_t addr, size_t len,
		uint8_t type, uint8_t level)
{
	int i;

	ibv_wr_start(p->xa);
	for (i = 0; i < writes; i++) {
		uint32_t off = (uint32_t)(rand() % (MR_BYTES / 2));
		uint32_t n = 1 + (uint32_t)(rand() % 4096);

		for (uint32_t j = 0; j < n; j++)
			p->ba[off + j] = (uint8_t)rand();
		p->xa->wr_id = 1;
		p->xa->wr_flags = 0;
		ibv_wr_rdma_write(p->xa, p->mb->rkey, (uintptr_t)p->bb + off);
		ibv_wr_set_sge(p->xa, p->ma->lkey, (uintptr_t)p->ba + off, n);
	}
	p->xa->wr_id = 2;
	p->xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(p->xa, rkey, addr, len, type, level);
	return ibv_wr_complete(p->xa);
}

/* A FLUSH on a fresh pair; its completion status must be `want`. */
static void flush_case(const char *name, struct side *a, struct side *b,
		       unsigned int qp_access, unsigned int mr_access, int writes,
		       int key_off, uint64_t addr_off, size_t len, uint8_t type,
		       uint8_t level, enum ibv_wc_status want)
{
	struct pair p;
	struct ibv_wc wc;
	int rc;

	what = name;
	make_pair(&p, a, b, qp_access, mr_access);
	rc = post(&p, writes, p.mb->rkey + key_off, (uintptr_t)p.bb + addr_off, len, type, level);
	CHECK(rc == 0, "ibv_wr_complete: %d", rc);
	wc = poll_one(a->cq);
	CHECK(wc.wr_id == 2 && wc.status == want,
	      "completion wr_id %llu status %s, want %s", (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
	if (want == IBV_WC_SUCCESS) {
		CHECK(wc.opcode == IBV_WC_FLUSH, "opcode %d, not IBV_WC_FLUSH", wc.opcode);
		/* Every WRITE before it is in the responder's memory. */
		CHECK(!memcmp(p.ba, p.bb, MR_BYTES / 2 + 4096),
		      "written bytes missing after the FLUSH completed");
	}
	printf("ok %s: %s\n", name, ibv_wc_status_str(wc.status));
	free_pair(&p);
}

/* What the requester refuses at posting (nothing is sent). */
static void posting(struct side *a, struct side *b)
{
	const unsigned int grant = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL;
	struct ibv_send_wr wr = { .opcode = IBV_WR_FLUSH, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	struct pair p;

	what = "posting";
	make_pair(&p, a, b, grant, grant);
	CHECK(post(&p, 0, p.mb->rkey, (uintptr_t)p.bb, 64, 0, IBV_FLUSH_RANGE) == EINVAL,
	      "a FLUSH of no placement type was posted");
	CHECK(post(&p, 0, p.mb->rkey, (uintptr_t)p.bb, 64, IBV_FLUSH_GLOBAL, 2) == EINVAL,
	      "a FLUSH of an undefined level was posted");
	CHECK(post(&p, 0, p.mb->rkey, (uintptr_t)p.bb, 1ULL << 31, IBV_FLUSH_GLOBAL,
		   IBV_FLUSH_RANGE) == EINVAL,
	      "a FLUSH of a range past 2^31 - 1 bytes was posted");
	CHECK(ibv_post_send(p.qa, &wr, &bad) == EINVAL, "ibv_post_send took a FLUSH");
	/* The QP is still good: a valid FLUSH completes. */
	CHECK(post(&p, 1, p.mb->rkey, (uintptr_t)p.bb, MR_BYTES, IBV_FLUSH_GLOBAL,
		   IBV_FLUSH_RANGE) == 0,
	      "a valid FLUSH after the refusals");
	wc = poll_one(a->cq);
	CHECK(wc.status == IBV_WC_SUCCESS, "the valid FLUSH failed: %s",
	      ibv_wc_status_str(wc.status));
	printf("ok posting: refused what has no defined meaning, EINVAL\n");
	free_pair(&p);
}

/* The device's word on what it flushes, and the registrations that follow. */
static void device(struct side *a)
{
	struct ibv_device_attr_ex attr;
	struct ibv_mr *mr;
	void *buf = aligned_alloc(4096, 4096);

	what = "device";
	CHECK(!ibv_query_device_ex(a->ctx, NULL, &attr), "ibv_query_device_ex");
	CHECK(attr.device_cap_flags_ex & DEVICE_FLUSH_GLOBAL, "no FLUSH_GLOBAL capability");
	CHECK(!(attr.device_cap_flags_ex & DEVICE_FLUSH_PERSISTENT),
	      "claims FLUSH_PERSISTENT without persistent memory");
	mr = ibv_reg_mr(a->pd, buf, 4096, IBV_ACCESS_FLUSH_GLOBAL);
	CHECK(mr, "IBV_ACCESS_FLUSH_GLOBAL refused: %s", strerror(errno));
	ibv_dereg_mr(mr);
	mr = ibv_reg_mr(a->pd, buf, 4096, IBV_ACCESS_FLUSH_PERSISTENT);
	CHECK(!mr && errno == EOPNOTSUPP, "IBV_ACCESS_FLUSH_PERSISTENT: %s",
	      mr ? "registered" : strerror(errno));
	free(buf);
	printf("ok device: flushes for global visibility, not for persistence\n");
}

/* Under libibverbs 44: FLUSH refused, the rest of ibv_qp_ex still there. */
static void old_library(struct side *a)
{
	struct ibv_qp_init_attr_ex ia = requester_attr(a);
	struct ibv_qp *qp;

	what = "old library";
	qp = ibv_create_qp_ex(a->ctx, &ia);
	CHECK(!qp && errno == EOPNOTSUPP, "a QP with FLUSH: %s",
	      qp ? "made" : strerror(errno));
	ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	qp = ibv_create_qp_ex(a->ctx, &ia);
	CHECK(qp && ibv_qp_to_qp_ex(qp) && ibv_qp_to_qp_ex(qp)->wr_rdma_write,
	      "a QP without FLUSH: %s", qp ? "no ibv_qp_ex" : strerror(errno));
	ibv_destroy_qp(qp);
	printf("ok old library: FLUSH refused (EOPNOTSUPP), the rest of ibv_qp_ex there\n");
}

int main(int argc, char **argv)
{
	const unsigned int w = IBV_ACCESS_REMOTE_WRITE;
	const unsigned int g = IBV_ACCESS_FLUSH_GLOBAL, pers = IBV_ACCESS_FLUSH_PERSISTENT;
	struct side a, b, *pb = &a;
	char mode = 0;
	int i;

	if (argc > 1 && argv[1][0] == '-') {
		mode = argv[1][1];
		argv++;
		argc--;
	}
	if ((argc != 3 && argc != 5) || (mode && !strchr("rRo", mode))) {
		fprintf(stderr, "usage: rdma-flush [-r|-R|-o] DEV_A GIDX_A [DEV_B GIDX_B]\n");
		return 2;
	}
	srand(7);
	open_side(&a, argv[1], atoi(argv[2]));
	if (mode == 'o') {
		old_library(&a);
		return 0;
	}
	if (argc == 5) {
		open_side(&b, argv[3], atoi(argv[4]));
		pb = &b;
	}
	if (mode != 'R') {
		device(&a);
		posting(&a, pb);
	}
	for (i = 0; i < 4; i++)
		flush_case("writes then a FLUSH of their range", &a, pb, w | g | pers, w | g,
			   8, 0, 0, MR_BYTES, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE,
			   IBV_WC_SUCCESS);
	flush_case("writes then a FLUSH of the region", &a, pb, w | g, w | g, 8, 0,
		   12345, 12345678, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR, IBV_WC_SUCCESS);
	flush_case("a FLUSH of an empty range", &a, pb, w | g, w | g, 0, 0, 100, 0,
		   IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, IBV_WC_SUCCESS);
	flush_case("persistence from memory granting global visibility", &a, pb,
		   w | g | pers, w | g, 0, 0, 0, 64, IBV_FLUSH_PERSISTENT,
		   IBV_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	flush_case("memory granting no flush", &a, pb, w | g, w, 0, 0, 0, 64,
		   IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	flush_case("a range past the MR's end", &a, pb, w | g, w | g, 0, 0,
		   MR_BYTES - 8, 64, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE,
		   IBV_WC_REM_ACCESS_ERR);
	flush_case("a key that is no MR's", &a, pb, w | g, w | g, 0, 0x100, 0, 0,
		   IBV_FLUSH_GLOBAL, IBV_FLUSH_MR, IBV_WC_REM_ACCESS_ERR);
	flush_case("an empty range under a key that is no MR's", &a, pb, w | g, w | g, 0,
		   0x100, 0, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR);
	flush_case("a QP allowing no flush", &a, pb, w, w | g, 0, 0, 0, 64,
		   IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, IBV_WC_REM_INV_REQ_ERR);
	printf("rdma-flush: %s -> %s%s: all passed\n", argv[1], argc == 5 ? argv[3] : argv[1],
	       mode == 'r' ? " (reference responder)" :
	       mode == 'R' ? " (reference requester)" : "");
	return 0;
}
