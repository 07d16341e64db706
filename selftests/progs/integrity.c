// SPDX-License-Identifier: GPL-2.0
/*
 * Data integrity over an RDMA device: two RC QPs connected to each other
 * move random messages both ways with every opcode (SEND, SEND with
 * immediate, RDMA WRITE with and without immediate, RDMA READ, compare and
 * swap, fetch and add, inline SEND and WRITE), random sizes (1 B to 1 MiB),
 * random offsets and random splits into SGEs on both sides.  Every byte of
 * every destination is checked, and so are the bytes around it (nothing
 * else may change).  Then the failures: writes and reads beyond an MR, with
 * a stale or foreign key, into an MR of another PD or without the access,
 * must fail with the status IBTA gives and change nothing; a send that
 * finds no receive waits for one (RNR) and completes once it is posted, or
 * fails once the responder fails; work posted in SQD runs back in RTS.
 * Then UD: GRH and payload, Q_Keys, short receives, AHs of another PD.
 *
 * usage: integrity DEVICE [ITERATIONS [SEED]]   (GID index 1 on both ends)
 */
#include <stdbool.h>
#include <time.h>
#include <unistd.h>
#include "verbs-util.h"

#define BUF_SIZE (4u << 20)	/* per side: a source half, a destination half */
#define HALF (BUF_SIZE / 2)
#define MAX_MSG (1u << 20)
#define GUARD 64
#define MAX_SGE 4
#define MAX_INLINE 256
#define FILL 0xa5

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static struct ibv_context *ctx;
static uint64_t rng;

static uint64_t next_rand(void)
{
	/* xorshift64*: reproducible from the seed printed at the start. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint32_t rand_below(uint32_t n)
{
	return n ? next_rand() % n : 0;
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = next_rand() >> 56;
}

static const int ACCESS_ALL = IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC;

static void connect_qp(struct ibv_qp *qp, uint32_t dest, int rnr_retry)
{
	init_with(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC);
	rtr_to(qp, dest);
	rtr_to_rts(qp, rnr_retry);
}

static void side_open(struct side *s, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = MAX_INLINE },
	};

	s->pd = pd;
	s->scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	s->rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(s->scq && s->rcq, "create_cq: %s", strerror(errno));
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	s->qp = ibv_create_qp(pd, &init);
	CHECK(s->qp, "create_qp: %s", strerror(errno));
	if (!s->buf) {
		s->buf = aligned_alloc(4096, BUF_SIZE);
		CHECK(s->buf, "out of memory");
		s->mr = ibv_reg_mr(pd, s->buf, BUF_SIZE, ACCESS_ALL);
		CHECK(s->mr, "reg_mr: %s", strerror(errno));
	}
}

static void side_close_qp(struct side *s)
{
	CHECK(ibv_destroy_qp(s->qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(s->scq) == 0, "destroy_cq");
	CHECK(ibv_destroy_cq(s->rcq) == 0, "destroy_cq");
}

static void pair_open(struct side *a, struct side *b, int rnr_retry)
{
	side_open(a, a->pd);
	side_open(b, b->pd);
	connect_qp(a->qp, b->qp->qp_num, rnr_retry);
	connect_qp(b->qp, a->qp->qp_num, rnr_retry);
}

static void pair_close(struct side *a, struct side *b)
{
	side_close_qp(a);
	side_close_qp(b);
}

/* Waits up to 10 s for one completion on cq. */
static struct ibv_wc wait_wc(struct ibv_cq *cq, const char *what)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "%s: poll_cq failed", what);
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		CHECK(t.tv_sec - t0.tv_sec < 10, "%s: no completion in 10 s", what);
	}
}

/* No completion arrives on cq within ms milliseconds. */
static void no_wc(struct ibv_cq *cq, int ms, const char *what)
{
	struct ibv_wc wc;

	for (int i = 0; i < ms; i++) {
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0,
		      "%s: unexpected completion (status %s)", what,
		      ibv_wc_status_str(wc.status));
		usleep(1000);
	}
}

