// SPDX-License-Identifier: GPL-2.0
/*
 * Data integrity over an RDMA device: two RC QPs connected to each other
 * move random messages both ways with every opcode (SEND, SEND with
 * immediate, RDMA WRITE with and without immediate, RDMA READ, compare and
 * swap, fetch and add, ATOMIC_WRITE through ibv_qp_ex, inline SEND and
 * WRITE), random sizes (1 B to 1 MiB),
 * random offsets and random splits into SGEs on both sides.  Every byte of
 * every destination is checked, and so are the bytes around it (nothing
 * else may change).  Then the failures: writes and reads beyond an MR, with
 * a stale or foreign key, into an MR of another PD or without the access,
 * must fail with the status IBTA gives and change nothing; a send that
 * finds no receive (and so does the immediate of an RDMA WRITE) waits for
 * one (RNR) and completes once it is posted, or
 * fails once the responder fails; work posted in SQD runs back in RTS.
 * Then UD: GRH and payload, Q_Keys, short receives, AHs of another PD.
 *
 * usage: integrity [-b DEV_B] [-x GIDX] [-X GIDX_B] [-r DEV]... [-l]
 *                  [-s MAX_BYTES] [-t SECONDS] [-H a|b,ADDR]
 *                  DEV_A [ITERATIONS [SEED]]
 *
 * With one device, both QPs live on DEV_A (one context, one PD) and
 * connect through its GID index GIDX (default 1).  With -b, side a lives on
 * DEV_A and side b on DEV_B, each with its own context, PDs, MRs and CQs,
 * and each QP's address vector names the other device's GID (GIDX on
 * DEV_A, GIDX_B on DEV_B, default GIDX): the devices talk over the wire.
 * Which side requests is random per message; the failures run once with
 * each side as the requester and the datagrams go both ways, so both
 * devices' requesters and responders are checked.  (Nothing needs one
 * device: every case runs across two.  Only RC receive completions' src_qp,
 * which the verbs define for UD alone, is not checked across devices.)
 *
 * -r DEV: DEV is a reference peer (rdma_rxe, say), not under test: the
 * cases that check nothing but DEV's handling of an error on its own side
 * are skipped, with a message: where DEV requests, a bad lkey, an AH of
 * another PD and work posted in SQD (no packet leaves before the error);
 * where DEV responds, a SEND or a datagram longer than the receive
 * buffer.  rxe 6.12 gets each wrong: it completes the first two with
 * WR_FLUSH_ERR, never resumes SQD work in RTS, NAKs a long SEND as a
 * remote operational error and drops a long datagram without completing
 * the receive.  With -l, a reference peer requests no ATOMIC_WRITE: rxe
 * 6.12 sends one again to remote address 0.
 *
 * -l: the link loses, duplicates and reorders packets (netem).  RC must
 * still deliver every message exactly; a failure whose NAK was lost ends
 * in RETRY_EXC_ERR instead of the NAK's status (the responder has gone to
 * ERR and drops the retries), which is accepted and counted.  UD is
 * unreliable by definition, so the exact datagram checks give way to a
 * stream whose every arriving datagram must be intact (its size, payload,
 * immediate data and GRH) and at least half of which must arrive.
 * -s caps message sizes (default 1 MiB), -t the wait for one completion
 * (default 30 s: over the wire an RNR or transport retry is timed).
 *
 * -H a,ADDR / -H b,ADDR: the two sides on two hosts.  Both hosts run the
 * program with the same arguments (-b included), side a's host with
 * "-H a,ADDR" and side b's with "-H b,ADDR", ADDR being an address of a's
 * host: the processes meet over TCP port 18517 there, and each opens its
 * own side's device only (DEV_A on a's host, DEV_B on b's; the other
 * side's GID index is not used there).  They run in lock step from a's
 * seed: both make every random choice and fill every buffer, the other
 * side's in a copy mapped at the address the other host uses for it (a
 * remote address is the same in both processes); each posts, polls and
 * checks only what is its own side's, and the two meet over TCP before a
 * request is posted and after it completes (and check there that their
 * random streams agree).  A failure on one host ends the other's run too.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Every failure names the phase it happened in and the seed that replays it. */
static char phase[200] = "setup";
static unsigned long long seed;
#define CHECK_CONTEXT() fprintf(stderr, " [%s; seed %#llx]", phase, seed)
#include "verbs-util.h"

#define BUF_SIZE (4u << 20)	/* per side: a source half, a destination half */
#define HALF (BUF_SIZE / 2)
#define MAX_MSG (1u << 20)
#define GUARD 64
#define MAX_SGE 4
#define MAX_INLINE 256
#define FILL 0xa5

/* One opened device: a context and what its QPs use. */
struct dev {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_pd *other_pd;	/* for MRs and AHs pd's QPs must not use */
	int gid_index;
	union ibv_gid gid;
	bool reference;		/* -r: a peer to test against, not under test */
	bool remote;		/* -H: the other host's; its name and GID only */
};

struct side {
	struct dev *dev;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	/* -H, the other host's side: the number of its QP, the keys of its MR. */
	struct ibv_qp far_qp;
	struct ibv_mr far_mr;
};

static uint64_t rng;
static bool two_devices, lossy;
/* retry_cnt of the RC QPs connected next (see connect_qp). */
static int transport_retries = 6;
static uint32_t max_msg = MAX_MSG;
static int wc_timeout = 30;
static int naks_lost;

/*
 * -H: the connection to the other host's process, and where both map each
 * side's buffer and failures()' other buffer.
 */
static bool across;
static int peer_fd = -1;
#define PEER_PORT 18517
#define FAR_BASE 0x200000000000ull
static uint8_t *far_other;

/* Whether this process drives d (all but the other host's device). */
static bool local(const struct dev *d)
{
	return !d->remote;
}

