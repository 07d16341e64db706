// SPDX-License-Identifier: GPL-2.0
/*
 * Every error path of the create verbs unwinds: each verb runs again and
 * again with the n-th kernel allocation of the calling thread made to fail
 * (/proc/thread-self/fail-nth with failslab, n = 1, 2, ...), until a run
 * reaches no n-th allocation.  A verb that fails must fail cleanly (an
 * error, no crash); one that succeeds must work and be destroyed; the test
 * script then checks that nothing is left (rdma resource) and the kernel log.
 *
 * usage: fail-nth verbs DEV GIDX [VERB...]
 *                                    ucontext, PD, MR, CQ, QP (RC, UD) and
 *                                    its moves to RTS, SRQ, AH, MW (or the
 *                                    VERBs named: ucontext pd mr cq qp-rc
 *                                    qp-ud qp-rts srq ah mw)
 *        fail-nth link NAME NETDEV [STRIDE [TYPE]]
 *                                    rdma link add NAME type TYPE (ferroce
 *                                    unless named) netdev NETDEV, over
 *                                    netlink; a link
 *                                    made is deleted again (rdma link).
 *                                    With STRIDE > 1: every n up to
 *                                    LINK_EVERY, then every STRIDE-th
 *                                    (each run costs n allocations and
 *                                    their unwinding: the sweep grows
 *                                    with the square of the count)
 *
 * Needs CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB with failslab's
 * ignore-gfp-wait off (the script sets it); prints per verb how many
 * allocations it makes and how many runs failed.
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>

#include "verbs-util.h"

/* The most allocations one verb may make before this gives up (rdma link add
 * makes about 3,800 of ferroce, more of rxe). */
#define MAX_NTH 8000
/* With a stride, rdma link add's first allocations are each made to fail all the same. */
#define LINK_EVERY 64

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int fail_fd = -1;

static void arm(int n)
{
	char b[16];
	int l = snprintf(b, sizeof(b), "%d", n);

	CHECK(pwrite(fail_fd, b, l, 0) == l, "write fail-nth: %s", strerror(errno));
}

/* Stops injecting; whether the n-th allocation came (and failed). */
static int disarm(void)
{
	char b[16] = { 0 };
	int left;

	CHECK(pread(fail_fd, b, sizeof(b) - 1, 0) > 0, "read fail-nth: %s", strerror(errno));
	left = atoi(b);
	CHECK(pwrite(fail_fd, "0", 1, 0) == 1, "write fail-nth: %s", strerror(errno));
	return left == 0;
}

static const char *dev_name;
static int gidx;

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	void *buf;
};

static void env_open(struct env *e)
{
	e->ctx = open_device(dev_name);
	e->pd = ibv_alloc_pd(e->ctx);
	CHECK(e->pd, "ibv_alloc_pd: %s", strerror(errno));
	e->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	CHECK(e->cq, "ibv_create_cq: %s", strerror(errno));
	e->buf = calloc(1, 1 << 20);
	CHECK(e->buf, "calloc");
}

static void env_close(struct env *e)
{
	CHECK(!ibv_destroy_cq(e->cq), "ibv_destroy_cq");
	CHECK(!ibv_dealloc_pd(e->pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(e->ctx), "ibv_close_device");
	free(e->buf);
}

/* Each verb: made with allocation `n` failing (armed around the verb only). */
typedef int (*verb_fn)(struct env *e, int n);

static int v_ucontext(struct env *e, int n)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, num, hit = -1;

	list = ibv_get_device_list(&num);
	CHECK(list, "ibv_get_device_list");
	for (i = 0; i < num; i++) {
		if (strcmp(ibv_get_device_name(list[i]), dev_name))
			continue;
		arm(n);
		ctx = ibv_open_device(list[i]);
		hit = disarm();
	}
	ibv_free_device_list(list);
	CHECK(hit >= 0, "no device %s", dev_name);
	if (ctx) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);

		CHECK(pd, "a context opened under faults allocates no PD: %s", strerror(errno));
		ibv_dealloc_pd(pd);
		CHECK(!ibv_close_device(ctx), "ibv_close_device");
	}
	return hit;
}

static int v_pd(struct env *e, int n)
{
	struct ibv_pd *pd;
	int hit;

	arm(n);
	pd = ibv_alloc_pd(e->ctx);
	hit = disarm();
	if (pd)
		CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	return hit;
}