/* Splits [off, off+len) of mr into 1..max SGEs of random lengths. */
static int split(struct ibv_sge *sge, struct ibv_mr *mr, uint32_t off,
		 uint32_t len, int max)
{
	int n = 1 + rand_below(max), i;
	uint32_t left = len;

	if ((uint32_t)n > len)
		n = len ? len : 1;
	for (i = 0; i < n; i++) {
		uint32_t l = i == n - 1 ? left : 1 + rand_below(left - (n - 1 - i));

		sge[i].addr = (uintptr_t)mr->addr + off;
		sge[i].length = l;
		sge[i].lkey = mr->lkey;
		off += l;
		left -= l;
	}
	return n;
}

/* The bytes of buf outside [off, off+len) of its destination half are FILL. */
static void check_guards(const uint8_t *dst, uint32_t off, uint32_t len,
			 const char *what)
{
	for (uint32_t i = off >= GUARD ? off - GUARD : 0; i < off; i++)
		CHECK(dst[i] == FILL, "%s: byte %u before the target changed", what, i);
	for (uint32_t i = off + len; i < off + len + GUARD && i < HALF; i++)
		CHECK(dst[i] == FILL, "%s: byte %u after the target changed", what, i);
}

static uint32_t rand_size(void)
{
	/* Log-uniform: as many tiny messages as large ones. */
	uint32_t bits = rand_below(21);

	return 1 + rand_below(bits ? 1u << bits : 2);
}

enum op { SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA, NR_OPS };
static const char *const op_name[] = {
	"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
	"RDMA_READ", "CMP_AND_SWP", "FETCH_AND_ADD",
};