/* -H: sends n bytes of mine to the other process, reads n of its into theirs. */
static void swap_bytes(const void *mine, void *theirs, size_t n)
{
	const uint8_t *m = mine;
	uint8_t *t = theirs;
	ssize_t r;

	for (size_t done = 0; done < n; done += r) {
		r = write(peer_fd, m + done, n - done);
		CHECK(r > 0, "the other host's side stopped (its output says why): %s",
		      r < 0 ? strerror(errno) : "");
	}
	for (size_t done = 0; done < n; done += r) {
		r = read(peer_fd, t + done, n - done);
		CHECK(r > 0, "the other host's side stopped (its output says why)%s%s",
		      r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
	}
}

/*
 * -H: both processes reach this point before either goes on, their random
 * streams in step (else they would no longer agree on what was sent).
 */
static void peer_sync(void)
{
	uint64_t theirs;

	if (!across)
		return;
	swap_bytes(&rng, &theirs, sizeof(theirs));
	CHECK(theirs == rng, "the two hosts' random streams differ");
}

/*
 * The value v as the process that drives d has it: this one's if d is
 * local, else the one the other process passes here (both call this at the
 * same point).
 */
static uint32_t owners(const struct dev *d, uint32_t v)
{
	uint32_t theirs;

	if (!across)
		return v;
	swap_bytes(&v, &theirs, sizeof(v));
	return local(d) ? v : theirs;
}

/* -H: the nth region of BUF_SIZE at FAR_BASE, at that address in both processes. */
static uint8_t *far_map(int nth)
{
	void *want = (void *)(uintptr_t)(FAR_BASE + (uint64_t)nth * BUF_SIZE);
	void *p = mmap(want, BUF_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	CHECK(p == want, "mmap at %p: %s", want, p == MAP_FAILED ? strerror(errno) : "elsewhere");
	return p;
}

/* -H: side a listens at addr, side b calls it, for up to two minutes. */
static void peer_connect(char role, const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PEER_PORT) };
	time_t end = time(NULL) + 120;
	int one = 1, fd;

	CHECK(inet_pton(AF_INET, addr, &sa.sin_addr) == 1, "-H: bad address %s", addr);
	/* (A write to a process gone would kill this one without a word.) */
	signal(SIGPIPE, SIG_IGN);
	if (role == 'a') {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(fd >= 0, "socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0,
		      "listen at %s:%d: %s", addr, PEER_PORT, strerror(errno));
		CHECK(readable(fd, 120 * 1000), "side b never called %s:%d", addr, PEER_PORT);
		peer_fd = accept(fd, NULL, NULL);
		CHECK(peer_fd >= 0, "accept: %s", strerror(errno));
		close(fd);
	} else {
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			CHECK(fd >= 0, "socket: %s", strerror(errno));
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
				break;
			CHECK(time(NULL) < end, "side a never answered at %s:%d: %s", addr,
			      PEER_PORT, strerror(errno));
			close(fd);
			usleep(200000);
		}
		peer_fd = fd;
	}
	setsockopt(peer_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void set_phase(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(phase, sizeof(phase), fmt, ap);
	va_end(ap);
}

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

static void dev_open(struct dev *d, const char *name, int gid_index)
{
	static const union ibv_gid zero;

	d->name = name;
	d->ctx = open_device(name);
	d->pd = ibv_alloc_pd(d->ctx);
	d->other_pd = ibv_alloc_pd(d->ctx);
	CHECK(d->pd && d->other_pd, "alloc_pd on %s: %s", name, strerror(errno));
	d->gid_index = gid_index;
	CHECK(ibv_query_gid(d->ctx, 1, gid_index, &d->gid) == 0,
	      "query_gid %d on %s: %s", gid_index, name, strerror(errno));
	CHECK(memcmp(&d->gid, &zero, sizeof(zero)),
	      "GID index %d of %s is empty", gid_index, name);
}

/* s's QP to RTS, connected to peer's QP at peer's GID. */
static void connect_qp(struct side *s, struct side *peer, int rnr_retry,
		       uint32_t sq_psn, uint32_t rq_psn)
{
	init_with(s->qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC);
	rtr_to_gid(s->qp, peer->qp->qp_num, &peer->dev->gid, s->dev->gid_index,
		   rq_psn);
	/*
	 * Transport retries: 6, not 7 (rxe 6.12 retries for ever at 7, a
	 * meaning IBTA gives 7 for RNR retries only), after 0.5 s each (a TCG
	 * guest may stall a responder for a while).  Over a lossy, reordering
	 * link 7: rxe 6.12 spends a retry on every PSN sequence NAK, and a
	 * long message meets more reorderings than that; ferroce counts
	 * timeouts only, and stops at 7.  The failures keep 6: some wait for
	 * the retries to run out.
	 */
	rts_with(s->qp, rnr_retry, transport_retries, 17, sq_psn);
}

static void side_open(struct side *s)
{
	/* ibv_qp_ex for ATOMIC_WRITE; every other opcode by ibv_post_send. */
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = MAX_INLINE },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = s->dev->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_ATOMIC_WRITE,
	};

	if (!local(s->dev)) {
		s->qp = &s->far_qp;	/* its number comes in pair_open */
		return;
	}
	s->scq = ibv_create_cq(s->dev->ctx, 64, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->dev->ctx, 64, NULL, NULL, 0);
	CHECK(s->scq && s->rcq, "create_cq on %s: %s", s->dev->name, strerror(errno));
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	s->qp = ibv_create_qp_ex(s->dev->ctx, &init);
	CHECK(s->qp, "create_qp on %s: %s", s->dev->name, strerror(errno));
	if (!s->buf) {
		s->buf = aligned_alloc(4096, BUF_SIZE);
		CHECK(s->buf, "out of memory");
		s->mr = ibv_reg_mr(s->dev->pd, s->buf, BUF_SIZE, ACCESS_ALL);
		CHECK(s->mr, "reg_mr on %s: %s", s->dev->name, strerror(errno));
	}
}

static void side_close_qp(struct side *s)
{
	if (!local(s->dev))
		return;
	CHECK(ibv_destroy_qp(s->qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(s->scq) == 0, "destroy_cq");
	CHECK(ibv_destroy_cq(s->rcq) == 0, "destroy_cq");
}

/*
 * Two connected QPs.  Each pair starts from random PSNs, as applications'
 * do, so that a late packet of an earlier pair is no valid packet of this one.
 */
static void pair_open(struct side *a, struct side *b, int rnr_retry)
{
	uint32_t psn_a = next_rand() & 0xffffff, psn_b = next_rand() & 0xffffff;

	side_open(a);
	side_open(b);
	/* (-H: each process learns the number of the other's QP.) */
	a->far_qp.qp_num = owners(a->dev, a->qp->qp_num);
	b->far_qp.qp_num = owners(b->dev, b->qp->qp_num);
	if (local(a->dev))
		connect_qp(a, b, rnr_retry, psn_a, psn_b);
	if (local(b->dev))
		connect_qp(b, a, rnr_retry, psn_b, psn_a);
	/* (-H: both QPs take packets before either sends.) */
	peer_sync();
}

static void pair_close(struct side *a, struct side *b)
{
	/* (-H: neither destroys a QP while the other still uses its peer.) */
	peer_sync();
	side_close_qp(a);
	side_close_qp(b);
}

/* Waits up to wc_timeout seconds for one completion on cq. */
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
		CHECK(t.tv_sec - t0.tv_sec < wc_timeout, "%s: no completion in %d s",
		      what, wc_timeout);
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
	uint32_t bits = rand_below(21), len;

	len = 1 + rand_below(bits ? 1u << bits : 2);
	return len > max_msg ? 1 + rand_below(max_msg) : len;
}