static int v_mr(struct env *e, int n)
{
	struct ibv_mr *mr;
	int hit;

	arm(n);
	mr = ibv_reg_mr(e->pd, e->buf, 1 << 20, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	hit = disarm();
	if (mr)
		CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	return hit;
}

static int v_cq(struct env *e, int n)
{
	struct ibv_cq *cq;
	int hit;

	arm(n);
	cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	hit = disarm();
	if (cq)
		CHECK(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	return hit;
}

static struct ibv_qp *make_qp(struct env *e, enum ibv_qp_type t, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = e->cq, .recv_cq = e->cq, .srq = srq, .qp_type = t,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};

	return ibv_create_qp(e->pd, &a);
}

static int v_qp(struct env *e, int n, enum ibv_qp_type t)
{
	struct ibv_qp *qp;
	int hit;

	arm(n);
	qp = make_qp(e, t, NULL);
	hit = disarm();
	if (qp)
		CHECK(!ibv_destroy_qp(qp), "ibv_destroy_qp");
	return hit;
}

static int v_qp_rc(struct env *e, int n)
{
	return v_qp(e, n, IBV_QPT_RC);
}

static int v_qp_ud(struct env *e, int n)
{
	return v_qp(e, n, IBV_QPT_UD);
}

/* An RC QP's moves to INIT, RTR (to itself) and RTS. */
static int v_qp_rts(struct env *e, int n)
{
	struct ibv_qp *qp = make_qp(e, IBV_QPT_RC, NULL);
	union ibv_gid gid;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int hit, r;

	CHECK(qp, "ibv_create_qp: %s", strerror(errno));
	CHECK(!ibv_query_gid(e->ctx, 1, gidx, &gid), "ibv_query_gid");
	arm(n);
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS);
	if (!r) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = gidx;
		a.ah_attr.grh.hop_limit = 64;
		r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER);
	}
	if (!r) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	hit = disarm();
	CHECK(!ibv_destroy_qp(qp), "ibv_destroy_qp");
	return hit;
}

static int v_srq(struct env *e, int n)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 64, .max_sge = 2 } };
	struct ibv_srq *srq;
	int hit;

	arm(n);
	srq = ibv_create_srq(e->pd, &a);
	hit = disarm();
	if (srq) {
		struct ibv_qp *qp = make_qp(e, IBV_QPT_RC, srq);

		CHECK(qp, "a QP on an SRQ made under faults: %s", strerror(errno));
		CHECK(!ibv_destroy_qp(qp), "ibv_destroy_qp");
		CHECK(!ibv_destroy_srq(srq), "ibv_destroy_srq");
	}
	return hit;
}

static int v_ah(struct env *e, int n)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	int hit;

	CHECK(!ibv_query_gid(e->ctx, 1, gidx, &a.grh.dgid), "ibv_query_gid");
	a.grh.sgid_index = gidx;
	a.grh.hop_limit = 64;
	arm(n);
	ah = ibv_create_ah(e->pd, &a);
	hit = disarm();
	if (ah)
		CHECK(!ibv_destroy_ah(ah), "ibv_destroy_ah");
	return hit;
}

static int v_mw(struct env *e, int n)
{
	struct ibv_mw *mw;
	int hit;

	arm(n);
	mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	hit = disarm();
	if (mw)
		CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw");
	return hit;
}

static void sweep(const char *name, verb_fn fn)
{
	/*
	 * FAIL_NTH_ONLY=N or N-M: only allocation N (N to M) is made to fail, to
	 * find which one a leak follows.
	 */
	const char *only = getenv("FAIL_NTH_ONLY");
	double start = now();
	int n = 1, last = MAX_NTH, got;

	if (only) {
		got = sscanf(only, "%d-%d", &n, &last);
		CHECK(got >= 1 && n >= 1 && last >= n, "FAIL_NTH_ONLY=%s: not N or N-M", only);
		if (got == 1)
			last = n;
	}
	for (; n <= last; n++) {
		struct env e;
		int hit;

		env_open(&e);
		errno = 0;
		hit = fn(&e, n);
		env_close(&e);
		if (!hit)
			break;
	}
	CHECK(only || n <= MAX_NTH, "%s still allocates after %d allocations", name, MAX_NTH);
	printf("%-9s %4d allocations, each made to fail once (%.0f s)\n", name, n - 1,
	       now() - start);
	fflush(stdout);
}

/* The verbs named in `only` (all of them when `count` is 0). */
static void verbs(char **only, int count)
{
	static const struct { const char *name; verb_fn fn; } all[] = {
		{ "ucontext", v_ucontext }, { "pd", v_pd }, { "mr", v_mr }, { "cq", v_cq },
		{ "qp-rc", v_qp_rc }, { "qp-ud", v_qp_ud }, { "qp-rts", v_qp_rts },
		{ "srq", v_srq }, { "ah", v_ah }, { "mw", v_mw },
	};
	size_t i;
	int j, found = 0;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		for (j = 0; j < count && strcmp(only[j], all[i].name); j++)
			;
		if (count && j == count)
			continue;
		sweep(all[i].name, all[i].fn);
		found++;
	}
	CHECK(found == (count ? count : (int)(sizeof(all) / sizeof(all[0]))),
	      "unknown verb among those named");
}