static void one(struct side *req, struct side *resp, enum op op, int iter)
{
	uint8_t *src_buf = req->buf, *dst_buf = resp->buf + HALF;
	uint32_t len = rand_size(), src_off, dst_off;
	struct ibv_sge sge[MAX_SGE], rsge[MAX_SGE];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_wc wc;
	bool inline_ = false, recv = false;
	uint32_t imm = next_rand();
	char what[96];

	if (op == CAS || op == FAA)
		len = 8;
	if ((op == SEND || op == WRITE) && len <= MAX_INLINE && rand_below(2))
		inline_ = true;
	src_off = rand_below(HALF - len);
	dst_off = rand_below(HALF - len);
	if (op == CAS || op == FAA)
		dst_off &= ~7u;
	snprintf(what, sizeof(what), "#%d %s%s %u bytes QP %u -> %u", iter,
		 op_name[op], inline_ ? " inline" : "", len, req->qp->qp_num,
		 resp->qp->qp_num);

	if (op == READ) {
		/* The responder's first half is read into the requester's second. */
		src_buf = resp->buf;
		dst_buf = req->buf + HALF;
	}
	fill_random(src_buf + src_off, len);
	memset(dst_buf, FILL, HALF);

	wr.wr_id = iter;
	wr.send_flags = IBV_SEND_SIGNALED | (inline_ ? IBV_SEND_INLINE : 0);
	wr.sg_list = sge;
	switch (op) {
	case SEND:
	case SEND_IMM:
		wr.opcode = op == SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32(imm);
		wr.num_sge = split(sge, req->mr, src_off, len, MAX_SGE);
		/* Receive buffers: the message, plus some room, split too. */
		rwr.wr_id = 1000000 + iter;
		rwr.sg_list = rsge;
		rwr.num_sge = split(rsge, resp->mr, HALF + dst_off,
				    len + rand_below(HALF - len - dst_off), MAX_SGE);
		recv = true;
		break;
	case WRITE:
	case WRITE_IMM:
		wr.opcode = op == WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(imm);
		wr.num_sge = split(sge, req->mr, src_off, len, MAX_SGE);
		wr.wr.rdma.remote_addr = (uintptr_t)resp->buf + HALF + dst_off;
		wr.wr.rdma.rkey = resp->mr->rkey;
		if (op == WRITE_IMM) {
			/* Consumes a receive WQE, whose buffers stay untouched. */
			rwr.wr_id = 1000000 + iter;
			recv = true;
		}
		break;
	case READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.num_sge = split(sge, req->mr, HALF + dst_off, len, MAX_SGE);
		wr.wr.rdma.remote_addr = (uintptr_t)resp->buf + src_off;
		wr.wr.rdma.rkey = resp->mr->rkey;
		break;
	case CAS:
	case FAA: {
		uint64_t *target = (uint64_t *)(resp->buf + (src_off & ~7u));
		uint64_t before = next_rand(), arg = next_rand(), swap = next_rand();
		uint64_t result;

		if (op == CAS && rand_below(2))
			arg = before;	/* half of the swaps succeed */
		*target = before;
		wr.opcode = op == CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge[0].addr = (uintptr_t)req->buf + HALF + dst_off;
		sge[0].length = 8;
		sge[0].lkey = req->mr->lkey;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uintptr_t)target;
		wr.wr.atomic.rkey = resp->mr->rkey;
		wr.wr.atomic.compare_add = arg;
		wr.wr.atomic.swap = swap;
		memset(req->buf + HALF, FILL, HALF);
		CHECK(ibv_post_send(req->qp, &wr, &bad) == 0, "%s: post_send", what);
		wc = wait_wc(req->scq, what);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)iter,
		      "%s: status %s", what, ibv_wc_status_str(wc.status));
		memcpy(&result, req->buf + HALF + dst_off, 8);
		CHECK(result == before, "%s: returned %#llx, memory held %#llx", what,
		      (unsigned long long)result, (unsigned long long)before);
		if (op == FAA)
			CHECK(*target == before + arg, "%s: memory %#llx after adding",
			      what, (unsigned long long)*target);
		else
			CHECK(*target == (arg == before ? swap : before),
			      "%s: memory %#llx after compare-and-swap", what,
			      (unsigned long long)*target);
		check_guards(req->buf + HALF, dst_off, 8, what);
		return;
	}
	default:
		abort();
	}
	if (recv)
		CHECK(ibv_post_recv(resp->qp, &rwr, &rbad) == 0, "%s: post_recv", what);
	CHECK(ibv_post_send(req->qp, &wr, &bad) == 0, "%s: post_send", what);
	wc = wait_wc(req->scq, what);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)iter,
	      "%s: send status %s wr_id %llu", what, ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id);
	if (recv) {
		wc = wait_wc(resp->rcq, what);
		CHECK(wc.status == IBV_WC_SUCCESS, "%s: receive status %s", what,
		      ibv_wc_status_str(wc.status));
		CHECK(wc.wr_id == rwr.wr_id && wc.byte_len == len &&
			      wc.src_qp == req->qp->qp_num &&
			      wc.qp_num == resp->qp->qp_num,
		      "%s: receive wr_id %llu byte_len %u src_qp %u qp_num %u", what,
		      (unsigned long long)wc.wr_id, wc.byte_len, wc.src_qp, wc.qp_num);
		CHECK(wc.opcode == (op == WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV),
		      "%s: receive opcode %d", what, wc.opcode);
		if (op == SEND_IMM || op == WRITE_IMM)
			CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == imm,
			      "%s: immediate %#x (flags %#x), sent %#x", what,
			      be32toh(wc.imm_data), wc.wc_flags, imm);
		else
			CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM), "%s: immediate flag", what);
	}
	if (memcmp(dst_buf + dst_off, src_buf + src_off, len)) {
		for (uint32_t i = 0; i < len; i++)
			CHECK(dst_buf[dst_off + i] == src_buf[src_off + i],
			      "%s: byte %u of %u differs", what, i, len);
	}
	check_guards(dst_buf, dst_off, len, what);
}