enum op { SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA, AWRITE, NR_OPS };
static const char *const op_name[] = {
	"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
	"RDMA_READ", "CMP_AND_SWP", "FETCH_AND_ADD", "ATOMIC_WRITE",
};

/*
 * Posts wr on s's QP.  An ATOMIC_WRITE, which struct ibv_send_wr cannot
 * carry, goes through ibv_qp_ex: its 8 bytes are at the first SGE's address.
 */
static int post(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_qp_ex *x;

	if (wr->opcode != IBV_WR_ATOMIC_WRITE)
		return ibv_post_send(s->qp, wr, &bad);
	x = ibv_qp_to_qp_ex(s->qp);
	ibv_wr_start(x);
	x->wr_id = wr->wr_id;
	x->wr_flags = wr->send_flags;
	ibv_wr_atomic_write(x, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
			    (const void *)(uintptr_t)wr->sg_list[0].addr);
	return ibv_wr_complete(x);
}

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
	char what[256];

	if (op == CAS || op == FAA || op == AWRITE)
		len = 8;
	if ((op == SEND || op == WRITE) && len <= MAX_INLINE && rand_below(2))
		inline_ = true;
	src_off = rand_below(HALF - len);
	dst_off = rand_below(HALF - len);
	if (op == CAS || op == FAA || op == AWRITE)
		dst_off &= ~7u;
	/* Offsets: of the source in its buffer, of the target in its half. */
	snprintf(what, sizeof(what),
		 "#%d %s%s of %u bytes, requester %s QP %u, responder %s QP %u, "
		 "source offset %u, destination offset %u", iter, op_name[op],
		 inline_ ? " inline" : "", len, req->dev->name, req->qp->qp_num,
		 resp->dev->name, resp->qp->qp_num, src_off, dst_off);

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
	case AWRITE:
		/* 8 bytes stored in one piece at an aligned target. */
		wr.opcode = IBV_WR_ATOMIC_WRITE;
		sge[0].addr = (uintptr_t)src_buf + src_off;
		sge[0].length = 8;
		sge[0].lkey = req->mr->lkey;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = (uintptr_t)resp->buf + HALF + dst_off;
		wr.wr.rdma.rkey = resp->mr->rkey;
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
		/* (-H: the responder's target holds `before`.) */
		peer_sync();
		if (local(req->dev)) {
			CHECK(ibv_post_send(req->qp, &wr, &bad) == 0, "%s: post_send", what);
			wc = wait_wc(req->scq, what);
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)iter,
			      "%s: status %s", what, ibv_wc_status_str(wc.status));
			memcpy(&result, req->buf + HALF + dst_off, 8);
			CHECK(result == before, "%s: returned %#llx, memory held %#llx",
			      what, (unsigned long long)result, (unsigned long long)before);
			check_guards(req->buf + HALF, dst_off, 8, what);
		}
		/* (-H: the atomic has completed.) */
		peer_sync();
		if (!local(resp->dev))
			return;
		if (op == FAA)
			CHECK(*target == before + arg, "%s: memory %#llx after adding",
			      what, (unsigned long long)*target);
		else
			CHECK(*target == (arg == before ? swap : before),
			      "%s: memory %#llx after compare-and-swap", what,
			      (unsigned long long)*target);
		return;
	}
	default:
		abort();
	}
	snprintf(what + strlen(what), sizeof(what) - strlen(what),
		 ", %d SGEs", wr.num_sge);
	if (recv && rwr.num_sge)
		snprintf(what + strlen(what), sizeof(what) - strlen(what),
			 ", received into %d SGEs", rwr.num_sge);
	if (recv && local(resp->dev))
		CHECK(ibv_post_recv(resp->qp, &rwr, &rbad) == 0, "%s: post_recv", what);
	/* (-H: the responder's buffers are filled, its receive posted.) */
	peer_sync();
	if (local(req->dev)) {
		CHECK(post(req, &wr) == 0, "%s: post_send", what);
		wc = wait_wc(req->scq, what);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)iter,
		      "%s: send status %s wr_id %llu", what, ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id);
		CHECK(op != AWRITE || (wc.opcode == IBV_WC_ATOMIC_WRITE && wc.byte_len == 8),
		      "%s: completion opcode %d byte_len %u", what, wc.opcode, wc.byte_len);
	}
	/* (-H: the request has completed.) */
	peer_sync();
	if (recv && local(resp->dev)) {
		wc = wait_wc(resp->rcq, what);
		CHECK(wc.status == IBV_WC_SUCCESS, "%s: receive status %s", what,
		      ibv_wc_status_str(wc.status));
		/* (src_qp: the verbs define it for UD only; check our own.) */
		CHECK(wc.wr_id == rwr.wr_id && wc.byte_len == len &&
			      (two_devices || wc.src_qp == req->qp->qp_num) &&
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
	/* The destination's host checks it (-H: the source there is a copy). */
	if (!local((op == READ ? req : resp)->dev))
		return;
	if (memcmp(dst_buf + dst_off, src_buf + src_off, len)) {
		for (uint32_t i = 0; i < len; i++)
			CHECK(dst_buf[dst_off + i] == src_buf[src_off + i],
			      "%s: byte %u of %u differs", what, i, len);
	}
	check_guards(dst_buf, dst_off, len, what);
}

/*
 * Whether a requester's completion status is the one a NAK of the responder
 * brings, or, on a lossy link, RETRY_EXC_ERR: that NAK was lost, and the
 * responder, gone to ERR, dropped the retries.
 */
static bool nak_status(enum ibv_wc_status got, enum ibv_wc_status want)
{
	if (got == want)
		return true;
	if (lossy && got == IBV_WC_RETRY_EXC_ERR &&
	    (want == IBV_WC_REM_ACCESS_ERR || want == IBV_WC_REM_INV_REQ_ERR)) {
		naks_lost++;
		return true;
	}
	return false;
}

/* A request that must fail with `status` on the requester and change nothing. */
static void refused(struct side *a, struct side *b, struct ibv_send_wr *wr,
		    enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;
	uint8_t *copy = malloc(BUF_SIZE);

	CHECK(copy, "out of memory");
	set_phase("failures, requester %s QP %u, responder %s QP %u, %s",
		  a->dev->name, a->qp->qp_num, b->dev->name, b->qp->qp_num, what);
	if (local(b->dev))
		memcpy(copy, b->buf, BUF_SIZE);
	/* (-H: the responder's memory is noted.) */
	peer_sync();
	if (local(a->dev)) {
		CHECK(post(a, wr) == 0, "%s: post_send", what);
		wc = wait_wc(a->scq, what);
		CHECK(nak_status(wc.status, status), "%s: status %s, expected %s", what,
		      ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
	}
	/* (-H: the request has failed.) */
	peer_sync();
	if (local(b->dev))
		CHECK(!memcmp(copy, b->buf, BUF_SIZE), "%s: the responder's memory changed",
		      what);
	free(copy);
}

/*
 * Whether to skip a case that checks nothing but how d, as `role`, handles
 * an error on its own side (-r: d is a reference peer, e.g. rdma_rxe, whose
 * own deviations are not the test's subject).
 */
static bool skip_ref(struct dev *d, const char *role, const char *what)
{
	if (!d->reference)
		return false;
	printf("  skipped: %s, %s %s (a reference peer): a check of its own "
	       "%s alone\n", what, d->name, role, role);
	return true;
}

/* The phase of a failure case outside refused(). */
static void case_phase(struct side *a, struct side *b, const char *what)
{
	set_phase("failures, requester %s QP %u, responder %s QP %u, %s",
		  a->dev->name, a->qp->qp_num, b->dev->name, b->qp->qp_num, what);
}

/*
 * An RNR wait: a posts `w`, which finds no receive (nothing completes for
 * 200 ms), then b posts `rwr`, and a's request completes successfully.
 * `what` names the request in failures; the caller checks b's completion.
 * (-H: each host does its own side's part.)
 */
static void rnr_then_receive(struct side *a, struct side *b, struct ibv_send_wr *w,
			     struct ibv_recv_wr *rwr, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;
	char before[128], after[128];

	snprintf(before, sizeof(before), "%s before its receive", what);
	snprintf(after, sizeof(after), "%s after its receive", what);
	if (local(a->dev)) {
		CHECK(ibv_post_send(a->qp, w, &bad) == 0, "post_send");
		no_wc(a->scq, 200, before);
	}
	peer_sync();
	if (local(b->dev))
		CHECK(ibv_post_recv(b->qp, rwr, &rbad) == 0, "post_recv");
	if (local(a->dev)) {
		wc = wait_wc(a->scq, after);
		CHECK(wc.status == IBV_WC_SUCCESS, "%s after RNR: %s", what,
		      ibv_wc_status_str(wc.status));
	}
}

/* a requests, b responds. */
static void failures(struct side *a, struct side *b)
{
	struct ibv_sge sge = { .addr = (uintptr_t)a->buf, .length = 64,
			       .lkey = a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED };
	uint8_t *other = across ? far_other : aligned_alloc(4096, 1 << 16);
	struct ibv_mr *ro = NULL, *foreign = NULL;
	uint32_t ro_rkey, foreign_rkey;
	struct {
		enum ibv_wr_opcode opcode;
		uint64_t addr;
		uint32_t rkey, len;
		enum ibv_wc_status status;
		const char *what;
	} cases[10];
	int n = 0;

	CHECK(other, "out of memory");
	fill_random(a->buf, 4096);
	/* Read-only for peers, and an MR of another PD. */
	if (local(b->dev)) {
		ro = ibv_reg_mr(b->dev->pd, other, 1 << 16, IBV_ACCESS_REMOTE_READ);
		foreign = ibv_reg_mr(b->dev->other_pd, other, 1 << 16,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		CHECK(ro && foreign, "reg_mr on %s: %s", b->dev->name, strerror(errno));
	}
	/* (-H: the requester learns their keys from b's host.) */
	ro_rkey = owners(b->dev, ro ? ro->rkey : 0);
	foreign_rkey = owners(b->dev, foreign ? foreign->rkey : 0);

	uint64_t end = (uintptr_t)b->buf + BUF_SIZE;
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, end - 16, b->mr->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE across the end of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)b->buf - 8, b->mr->rkey, 16,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE before the start of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)b->buf, b->mr->rkey ^ 0x80, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE with a stale key byte" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)other, ro_rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into a read-only MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_WRITE, (uintptr_t)other, foreign_rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA WRITE into an MR of another PD" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_RDMA_READ, end - 8, b->mr->rkey, 64,
		IBV_WC_REM_ACCESS_ERR, "RDMA READ across the end of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_ATOMIC_WRITE, end, b->mr->rkey, 8,
		IBV_WC_REM_ACCESS_ERR, "ATOMIC_WRITE past the end of the MR" };
	cases[n++] = (typeof(cases[0])){ IBV_WR_ATOMIC_WRITE, (uintptr_t)other, ro_rkey, 8,
		IBV_WC_REM_ACCESS_ERR, "ATOMIC_WRITE into a read-only MR" };

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
	sge.addr = (uintptr_t)a->buf;
	sge.length = 64;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + HALF;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (!skip_ref(a->dev, "requester", "RDMA WRITE from a bad lkey")) {
		pair_open(a, b, 7);
		sge.lkey = a->mr->lkey ^ 0x80;
		refused(a, b, &wr, IBV_WC_LOC_PROT_ERR, "RDMA WRITE from a bad lkey");
		pair_close(a, b);
	}

	/*
	 * A receive buffer too short: length error on the responder, an
	 * invalid request NAK to the requester.  (rxe 6.12 sends a remote
	 * operational error NAK and completes the receive with LOC_QP_OP_ERR.)
	 */
	sge.lkey = a->mr->lkey;
	wr.opcode = IBV_WR_SEND;
	if (!skip_ref(b->dev, "responder", "SEND into a short receive buffer")) {
		struct ibv_sge rs = { .addr = (uintptr_t)b->buf + HALF, .length = 32,
				      .lkey = b->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_wc wc;

		pair_open(a, b, 7);
		case_phase(a, b, "SEND into a short buffer");
		if (local(b->dev))
			CHECK(ibv_post_recv(b->qp, &rwr, &rbad) == 0, "post_recv");
		memset(b->buf + HALF, FILL, 64);
		peer_sync();
		if (local(a->dev)) {
			struct ibv_send_wr *bad;

			CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send");
			wc = wait_wc(a->scq, "SEND into a short buffer");
			CHECK(nak_status(wc.status, IBV_WC_REM_INV_REQ_ERR),
			      "SEND into a short buffer: requester status %s",
			      ibv_wc_status_str(wc.status));
		}
		if (local(b->dev)) {
			wc = wait_wc(b->rcq, "SEND into a short buffer");
			CHECK(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 9,
			      "SEND into a short buffer: responder status %s",
			      ibv_wc_status_str(wc.status));
		}
		pair_close(a, b);
	}

	/* RNR: a send waits for its receive, then completes. */
	pair_open(a, b, 7);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)b->buf + HALF, .length = 64,
				      .lkey = b->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &rs, .num_sge = 1 };
		struct ibv_wc wc;

		case_phase(a, b, "SEND waiting for its receive (RNR)");
		fill_random(a->buf, 64);
		rnr_then_receive(a, b, &wr, &rwr, "SEND");
		if (local(b->dev)) {
			wc = wait_wc(b->rcq, "SEND after its receive");
			CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 64 &&
				      !memcmp(b->buf + HALF, a->buf, 64),
			      "receive after RNR: %s, %u bytes", ibv_wc_status_str(wc.status),
			      wc.byte_len);
		}
	}
	pair_close(a, b);

	/*
	 * RNR on an RDMA WRITE with immediate in one packet: the immediate
	 * waits for its receive, then the write completes, placed once.  (The
	 * request that comes again after the RNR NAK starts the message again:
	 * the responder must not have started it the first time.)
	 */
	pair_open(a, b, 7);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)b->buf + HALF, .length = 64,
				      .lkey = b->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 12, .sg_list = &rs, .num_sge = 1 };
		struct ibv_send_wr w = wr;
		struct ibv_wc wc;

		case_phase(a, b, "RDMA WRITE with immediate waiting for its receive (RNR)");
		fill_random(a->buf, 64);
		memset(b->buf, 0, 64);
		w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		w.imm_data = htonl(0x5eed1234);
		w.wr.rdma.remote_addr = (uintptr_t)b->buf;
		w.wr.rdma.rkey = b->mr->rkey;
		/* (-H: b's target is zeroed.) */
		peer_sync();
		rnr_then_receive(a, b, &w, &rwr, "RDMA WRITE with immediate");
		if (local(b->dev)) {
			wc = wait_wc(b->rcq, "RDMA WRITE with immediate after its receive");
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 12 &&
				      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == 64 &&
				      (wc.wc_flags & IBV_WC_WITH_IMM) &&
				      wc.imm_data == htonl(0x5eed1234) &&
				      !memcmp(b->buf, a->buf, 64),
			      "immediate after RNR: %s, opcode %d, %u bytes, imm %#x",
			      ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len,
			      ntohl(wc.imm_data));
		}
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

		case_phase(a, b, "a burst of SENDs waiting for their receives");
		for (int i = 0; i < BURST; i++) {
			wr.wr_id = 100 + i;
			if (local(a->dev))
				CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send %d", i);
			rs[i] = (struct ibv_sge){ (uintptr_t)b->buf + HALF + 64 * i, 64,
						  b->mr->lkey };
			rwr[i] = (struct ibv_recv_wr){ .wr_id = 200 + i, .sg_list = &rs[i],
						       .num_sge = 1,
						       .next = i + 1 < BURST ? &rwr[i + 1] : NULL };
		}
		if (local(a->dev))
			no_wc(a->scq, 100, "sends before their receives");
		peer_sync();
		if (local(b->dev))
			CHECK(ibv_post_recv(b->qp, rwr, &rbad) == 0, "post_recv of %d", BURST);
		for (int i = 0; i < BURST; i++) {
			if (local(a->dev)) {
				wc = wait_wc(a->scq, "a burst of sends after its receives");
				CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100u + i,
				      "send %d of the burst: %s, wr_id %llu", i,
				      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
			}
			if (local(b->dev)) {
				wc = wait_wc(b->rcq, "a burst of receives");
				CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 200u + i,
				      "receive %d of the burst: %s, wr_id %llu", i,
				      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
			}
		}
		wr.wr_id = 7;
	}
	pair_close(a, b);

	/* A send waiting for a receive fails once the responder enters ERR. */
	pair_open(a, b, 7);
	{
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		case_phase(a, b, "SEND waiting on a responder that enters ERR");
		if (local(a->dev)) {
			CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send");
			no_wc(a->scq, 100, "SEND before its receive");
		}
		peer_sync();
		if (local(b->dev))
			modify_state(b->qp, IBV_QPS_ERR);
		if (local(a->dev)) {
			wc = wait_wc(a->scq, "SEND to a responder gone to ERR");
			CHECK(wc.status == IBV_WC_RETRY_EXC_ERR,
			      "SEND waiting on a responder that entered ERR: %s",
			      ibv_wc_status_str(wc.status));
		}
	}
	pair_close(a, b);

	/* Work posted in SQD waits, and runs when the QP is back in RTS. */
	if (!skip_ref(a->dev, "requester", "RDMA WRITE posted in SQD, run back in RTS")) {
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		pair_open(a, b, 7);
		case_phase(a, b, "RDMA WRITE posted in SQD");
		wr.opcode = IBV_WR_RDMA_WRITE;
		fill_random(a->buf, 64);
		if (local(a->dev)) {
			modify_state(a->qp, IBV_QPS_SQD);
			CHECK(ibv_post_send(a->qp, &wr, &bad) == 0, "post_send in SQD");
			no_wc(a->scq, 100, "RDMA WRITE posted in SQD");
			modify_state(a->qp, IBV_QPS_RTS);
			wc = wait_wc(a->scq, "RDMA WRITE after SQD -> RTS");
			CHECK(wc.status == IBV_WC_SUCCESS, "RDMA WRITE after SQD -> RTS: %s",
			      ibv_wc_status_str(wc.status));
		}
		/* (-H: the write has completed.) */
		peer_sync();
		if (local(b->dev))
			CHECK(!memcmp(b->buf + HALF, a->buf, 64),
			      "RDMA WRITE after SQD -> RTS: the data differs");
		wr.opcode = IBV_WR_SEND;
		pair_close(a, b);
	}

	/* rnr_retry 0: no receive means RNR_RETRY_EXC_ERR at once. */
	pair_open(a, b, 0);
	refused(a, b, &wr, IBV_WC_RNR_RETRY_EXC_ERR, "SEND without a receive, rnr_retry 0");
	pair_close(a, b);

	if (local(b->dev)) {
		ibv_dereg_mr(ro);
		ibv_dereg_mr(foreign);
	}
	if (!across)
		free(other);
}