/* Puts a string attribute after the message in `m` (`len` bytes so far). */
static size_t put_str(char *m, size_t len, int type, const char *s)
{
	struct nlattr *a = (struct nlattr *)(m + len);
	size_t l = strlen(s) + 1;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + l;
	memcpy((char *)a + NLA_HDRLEN, s, l);
	return len + NLA_ALIGN(a->nla_len);
}

/* rdma link add over netlink, allocation n failing; 0 or the error. */
static int link_add(const char *type, const char *name, const char *netdev, int n, int *hit)
{
	char m[512] __attribute__((aligned(4))) = { 0 }, r[4096] __attribute__((aligned(4)));
	struct nlmsghdr *h = (struct nlmsghdr *)m;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	size_t len = NLMSG_HDRLEN;
	int s, got, err = 0;

	s = socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA);
	CHECK(s >= 0, "netlink socket: %s", strerror(errno));
	len = put_str(m, len, RDMA_NLDEV_ATTR_DEV_NAME, name);
	len = put_str(m, len, RDMA_NLDEV_ATTR_LINK_TYPE, type);
	len = put_str(m, len, RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
	h->nlmsg_len = len;
	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK);
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = n;
	arm(n);
	got = sendto(s, m, len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
	*hit = disarm();
	if (got < 0) {
		err = -errno;
	} else {
		got = recv(s, r, sizeof(r), 0);
		if (got < 0 && errno == ENOBUFS && *hit) {
			/* The failed allocation was the acknowledgement's: the link may be made. */
			err = -ENOBUFS;
		} else {
			CHECK(got >= (int)NLMSG_HDRLEN, "netlink ack: %s", strerror(errno));
			h = (struct nlmsghdr *)r;
			if (h->nlmsg_type == NLMSG_ERROR)
				err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
	close(s);
	return err;
}

static void link_sweep(const char *type, const char *name, const char *netdev, int stride)
{
	double start = now();
	char cmd[256];
	int n, hit, failed = 0, runs = 0, last = 0;

	for (n = 1; n <= MAX_NTH; n += n < LINK_EVERY ? 1 : stride) {
		int err = link_add(type, name, netdev, n, &hit);

		snprintf(cmd, sizeof(cmd), "/sys/class/infiniband/%s", name);
		if (err == -ENOBUFS && !access(cmd, F_OK))
			err = 0;	/* made, only its acknowledgement was lost */
		if (!err) {
			snprintf(cmd, sizeof(cmd), "rdma link delete %s", name);
			CHECK(!system(cmd), "%s", cmd);
		} else {
			CHECK(hit, "rdma link add failed with no fault injected: %s", strerror(-err));
			snprintf(cmd, sizeof(cmd), "/sys/class/infiniband/%s", name);
			CHECK(access(cmd, F_OK), "a failed rdma link add left %s", name);
			failed++;
		}
		if (!hit)
			break;
		runs++;
		last = n;
	}
	CHECK(n <= MAX_NTH, "rdma link add still allocates after %d allocations", MAX_NTH);
	CHECK(!link_add(type, name, netdev, 0, &hit), "rdma link add without faults");
	if (stride > 1)
		printf("link add  %d to %d allocations; %d of them made to fail (every one up to %d, then every %d-th), %d of those failed it; the link works after (%.0f s)\n",
		       last, n - 1, runs, LINK_EVERY, stride, failed, now() - start);
	else
		printf("link add  %4d allocations, %d of them failed it; the link works after (%.0f s)\n",
		       n - 1, failed, now() - start);
}

int main(int argc, char **argv)
{
	fail_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	CHECK(fail_fd >= 0, "/proc/thread-self/fail-nth: %s", strerror(errno));
	if (argc >= 4 && !strcmp(argv[1], "verbs")) {
		dev_name = argv[2];
		gidx = atoi(argv[3]);
		verbs(argv + 4, argc - 4);
	} else if (argc >= 4 && argc <= 6 && !strcmp(argv[1], "link")) {
		int stride = argc >= 5 ? atoi(argv[4]) : 1;

		CHECK(stride >= 1, "bad stride %s", argv[4]);
		link_sweep(argc == 6 ? argv[5] : "ferroce", argv[2], argv[3], stride);
	} else {
		fprintf(stderr,
			"usage: fail-nth verbs DEV GIDX [VERB...] | fail-nth link NAME NETDEV [STRIDE [TYPE]]\n");
		return 2;
	}
	return 0;
}