/* A request that must fail with `status` on the requester and change nothing. */
static void refused(struct side *a, struct side *b, struct ibv_send_wr *wr,
		    enum ibv_wc_status status, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint8_t *copy = malloc(BUF_SIZE);

	CHECK(copy, "out of memory");
	memcpy(copy, b->buf, BUF_SIZE);
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0, "%s: post_send", what);
	wc = wait_wc(a->scq, what);
	CHECK(wc.status == status, "%s: status %s, expected %s", what,
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
	CHECK(!memcmp(copy, b->buf, BUF_SIZE), "%s: the responder's memory changed",
	      what);
	free(copy);
}

static void failures(struct side *a, struct side *b, struct ibv_pd *other_pd)
{
	struct ibv_sge sge = { .addr = (uintptr_t)a->buf, .length = 64,
			       .lkey = a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED };
	uint8_t *other = aligned_alloc(4096, 1 << 16);
	struct ibv_mr *ro, *foreign;
	struct {
		enum ibv_wr_opcode opcode;
		uint64_t addr;
		uint32_t rkey, len;
		enum ibv_wc_status status;
		const char *what;
	} cases[8];
	int n = 0;

	CHECK(other, "out of memory");
	fill_random(a->buf, 4096);
	/* Read-only for peers, and an MR of another PD. */
	ro = ibv_reg_mr(b->pd, other, 1 << 16, IBV_ACCESS_REMOTE_READ);
	foreign = ibv_reg_mr(other_pd, other, 1 << 16,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(ro && foreign, "reg_mr: %s", strerror(errno));

	uint64_t end = (uintptr_t)b->buf + BUF_SIZE;
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, end - 16, b->mr->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE across the end of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)b->buf - 8, b->mr->rkey, 16,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE before the start of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)b->buf, b->mr->rkey ^ 0x80, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE with a stale key byte" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)other, ro->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into a read-only MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)other, foreign->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into an MR of another PD" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_READ, end - 8, b->mr->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA READ across the end of the MR" };

	for (int i = 0; i < n; i++) {
		pair_open(a, b, 7);
		wr.opcode = cases[i].opcode;
		wr.wr.rdma.remote_addr = cases[i].addr;
		wr.wr.rdma.rkey = cases[i].rkey;
		sge.length = cases[i].len;
		if (wr.opcode == IBV_WR_RDMA_READ)
			sge.addr = (uintptr_t)a->buf + HALF;
		else
			sge.addr = (uintptr_t)a->buf;
		refused(a, b, &wr, cases[i].status, cases[i].what);
		pair_close(a, b);
	}

	/* A bad local key: the requester's own protection error, nothing sent. */
	pair_open(a, b, 7);
	sge.addr = (uintptr_t)a->buf;
	sge.length = 64;
	sge.lkey = a->mr->lkey ^ 0x80;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + HALF;
	wr.wr.rdma.rkey = b->mr->rkey;
	refused(a, b, &wr, IBV_WC_LOC_PROT_ERR, "RDMA WRITE from a bad lkey");
	pair_close(a, b);

	/* A receive buffer too short: length error on the responder. */
	pair_open(a, b, 7);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)b->buf + HALF, .length = 32,
				      .lkey = b->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_wc wc;

		sge.lkey = a->mr->lkey;
		wr.opcode = IBV_WR_SEND;
		CHECK(ibv_post_recv(b->qp, &rwr, &rbad) == 0, "post_recv");
		memset(b->buf + HALF, FILL, 64);
		{
			struct ibv_send_wr *bad;

			CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send");
		}
		wc = wait_wc(a->scq, "SEND into a short buffer");
		CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR,
		      "SEND into a short buffer: requester status %s",
		      ibv_wc_status_str(wc.status));
		wc = wait_wc(b->rcq, "SEND into a short buffer");
		CHECK(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 9,
		      "SEND into a short buffer: responder status %s",
		      ibv_wc_status_str(wc.status));
	}
	pair_close(a, b);

	/* RNR: a send waits for its receive, then completes. */
	pair_open(a, b, 7);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)b->buf + HALF, .length = 64,
				      .lkey = b->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		fill_random(a->buf, 64);
		CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send");
		no_wc(a->scq, 200, "SEND before its receive");
		CHECK(ibv_post_recv(b->qp, &rwr, &rbad) == 0, "post_recv");
		wc = wait_wc(a->scq, "SEND after its receive");
		CHECK(wc.status == IBV_WC_SUCCESS, "SEND after RNR: %s",
		      ibv_wc_status_str(wc.status));
		wc = wait_wc(b->rcq, "SEND after its receive");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 64 &&
			      !memcmp(b->buf + HALF, a->buf, 64),
		      "receive after RNR: %s, %u bytes", ibv_wc_status_str(wc.status),
		      wc.byte_len);
	}
	pair_close(a, b);

	/*
	 * A burst of sends waits for receives, which come in one post: the
	 * receive doorbell runs them all, in order, and nothing is left behind.
	 */
	pair_open(a, b, 7);
	{
		enum { BURST = 24 };
		struct ibv_sge rs[BURST];
		struct ibv_recv_wr rwr[BURST], *rbad;
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		for (int i = 0; i < BURST; i++) {
			wr.wr_id = 100 + i;
			CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send %d", i);
			rs[i] = (struct ibv_sge){ (uintptr_t)b->buf + HALF + 64 * i, 64,
						  b->mr->lkey };
			rwr[i] = (struct ibv_recv_wr){ .wr_id = 200 + i, .sg_list = &rs[i],
						       .num_sge = 1,
						       .next = i + 1 < BURST ? &rwr[i + 1] : NULL };
		}
		no_wc(a->scq, 100, "sends before their receives");
		CHECK(ibv_post_recv(b->qp, rwr, &rbad) == 0, "post_recv of %d", BURST);
		for (int i = 0; i < BURST; i++) {
			wc = wait_wc(a->scq, "a burst of sends after its receives");
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100u + i,
			      "send %d of the burst: %s, wr_id %llu", i,
			      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
			wc = wait_wc(b->rcq, "a burst of receives");
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 200u + i,
			      "receive %d of the burst: %s, wr_id %llu", i,
			      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
		}
		wr.wr_id = 7;
	}
	pair_close(a, b);

	/* A send waiting for a receive fails once the responder enters ERR. */
	pair_open(a, b, 7);
	{
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send");
		no_wc(a->scq, 100, "SEND before its receive");
		modify_state(b->qp, IBV_QPS_ERR);
		wc = wait_wc(a->scq, "SEND to a responder gone to ERR");
		CHECK(wc.status == IBV_WC_RETRY_EXC_ERR,
		      "SEND waiting on a responder that entered ERR: %s",
		      ibv_wc_status_str(wc.status));
	}
	pair_close(a, b);

	/* Work posted in SQD waits, and runs when the QP is back in RTS. */
	pair_open(a, b, 7);
	{
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		modify_state(a->qp, IBV_QPS_SQD);
		wr.opcode = IBV_WR_RDMA_WRITE;
		fill_random(a->buf, 64);
		CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send in SQD");
		no_wc(a->scq, 100, "RDMA WRITE posted in SQD");
		modify_state(a->qp, IBV_QPS_RTS);
		wc = wait_wc(a->scq, "RDMA WRITE after SQD -> RTS");
		CHECK(wc.status == IBV_WC_SUCCESS &&
			      !memcmp(b->buf + HALF, a->buf, 64),
		      "RDMA WRITE after SQD -> RTS: %s", ibv_wc_status_str(wc.status));
		wr.opcode = IBV_WR_SEND;
	}
	pair_close(a, b);

	/* rnr_retry 0: no receive means RNR_RETRY_EXC_ERR at once. */
	pair_open(a, b, 0);
	refused(a, b, &wr, IBV_WC_RNR_RETRY_EXC_ERR, "SEND without a receive, rnr_retry 0");
	pair_close(a, b);

	ibv_dereg_mr(ro);
	ibv_dereg_mr(foreign);
	free(other);
}