/* Waits up to ms milliseconds for a completion; 0 if none came. */
static int maybe_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		CHECK(n >= 0, "poll_cq failed");
		if (n)
			return 1;
		usleep(1000);
	}
	return 0;
}

/*
 * A datagram's GRH (the first 40 bytes of its receive buffer) holds the IP
 * header of the packet: IPv4 in its last 20 bytes for IPv4-mapped GIDs,
 * else IPv6, from sgid to dgid.
 */
static bool grh_ok(const uint8_t *grh, const union ibv_gid *sgid,
		   const union ibv_gid *dgid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(dgid->raw, v4mapped, 12))
		return grh[20] == 0x45 && !memcmp(grh + 32, &sgid->raw[12], 4) &&
		       !memcmp(grh + 36, &dgid->raw[12], 4);
	return grh[0] >> 4 == 6 && !memcmp(grh + 8, sgid->raw, 16) &&
	       !memcmp(grh + 24, dgid->raw, 16);
}

/* A UD QP in RTS on dev, with both its queues completing on cq. */
static struct ibv_qp *ud_qp(struct dev *d, struct ibv_cq *cq, int depth,
			    uint32_t qkey)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &init);

	CHECK(qp, "create UD QP on %s: %s", d->name, strerror(errno));
	ud_to_rts(qp, qkey);
	return qp;
}

