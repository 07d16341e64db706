// SPDX-License-Identifier: GPL-2.0
/*
 * UD multicast attachments (ibv_attach_mcast/ibv_detach_mcast) on a device:
 *
 *   mcast-attach DEV limits       the limits the device reports hold exactly
 *                                 (max_mcast_qp_attach QPs per group,
 *                                 max_mcast_grp groups, max_total_mcast_qp_attach
 *                                 attachments: one more is ENOMEM); a GID that
 *                                 is no multicast address is EINVAL, and so is
 *                                 detaching what is not attached; a QP cannot
 *                                 be destroyed while attached (EBUSY).
 *   mcast-attach DEV hold MGID    one UD QP attached to MGID until stdin closes
 *                                 (prints "attached" once it is).
 */
#include <unistd.h>
#include <arpa/inet.h>
#include "verbs-util.h"

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	CHECK(qp, "ibv_create_qp(UD): %s", strerror(errno));
	return qp;
}

/* The IPv4-mapped GID of 239.1.(n >> 8).(n & 255). */
static union ibv_gid group(unsigned int n)
{
	union ibv_gid g = {};

	g.raw[10] = 0xff;
	g.raw[11] = 0xff;
	g.raw[12] = 239;
	g.raw[13] = 1;
	g.raw[14] = n >> 8;
	g.raw[15] = n & 0xff;
	return g;
}

static void limits(struct ibv_context *ctx)
{
	struct ibv_device_attr attr;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp **qps;
	union ibv_gid g = group(0), unicast = {};
	unsigned int per_group, groups, total, nqps, i, j;
	int err;

	CHECK(pd && cq, "PD/CQ: %s", strerror(errno));
	CHECK(!ibv_query_device(ctx, &attr), "ibv_query_device");
	per_group = attr.max_mcast_qp_attach;
	groups = attr.max_mcast_grp;
	total = attr.max_total_mcast_qp_attach;
	printf("max_mcast_grp %u max_mcast_qp_attach %u max_total_mcast_qp_attach %u\n",
	       groups, per_group, total);
	CHECK(groups && per_group && total >= per_group, "no multicast reported");
	/* Enough QPs to fill the table with groups of per_group. */
	nqps = per_group + 1;
	qps = calloc(nqps, sizeof(*qps));
	for (i = 0; i < nqps; i++)
		qps[i] = ud_qp(pd, cq);

	/* Not multicast: 10.0.0.1 mapped. */
	unicast.raw[10] = unicast.raw[11] = 0xff;
	unicast.raw[12] = 10;
	unicast.raw[15] = 1;
	err = ibv_attach_mcast(qps[0], &unicast, 0);
	CHECK(err == EINVAL, "attaching a unicast GID: %d, want EINVAL", err);
	err = ibv_detach_mcast(qps[0], &g, 0);
	CHECK(err == EINVAL, "detaching what is not attached: %d, want EINVAL", err);

	/*
	 * Attached twice: uverbs keeps one attachment per QP and group for
	 * user space (it detaches them when the process goes), so once.
	 */
	CHECK(!ibv_attach_mcast(qps[0], &g, 0), "attach: %s", strerror(errno));
	CHECK(!ibv_attach_mcast(qps[0], &g, 0), "attach again: %s", strerror(errno));
	CHECK(!ibv_detach_mcast(qps[0], &g, 0), "detach");
	err = ibv_detach_mcast(qps[0], &g, 0);
	CHECK(err == EINVAL, "a second detach: %d, want EINVAL", err);

	/* max_mcast_qp_attach QPs in one group, not one more. */
	for (i = 0; i < per_group; i++)
		CHECK(!ibv_attach_mcast(qps[i], &g, 0), "QP %u of the group: %s", i, strerror(errno));
	err = ibv_attach_mcast(qps[per_group], &g, 0);
	CHECK(err == ENOMEM, "QP %u of a group: %d, want ENOMEM", per_group + 1, err);
	for (i = 0; i < per_group; i++)
		CHECK(!ibv_detach_mcast(qps[i], &g, 0), "detach QP %u", i);

	/* max_mcast_grp groups of one QP, not one more. */
	for (i = 0; i < groups; i++) {
		g = group(i);
		CHECK(!ibv_attach_mcast(qps[0], &g, 0), "group %u: %s", i, strerror(errno));
	}
	g = group(groups);
	err = ibv_attach_mcast(qps[0], &g, 0);
	CHECK(err == ENOMEM, "group %u: %d, want ENOMEM", groups + 1, err);
	/* Attached, a QP cannot be destroyed. */
	err = ibv_destroy_qp(qps[0]);
	CHECK(err == EBUSY, "destroying an attached QP: %d, want EBUSY", err);
	for (i = 0; i < groups; i++) {
		g = group(i);
		CHECK(!ibv_detach_mcast(qps[0], &g, 0), "detach group %u", i);
	}

	/* max_total_mcast_qp_attach attachments: groups of per_group QPs. */
	for (i = 0; i < total; i++) {
		g = group(i / per_group);
		CHECK(!ibv_attach_mcast(qps[i % per_group], &g, 0), "attachment %u: %s", i,
		      strerror(errno));
	}
	g = group(total / per_group);
	err = ibv_attach_mcast(qps[per_group], &g, 0);
	CHECK(err == ENOMEM, "attachment %u: %d, want ENOMEM", total + 1, err);
	for (i = 0; i < total; i++) {
		g = group(i / per_group);
		CHECK(!ibv_detach_mcast(qps[i % per_group], &g, 0), "detach attachment %u", i);
	}

	for (j = 0; j < nqps; j++)
		CHECK(!ibv_destroy_qp(qps[j]), "destroy QP %u", j);
	free(qps);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	printf("limits hold\n");
}

static void hold(struct ibv_context *ctx, const char *mgid)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;
	union ibv_gid g;
	char c;

	CHECK(pd && cq, "PD/CQ: %s", strerror(errno));
	CHECK(inet_pton(AF_INET6, mgid, g.raw) == 1, "bad MGID %s", mgid);
	qp = ud_qp(pd, cq);
	CHECK(!ibv_attach_mcast(qp, &g, 0), "attach %s: %s", mgid, strerror(errno));
	printf("attached\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	CHECK(!ibv_detach_mcast(qp, &g, 0), "detach");
	CHECK(!ibv_destroy_qp(qp), "destroy");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;

	CHECK(argc >= 3, "usage: %s DEV limits | DEV hold MGID", argv[0]);
	ctx = open_device(argv[1]);
	if (!strcmp(argv[2], "limits"))
		limits(ctx);
	else if (!strcmp(argv[2], "hold") && argc == 4)
		hold(ctx, argv[3]);
	else
		CHECK(0, "unknown mode %s", argv[2]);
	ibv_close_device(ctx);
	return 0;
}