/* Waits up to 500 ms for a completion; 0 if none came. */
static int maybe_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 500; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		CHECK(n >= 0, "poll_cq failed");
		if (n)
			return 1;
		usleep(1000);
	}
	return 0;
}

/*
 * UD: datagrams land after a 40-byte GRH holding the sender's IP header;
 * a wrong Q_Key drops them; a receive buffer too short completes in error
 * and the receiver goes on; an AH of another PD is refused.
 */
static void datagrams(struct ibv_pd *pd, struct ibv_pd *other_pd)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			 .max_recv_sge = 2 },
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = 1, .hop_limit = 64 } };
	struct ibv_cq *scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *buf = aligned_alloc(4096, 1 << 16);
	struct ibv_qp *tx, *rx;
	struct ibv_ah *ah, *ah_other;
	struct ibv_mr *mr;
	struct ibv_sge rs[2];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_wc wc;
	union ibv_gid gid;
	const uint32_t qkey = 0x1234;

	CHECK(scq && rcq && buf, "create_cq: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr");
	init.send_cq = scq;
	init.recv_cq = rcq;
	tx = ibv_create_qp(pd, &init);
	rx = ibv_create_qp(pd, &init);
	CHECK(tx && rx, "create UD QPs: %s", strerror(errno));
	ud_to_init(tx, qkey);
	ud_to_init(rx, qkey);
	modify_state(tx, IBV_QPS_RTR);
	modify_state(rx, IBV_QPS_RTR);
	ud_rtr_to_rts(tx);
	ud_rtr_to_rts(rx);
	CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "query_gid");
	aa.grh.dgid = gid;
	ah = ibv_create_ah(pd, &aa);
	ah_other = ibv_create_ah(other_pd, &aa);
	CHECK(ah && ah_other, "create_ah: %s", strerror(errno));

	/* A datagram in two SGEs into a receive of two SGEs. */
	fill_random(buf, 1024);
	memset(buf + 4096, FILL, 8192);
	rs[0] = (struct ibv_sge){ (uintptr_t)buf + 4096, 100, mr->lkey };
	rs[1] = (struct ibv_sge){ (uintptr_t)buf + 8192, 2048, mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 50, .sg_list = rs, .num_sge = 2 };
	CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
	struct ibv_sge ss[2] = { { (uintptr_t)buf, 300, mr->lkey },
				 { (uintptr_t)buf + 300, 212, mr->lkey } };
	wr = (struct ibv_send_wr){ .wr_id = 60, .sg_list = ss, .num_sge = 2,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htobe32(0xfeedf00d) };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rx->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	wc = wait_wc(scq, "UD send");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 60, "UD send: %s",
	      ibv_wc_status_str(wc.status));
	wc = wait_wc(rcq, "UD receive");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 50 &&
		      wc.byte_len == 40 + 512 && wc.src_qp == tx->qp_num &&
		      (wc.wc_flags & IBV_WC_GRH) && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      be32toh(wc.imm_data) == 0xfeedf00d,
	      "UD receive: %s, %u bytes, src_qp %u, flags %#x",
	      ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp, wc.wc_flags);
	/* GRH: the IPv4 header in its last 20 bytes, from and to GID 1. */
	CHECK(buf[4096 + 20] == 0x45 && !memcmp(buf + 4096 + 32, &gid.raw[12], 4) &&
		      !memcmp(buf + 4096 + 36, &gid.raw[12], 4),
	      "UD GRH: not the IPv4 header between the two GIDs");
	CHECK(!memcmp(buf + 4096 + 40, buf, 60) && !memcmp(buf + 8192, buf + 60, 452),
	      "UD payload differs");
	CHECK(buf[8192 + 452] == FILL, "UD receive wrote past the datagram");

	/* A wrong Q_Key: dropped, the receive stays posted. */
	rwr.wr_id = 51;
	CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
	wr.wr.ud.remote_qkey = qkey + 1;
	wr.wr_id = 61;
	CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	wc = wait_wc(scq, "UD send with a wrong Q_Key");
	CHECK(wc.status == IBV_WC_SUCCESS, "UD send, wrong Q_Key: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!maybe_wc(rcq, &wc), "a datagram with a wrong Q_Key was received");

	/* Too long for the receive: its completion fails, the QP goes on. */
	wr.wr.ud.remote_qkey = qkey;
	rs[0].length = 64;
	rwr.num_sge = 1;
	rwr.wr_id = 52;
	/* 51 is still posted and takes the next datagram; 52 gets the long one. */
	wr.opcode = IBV_WR_SEND;
	ss[0].length = 16;
	wr.num_sge = 1;
	wr.wr_id = 62;
	CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	wc = wait_wc(rcq, "UD receive 51");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 51 && wc.byte_len == 56,
	      "UD receive 51: %s, wr_id %llu, %u bytes", ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, wc.byte_len);
	wc = wait_wc(scq, "UD send 62");
	CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
	ss[0].length = 512;
	wr.wr_id = 63;
	CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	wc = wait_wc(rcq, "UD receive too short");
	CHECK(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 52,
	      "UD receive too short: %s", ibv_wc_status_str(wc.status));
	wc = wait_wc(scq, "UD send 63");
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_query_qp(rx, &qa, IBV_QP_STATE, &qi) == 0 &&
			      qa.qp_state == IBV_QPS_RTS,
		      "UD receiver in state %d after a short receive", qa.qp_state);
	}

	/* An AH of another PD: refused, and the send queue stops (SQE). */
	wr.wr.ud.ah = ah_other;
	wr.wr_id = 64;
	CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	wc = wait_wc(scq, "UD send through an AH of another PD");
	CHECK(wc.status == IBV_WC_LOC_QP_OP_ERR && wc.wr_id == 64,
	      "UD send through an AH of another PD: %s", ibv_wc_status_str(wc.status));
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		CHECK(ibv_query_qp(tx, &qa, IBV_QP_STATE, &qi) == 0 &&
			      qa.qp_state == IBV_QPS_SQE,
		      "UD sender in state %d after a failed send", qa.qp_state);
	}
	printf("  UD: GRH, payload, immediate; wrong Q_Key dropped; short receive "
	       "failed alone; foreign AH refused\n");
	CHECK(!ibv_destroy_qp(tx) && !ibv_destroy_qp(rx), "destroy UD QPs");
	CHECK(!ibv_destroy_ah(ah) && !ibv_destroy_ah(ah_other), "destroy AHs");
	CHECK(!ibv_destroy_cq(scq) && !ibv_destroy_cq(rcq), "destroy CQs");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
	free(buf);
}

int main(int argc, char **argv)
{
	int iters = argc > 2 ? atoi(argv[2]) : 300;
	struct side a = {}, b = {};
	struct ibv_pd *pd, *other_pd;
	int counts[NR_OPS] = {};

	CHECK(argc >= 2, "usage: integrity DEVICE [ITERATIONS [SEED]]");
	rng = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
	rng |= 1;
	printf("integrity: %s, %d iterations, seed %#llx\n", argv[1], iters,
	       (unsigned long long)rng);
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	other_pd = ibv_alloc_pd(ctx);
	CHECK(pd && other_pd, "alloc_pd");
	a.pd = b.pd = pd;
	pair_open(&a, &b, 7);
	for (int i = 0; i < iters; i++) {
		enum op op = rand_below(NR_OPS);
		bool ab = rand_below(2);

		one(ab ? &a : &b, ab ? &b : &a, op, i);
		counts[op]++;
	}
	pair_close(&a, &b);
	for (int i = 0; i < NR_OPS; i++)
		printf("  %-20s %d verified\n", op_name[i], counts[i]);
	failures(&a, &b, other_pd);
	datagrams(pd, other_pd);
	printf("integrity: every byte checked, every failure refused\n");
	return 0;
}