/* An AH of pd to dest's GID, from src's GID. */
static struct ibv_ah *ah_to(struct ibv_pd *pd, struct dev *src, struct dev *dest)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = src->gid_index,
					   .hop_limit = 64, .dgid = dest->gid } };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);

	CHECK(ah, "create_ah on %s: %s", src->name, strerror(errno));
	return ah;
}

/* A UD QP of d's; -H, on the other host: its number only, in far. */
static struct ibv_qp *ud_qp_of(struct dev *d, struct ibv_cq *cq, int depth,
			       uint32_t qkey, struct ibv_qp *far)
{
	struct ibv_qp *qp = local(d) ? ud_qp(d, cq, depth, qkey) : far;

	far->qp_num = owners(d, qp->qp_num);
	return qp;
}

/* A CQ of d's (-H: none for the other host's). */
static struct ibv_cq *cq_of(struct dev *d, int depth)
{
	struct ibv_cq *cq = local(d) ? ibv_create_cq(d->ctx, depth, NULL, NULL, 0) : NULL;

	CHECK(cq || !local(d), "create_cq on %s: %s", d->name, strerror(errno));
	return cq;
}

/* An MR of d's for local writes (-H, the other host's: no keys). */
static struct ibv_mr *local_mr_of(struct dev *d, void *buf, size_t len)
{
	static struct ibv_mr none;
	struct ibv_mr *mr = local(d) ? ibv_reg_mr(d->pd, buf, len, IBV_ACCESS_LOCAL_WRITE) : &none;

