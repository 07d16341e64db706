// SPDX-License-Identifier: GPL-2.0
/*
 * ibv_query_qp reports zeros for what the driver never wrote: uverbs'
 * QUERY_QP kmallocs (without zeroing) the struct ib_qp_attr the driver
 * fills and copies every field of it to user space, so a layer that does
 * not zero it first leaks kernel heap through the alternate path, the
 * primary path of a QP that has none (RESET, UD), sq_draining and
 * path_mig_state.
 *
 * To make a leak visible every time rather than by luck, the kmalloc caches
 * of the sizes uverbs allocates are sprayed with a pattern right before each
 * query: setxattr(2) copies its value into a kmalloc'd buffer (GFP_USER, not
 * memcg-accounted: the caches uverbs allocates from) and frees it, here
 * because the path does not exist.  SLUB hands the object freed last out
 * first, and the program stays on one CPU so the next allocation of that
 * size takes it.
 *
 *   query-zeroed DEVICE
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/xattr.h>

#include "verbs-util.h"

#define PATTERN 0xa5
#define ROUNDS 16

/* Fill the kmalloc caches from 8 to 512 bytes with PATTERN (struct ib_qp_attr
 * and struct ib_qp_init_attr are well within). */
static void spray(void)
{
	static char value[512];
	size_t size;

	memset(value, PATTERN, sizeof(value));
	for (size = 8; size <= sizeof(value); size += 8)
		/* Fails (ENOENT) after the kernel copied and freed the value. */
		setxattr("/nonexistent/ferroce-spray", "user.spray", value, size, 0);
}

/* What is non-zero in an address vector that must be all zero, or NULL. */
static const char *ah_dirty(const struct ibv_ah_attr *a)
{
	static const union ibv_gid zero_gid;
	static char why[160];

	if (a->dlid || a->sl || a->src_path_bits || a->static_rate ||
	    a->is_global || a->port_num || a->grh.flow_label ||
	    a->grh.sgid_index || a->grh.hop_limit || a->grh.traffic_class ||
	    memcmp(&a->grh.dgid, &zero_gid, sizeof(zero_gid))) {
		snprintf(why, sizeof(why),
			 "dlid %#x sl %#x path_bits %#x rate %#x is_global %#x port %#x flow %#x sgid_index %#x hop %#x tclass %#x dgid[0] %#x",
			 a->dlid, a->sl, a->src_path_bits, a->static_rate,
			 a->is_global, a->port_num, a->grh.flow_label,
			 a->grh.sgid_index, a->grh.hop_limit,
			 a->grh.traffic_class, a->grh.dgid.raw[0]);
		return why;
	}
	return NULL;
}

/*
 * Query qp ROUNDS times, each right after a spray; the alternate path
 * fields, sq_draining and path_mig_state (APM is not supported: migrated,
 * 0) must be zero, and so must the primary path unless has_path.
 */
static void check_zeroed(struct ibv_qp *qp, int has_path, const char *what)
{
	const int mask = IBV_QP_STATE | IBV_QP_CUR_STATE |
			 IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
			 IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY |
			 IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN |
			 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_ALT_PATH |
			 IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN |
			 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PATH_MIG_STATE |
			 IBV_QP_CAP | IBV_QP_DEST_QPN;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	const char *dirty;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		memset(&a, 0, sizeof(a));
		memset(&init, 0, sizeof(init));
		spray();
		CHECK(ibv_query_qp(qp, &a, mask, &init) == 0, "query_qp: %s",
		      strerror(errno));
		CHECK(!a.alt_pkey_index && !a.alt_port_num && !a.alt_timeout,
		      "%s, query %d: kernel heap in the alternate path: alt_pkey_index %#x alt_port_num %#x alt_timeout %#x",
		      what, i, a.alt_pkey_index, a.alt_port_num, a.alt_timeout);
		dirty = ah_dirty(&a.alt_ah_attr);
		CHECK(!dirty, "%s, query %d: kernel heap in alt_ah_attr: %s",
		      what, i, dirty);
		CHECK(!a.sq_draining && a.path_mig_state == IBV_MIG_MIGRATED,
		      "%s, query %d: sq_draining %#x path_mig_state %#x, expected 0",
		      what, i, a.sq_draining, a.path_mig_state);
		dirty = has_path ? NULL : ah_dirty(&a.ah_attr);
		CHECK(!dirty, "%s, query %d: kernel heap in ah_attr (no path set): %s",
		      what, i, dirty);
	}
	printf("%s: %d queries after a heap spray, no kernel bytes\n", what,
	       ROUNDS);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_context *ctx;
	struct ibv_qp *rc, *ud;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	cpu_set_t cpus;

	CHECK(argc == 2, "usage: query-zeroed DEVICE");
	/* One CPU: the sprayed objects are then the ones uverbs gets. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	CHECK(sched_setaffinity(0, sizeof(cpus), &cpus) == 0,
	      "sched_setaffinity: %s", strerror(errno));

	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	init.send_cq = init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	rc = ibv_create_qp(pd, &init);
	CHECK(rc, "create RC QP: %s", strerror(errno));
	init.qp_type = IBV_QPT_UD;
	ud = ibv_create_qp(pd, &init);
	CHECK(ud, "create UD QP: %s", strerror(errno));

	check_zeroed(rc, 0, "RC QP in RESET");
	check_zeroed(ud, 0, "UD QP in RESET");
	to_rts(rc);
	check_zeroed(rc, 1, "RC QP in RTS (primary path set)");
	ud_to_rts(ud, 0x11);
	check_zeroed(ud, 0, "UD QP in RTS (no primary path)");

	CHECK(!ibv_destroy_qp(rc) && !ibv_destroy_qp(ud), "destroy_qp");
	CHECK(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "cleanup");
	ibv_close_device(ctx);
	printf("query_qp: nothing the driver did not write reaches user space\n");
	return 0;
}