	CHECK(mr, "reg_mr on %s: %s", d->name, strerror(errno));
	return mr;
}

/* A UD side's QP, CQ and MR go, on the host that has the device (-H). */
static void ud_close(const struct dev *d, struct ibv_qp *qp, struct ibv_cq *cq,
		     struct ibv_mr *mr)
{
	if (!local(d))
		return;
	CHECK(!ibv_destroy_qp(qp), "destroy UD QP");
	CHECK(!ibv_destroy_cq(cq), "destroy CQ");
	CHECK(!ibv_dereg_mr(mr), "dereg_mr");
}

/*
 * UD from a QP on t to a QP on r: datagrams land after a 40-byte GRH
 * holding the sender's IP header; a wrong Q_Key drops them; a receive
 * buffer too short completes in error and the receiver goes on; an AH of
 * another PD is refused.  (-H: each host has its own buf, filled alike.)
 */
static void datagrams(struct dev *t, struct dev *r)
{
	struct ibv_cq *scq = cq_of(t, 16), *rcq = cq_of(r, 16);
	uint8_t *buf = aligned_alloc(4096, 1 << 16);
	struct ibv_qp *tx, *rx, far_tx = {}, far_rx = {};
	struct ibv_ah *ah = NULL, *ah_other = NULL;
	struct ibv_mr *smr, *rmr;
	struct ibv_sge rs[2];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_wc wc;
	const uint32_t qkey = 0x1234;

	CHECK(buf, "out of memory");
	/* One buffer: the sender's data at 0, the receive buffers above. */
	smr = local_mr_of(t, buf, 1 << 16);
	rmr = local_mr_of(r, buf, 1 << 16);
	tx = ud_qp_of(t, scq, 8, qkey, &far_tx);
	rx = ud_qp_of(r, rcq, 8, qkey, &far_rx);
	set_phase("UD datagrams from %s QP %u to %s QP %u", t->name, tx->qp_num,
		  r->name, rx->qp_num);
	if (local(t)) {
		ah = ah_to(t->pd, t, r);
		ah_other = ah_to(t->other_pd, t, r);
	}

	/* A datagram in two SGEs into a receive of two SGEs. */
	fill_random(buf, 1024);
	memset(buf + 4096, FILL, 8192);
	rs[0] = (struct ibv_sge){ (uintptr_t)buf + 4096, 100, rmr->lkey };
	rs[1] = (struct ibv_sge){ (uintptr_t)buf + 8192, 2048, rmr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 50, .sg_list = rs, .num_sge = 2 };
	if (local(r))
		CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
	struct ibv_sge ss[2] = { { (uintptr_t)buf, 300, smr->lkey },
				 { (uintptr_t)buf + 300, 212, smr->lkey } };
	wr = (struct ibv_send_wr){ .wr_id = 60, .sg_list = ss, .num_sge = 2,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htobe32(0xfeedf00d) };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rx->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	/* (-H: the receive is posted.) */
	peer_sync();
	if (local(t)) {
		CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
		wc = wait_wc(scq, "UD send");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 60, "UD send: %s",
		      ibv_wc_status_str(wc.status));
	}
	if (local(r)) {
		wc = wait_wc(rcq, "UD receive");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 50 &&
			      wc.byte_len == 40 + 512 && wc.src_qp == tx->qp_num &&
			      (wc.wc_flags & IBV_WC_GRH) && (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      be32toh(wc.imm_data) == 0xfeedf00d,
		      "UD receive: %s, %u bytes, src_qp %u, flags %#x",
		      ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp, wc.wc_flags);
		CHECK(grh_ok(buf + 4096, &t->gid, &r->gid),
		      "UD GRH: not the IP header from the sender's GID to the receiver's");
		CHECK(!memcmp(buf + 4096 + 40, buf, 60) && !memcmp(buf + 8192, buf + 60, 452),
		      "UD payload differs");
		CHECK(buf[8192 + 452] == FILL, "UD receive wrote past the datagram");
	}

	/* A wrong Q_Key: dropped, the receive stays posted. */
	rwr.wr_id = 51;
	if (local(r))
		CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
	wr.wr.ud.remote_qkey = qkey + 1;
	wr.wr_id = 61;
	peer_sync();
	if (local(t)) {
		CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
		wc = wait_wc(scq, "UD send with a wrong Q_Key");
		CHECK(wc.status == IBV_WC_SUCCESS, "UD send, wrong Q_Key: %s",
		      ibv_wc_status_str(wc.status));
	}
	/* (-H: the datagram is out.) */
	peer_sync();
	if (local(r))
		CHECK(!maybe_wc(rcq, &wc, 500), "a datagram with a wrong Q_Key was received");
	/* (-H: the receiver has waited for nothing before the next one comes.) */
	peer_sync();

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
	if (local(t))
		CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
	if (local(r)) {
		wc = wait_wc(rcq, "UD receive 51");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 51 && wc.byte_len == 56,
		      "UD receive 51: %s, wr_id %llu, %u bytes", ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id, wc.byte_len);
	}
	if (local(t))
		wc = wait_wc(scq, "UD send 62");
	/* (rxe 6.12 drops such a datagram without completing the receive.) */
	if (!skip_ref(r, "responder", "UD datagram into a short receive buffer")) {
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		if (local(r))
			CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv");
		ss[0].length = 512;
		wr.wr_id = 63;
		peer_sync();
		if (local(t))
			CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
		if (local(r)) {
			wc = wait_wc(rcq, "UD receive too short");
			CHECK(wc.status == IBV_WC_LOC_LEN_ERR && wc.wr_id == 52,
			      "UD receive too short: %s", ibv_wc_status_str(wc.status));
		}
		if (local(t))
			wc = wait_wc(scq, "UD send 63");
		if (local(r))
			CHECK(ibv_query_qp(rx, &qa, IBV_QP_STATE, &qi) == 0 &&
				      qa.qp_state == IBV_QPS_RTS,
			      "UD receiver in state %d after a short receive", qa.qp_state);
	}

	/* An AH of another PD: refused, and the send queue stops (SQE). */
	if (!skip_ref(t, "requester", "UD send through an AH of another PD") && local(t)) {
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		wr.wr.ud.ah = ah_other;
		wr.wr_id = 64;
		CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send");
		wc = wait_wc(scq, "UD send through an AH of another PD");
		CHECK(wc.status == IBV_WC_LOC_QP_OP_ERR && wc.wr_id == 64,
		      "UD send through an AH of another PD: %s",
		      ibv_wc_status_str(wc.status));
		CHECK(ibv_query_qp(tx, &qa, IBV_QP_STATE, &qi) == 0 &&
			      qa.qp_state == IBV_QPS_SQE,
		      "UD sender in state %d after a failed send", qa.qp_state);
	}
	printf("  UD %s -> %s: GRH, payload, immediate; wrong Q_Key dropped%s%s\n",
	       t->name, r->name, r->reference ? "" : "; short receive failed alone",
	       t->reference ? "" : "; foreign AH refused");
	/* (-H: both are done.) */
	peer_sync();
	if (local(t))
		CHECK(!ibv_destroy_ah(ah) && !ibv_destroy_ah(ah_other), "destroy AHs");
	ud_close(t, tx, scq, smr);
	ud_close(r, rx, rcq, rmr);
	free(buf);
}

/*
 * UD over a lossy link (-l): a stream of datagrams of random sizes, each
 * numbered by its immediate data.  They may be lost, duplicated or
 * reordered, but every one that arrives must be one that was sent, whole
 * and unchanged, and at least half must arrive.
 */
static void datagram_stream(struct dev *t, struct dev *r)
{
	enum { N = 64, SLOT = 2048, MTU = 1024 };
	struct ibv_cq *scq = cq_of(t, 2 * N), *rcq = cq_of(r, 2 * N);
	uint8_t *sbuf = aligned_alloc(4096, N * SLOT), *rbuf = aligned_alloc(4096, 2 * N * SLOT);
	uint32_t len[N];
	int seen[N] = {}, arrived = 0, dups = 0;
	struct ibv_mr *smr, *rmr;
	struct ibv_qp *tx, *rx, far_tx = {}, far_rx = {};
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc;
	const uint32_t qkey = 0x4321;

	CHECK(sbuf && rbuf, "out of memory");
	smr = local_mr_of(t, sbuf, N * SLOT);
	rmr = local_mr_of(r, rbuf, 2 * N * SLOT);
	tx = ud_qp_of(t, scq, 2 * N, qkey, &far_tx);
	rx = ud_qp_of(r, rcq, 2 * N, qkey, &far_rx);
	set_phase("UD stream over a lossy link from %s QP %u to %s QP %u",
		  t->name, tx->qp_num, r->name, rx->qp_num);
	if (local(t))
		ah = ah_to(t->pd, t, r);
	/* Room for every datagram twice: duplicates take receives too. */
	for (int i = 0; local(r) && i < 2 * N; i++) {
		struct ibv_sge sge = { (uintptr_t)rbuf + i * SLOT, SLOT, rmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *rbad;

		CHECK(ibv_post_recv(rx, &rwr, &rbad) == 0, "post_recv %d", i);
	}
	memset(rbuf, FILL, 2 * N * SLOT);
	/* (-H: the receives are posted.) */
	peer_sync();
	for (int i = 0; i < N; i++) {
		struct ibv_sge sge = { (uintptr_t)sbuf + i * SLOT, 0, smr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htobe32(i) }, *bad;

		len[i] = sge.length = 1 + rand_below(MTU);
		fill_random(sbuf + i * SLOT, len[i]);
		if (!local(t))
			continue;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rx->qp_num;
		wr.wr.ud.remote_qkey = qkey;
		CHECK(ibv_post_send(tx, &wr, &bad) == 0, "UD post_send %d", i);
		wc = wait_wc(scq, "UD stream send");
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
		      "UD stream send %d: %s, wr_id %llu", i,
		      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	}
	/* (-H: every datagram is sent.) */
	peer_sync();
	/* Whatever arrives comes within two seconds of the one before. */
	while (local(r) && maybe_wc(rcq, &wc, 2000)) {
		uint32_t seq = be32toh(wc.imm_data);
		const uint8_t *p = rbuf + wc.wr_id * SLOT;

		CHECK(wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_IMM) &&
			      (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == tx->qp_num &&
			      seq < N,
		      "UD stream receive %llu: %s, flags %#x, src_qp %u, immediate %u",
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		      wc.wc_flags, wc.src_qp, seq);
		CHECK(wc.byte_len == 40 + len[seq] && grh_ok(p, &t->gid, &r->gid) &&
			      !memcmp(p + 40, sbuf + seq * SLOT, len[seq]) &&
			      p[40 + len[seq]] == FILL,
		      "UD stream datagram %u (%u bytes) arrived as %u bytes, or not "
		      "as sent, in receive %llu", seq, len[seq], wc.byte_len,
		      (unsigned long long)wc.wr_id);
		if (seen[seq]++)
			dups++;
		else
			arrived++;
	}
	if (local(r)) {
		printf("  UD stream %s -> %s: %d of %d datagrams arrived intact, %d "
		       "duplicates\n", t->name, r->name, arrived, N, dups);
		CHECK(arrived >= N / 2, "only %d of %d datagrams arrived", arrived, N);
	}
	/* (-H: both are done.) */
	peer_sync();
	if (local(t))
		CHECK(!ibv_destroy_ah(ah), "destroy AH");
	ud_close(t, tx, scq, smr);
	ud_close(r, rx, rcq, rmr);
	free(sbuf);
	free(rbuf);
}

static void usage(void)
{
	fprintf(stderr, "usage: integrity [-b DEV_B] [-x GIDX] [-X GIDX_B] [-r DEV]... "
		"[-l] [-s MAX_BYTES] [-t SECONDS] [-H a|b,ADDR] DEV_A [ITERATIONS [SEED]]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *name_b = NULL, *refs[2] = {}, *hosts = NULL;
	int gidx = 1, gidx_b = -1, iters, c, nrefs = 0;
	char role = 0;
	struct dev da = {}, db = {};
	struct side a = {}, b = {};
	int counts[NR_OPS] = {};

	/* Progress and failures in the order they happen, also into a pipe. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "b:x:X:ls:t:r:H:")) != -1) {
		switch (c) {
		case 'b': name_b = optarg; break;
		case 'r':
			if (nrefs == 2)
				usage();
			refs[nrefs++] = optarg;
			break;
		case 'x': gidx = atoi(optarg); break;
		case 'X': gidx_b = atoi(optarg); break;
		case 'l': lossy = true; break;
		case 's': max_msg = strtoul(optarg, NULL, 0); break;
		case 't': wc_timeout = atoi(optarg); break;
		case 'H': hosts = optarg; break;
		default: usage();
		}
	}
	if (optind >= argc || argc - optind > 3 || max_msg < 8 || max_msg > MAX_MSG ||
	    wc_timeout < 1)
		usage();
	if (hosts) {
		role = hosts[0];
		if ((role != 'a' && role != 'b') || hosts[1] != ',' || !name_b)
			usage();
	}
	iters = argc - optind > 1 ? atoi(argv[optind + 1]) : 300;
	rng = argc - optind > 2 ? strtoull(argv[optind + 2], NULL, 0)
				: (uint64_t)time(NULL) * 2654435761u;
	rng |= 1;
	seed = rng;
	two_devices = name_b;
	if (hosts) {
		/* Side b takes a's seed; both must be run alike. */
		struct { uint64_t seed; uint32_t iters, max_msg, lossy; } mine = {
			seed, iters, max_msg, lossy }, theirs;

		across = true;
		peer_connect(role, hosts + 2);
		swap_bytes(&mine, &theirs, sizeof(mine));
		CHECK(theirs.iters == mine.iters && theirs.max_msg == mine.max_msg &&
			      theirs.lossy == mine.lossy,
		      "the other host runs with other arguments");
		if (role == 'b')
			rng = seed = theirs.seed;
	}
	if (two_devices)
		printf("integrity: %s <-> %s (GID %d <-> %d), %d iterations, seed %#llx%s%s\n",
		       argv[optind], name_b, gidx, gidx_b < 0 ? gidx : gidx_b, iters,
		       seed, lossy ? ", lossy link" : "",
		       !across ? "" : role == 'a' ? ", across hosts: side a here" :
						    ", across hosts: side b here");
	else
		printf("integrity: %s, %d iterations, seed %#llx\n", argv[optind],
		       iters, seed);
	if (role == 'b') {
		da.name = argv[optind];
		da.remote = true;
	} else {
		dev_open(&da, argv[optind], gidx);
	}
	/* Two devices: two contexts, even when both name one device. */
	if (role == 'a') {
		db.name = name_b;
		db.remote = true;
	} else if (two_devices) {
		dev_open(&db, name_b, gidx_b < 0 ? gidx : gidx_b);
	}
	a.dev = &da;
	b.dev = two_devices ? &db : &da;
	if (across) {
		/*
		 * Both sides' buffers at the same addresses in both processes,
		 * this side's registered; the other's GID and rkey come over TCP.
		 */
		struct side *here = role == 'a' ? &a : &b, *far = role == 'a' ? &b : &a;
		struct { union ibv_gid gid; uint32_t rkey; } mine, theirs;

		a.buf = far_map(0);
		b.buf = far_map(1);
		far_other = far_map(2);
		here->mr = ibv_reg_mr(here->dev->pd, here->buf, BUF_SIZE, ACCESS_ALL);
		CHECK(here->mr, "reg_mr on %s: %s", here->dev->name, strerror(errno));
		memset(&mine, 0, sizeof(mine));
		mine.gid = here->dev->gid;
		mine.rkey = here->mr->rkey;
		swap_bytes(&mine, &theirs, sizeof(mine));
		far->dev->gid = theirs.gid;
		far->far_mr.addr = far->buf;
		far->far_mr.length = BUF_SIZE;
		far->far_mr.rkey = theirs.rkey;
		far->mr = &far->far_mr;
	}
	for (int i = 0; i < nrefs; i++) {
		CHECK(!strcmp(refs[i], da.name) || (two_devices && !strcmp(refs[i], db.name)),
		      "-r %s: not a device of this run", refs[i]);
		da.reference |= !strcmp(refs[i], da.name);
		db.reference |= two_devices && !strcmp(refs[i], db.name);
	}

	set_phase("random traffic");
	transport_retries = lossy ? 7 : 6;
	pair_open(&a, &b, 7);
	for (int i = 0; i < iters; i++) {
		enum op op = rand_below(NR_OPS);
		bool ab = rand_below(2);

		/*
		 * rxe 6.12 sends an ATOMIC_WRITE again to remote address 0
		 * (req_retry sets the address of atomics, READs and WRITEs
		 * only), which the responder refuses: over a lossy link a
		 * reference peer does not request them.
		 */
		if (op == AWRITE && lossy && (ab ? &a : &b)->dev->reference)
			op = WRITE;

		one(ab ? &a : &b, ab ? &b : &a, op, i);
		counts[op]++;
	}
	pair_close(&a, &b);
	for (int i = 0; i < NR_OPS; i++)
		printf("  %-20s %d verified\n", op_name[i], counts[i]);
	transport_retries = 6;
	failures(&a, &b);
	if (two_devices)
		failures(&b, &a);
	printf("  failures refused (%s requesting%s)\n", a.dev->name,
	       two_devices ? ", then the other way" : "");
	if (naks_lost)
		printf("  %d NAKs lost on the link: RETRY_EXC_ERR in their stead\n",
		       naks_lost);
	if (lossy) {
		datagram_stream(a.dev, b.dev);
		if (two_devices)
			datagram_stream(b.dev, a.dev);
	} else {
		datagrams(a.dev, b.dev);
		if (two_devices)
			datagrams(b.dev, a.dev);
	}
	/* (-H: the other host's checks passed too.) */
	peer_sync();
	printf("integrity: every byte checked, every failure refused\n");
	return 0;
}
