// SPDX-License-Identifier: GPL-2.0
/*
 * Misuse of ferroce's control verbs through libibverbs and the raw uverbs
 * write() interface: objects destroyed in the wrong order and twice.
 * Prints one line per check; exits non-zero on the first wrong answer.
 *
 *   misuse DEVICE
 */
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "verbs-util.h"

/*
 * A uverbs command written straight to the device file; resp_len is the
 * size of the response the command's "response" member points to.
 */
static int raw_destroy(int fd, uint32_t command, const void *body, size_t len,
		       size_t resp_len)
{
	char buf[sizeof(struct ib_uverbs_cmd_hdr) + 128];
	struct ib_uverbs_cmd_hdr hdr = {
		.command = command,
		.in_words = (sizeof(hdr) + len) / 4,
		.out_words = resp_len / 4,
	};

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), body, len);
	if (write(fd, buf, sizeof(hdr) + len) == (ssize_t)(sizeof(hdr) + len))
		return 0;
	return -errno;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	static char buf[8192];
	uint32_t pd_handle, cq_handle;
	int ret;

	CHECK(argc == 2, "usage: misuse DEVICE");
	ctx = open_device(argv[1]);

	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));

	ret = ibv_dealloc_pd(pd);
	CHECK(ret == EBUSY, "dealloc_pd with an MR on it returned %d, expected EBUSY", ret);
	printf("dealloc_pd with an MR: EBUSY\n");

	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	pd_handle = pd->handle;
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");

	struct ib_uverbs_dealloc_pd dpd = { .pd_handle = pd_handle };
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_DEALLOC_PD, &dpd, sizeof(dpd), 0);
	CHECK(ret == -EINVAL || ret == -ENOENT, "second dealloc_pd returned %d", ret);
	printf("dealloc_pd twice: %s\n", strerror(-ret));

	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	cq_handle = cq->handle;
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	struct ib_uverbs_destroy_cq_resp dcq_resp;
	struct ib_uverbs_destroy_cq dcq = {
		.response = (uintptr_t)&dcq_resp,
		.cq_handle = cq_handle,
	};
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_DESTROY_CQ, &dcq, sizeof(dcq),
			  sizeof(dcq_resp));
	CHECK(ret == -EINVAL || ret == -ENOENT, "second destroy_cq returned %d", ret);
	printf("destroy_cq twice: %s\n", strerror(-ret));

	/* A handle that never existed. */
	dpd.pd_handle = 0x7fffffff;
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_DEALLOC_PD, &dpd, sizeof(dpd), 0);
	CHECK(ret == -EINVAL || ret == -ENOENT, "dealloc_pd of a bogus handle returned %d", ret);
	printf("dealloc_pd of a bogus handle: %s\n", strerror(-ret));

	/*
	 * Garbage in the shared rings: the kernel validates the index user
	 * space published when the doorbell rings, refuses it and marks the
	 * ring in error; only this QP is affected.
	 */
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq");
	struct ibv_qp_init_attr qia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qia);
	CHECK(qp, "create_qp: %s", strerror(errno));
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = 0x11 };
	CHECK(!ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), "to INIT");
	qa.qp_state = IBV_QPS_RTR;
	CHECK(!ibv_modify_qp(qp, &qa, IBV_QP_STATE), "to RTR");

	/*
	 * PSNs are 24 bits.  libibverbs keeps only those, and ib_core masks a
	 * wider PSN from a raw MODIFY_QP write to 24 bits (with a warning)
	 * before the driver sees it: the QP gets the low 24 bits.
	 */
	struct ib_uverbs_modify_qp mq = {
		.qp_handle = qp->handle,
		.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN,
		.qp_state = IBV_QPS_RTS,
		.sq_psn = (1 << 24) | 0x123,
	};
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_MODIFY_QP, &mq, sizeof(mq), 0);
	CHECK(ret == 0, "RTR->RTS with a 25-bit SQ PSN returned %d", ret);
	struct ibv_qp_init_attr qi;
	CHECK(!ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN, &qi) &&
	      qa.qp_state == IBV_QPS_RTS && qa.sq_psn == 0x123,
	      "query after a raw modify: state %d, SQ PSN %#x", qa.qp_state, qa.sq_psn);
	printf("raw MODIFY_QP: a 25-bit SQ PSN is masked to 24 bits by ib_core\n");

	struct ib_uverbs_post_send_resp ps_resp;
	struct ib_uverbs_post_send ps = {
		.response = (uintptr_t)&ps_resp, .qp_handle = qp->handle,
		.wr_count = 0, .wqe_size = sizeof(struct ibv_send_wr),
	};
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_POST_SEND, &ps, sizeof(ps), sizeof(ps_resp));
	CHECK(ret == 0, "doorbell on a sane QP returned %d", ret);

	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	int scribbled = 0;
	while (maps && fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;

		if (!strstr(line, "/dev/infiniband/uverbs") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		memset((void *)lo, 0x5a, hi - lo);
		scribbled++;
	}
	if (maps)
		fclose(maps);
	CHECK(scribbled >= 3, "found %d mapped rings, expected CQ, SQ and RQ", scribbled);
	ret = raw_destroy(ctx->cmd_fd, IB_USER_VERBS_CMD_POST_SEND, &ps, sizeof(ps), sizeof(ps_resp));
	CHECK(ret == -EINVAL, "doorbell on a scribbled SQ returned %d, expected -EINVAL", ret);
	printf("doorbell on scribbled rings: %s\n", strerror(-ret));
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp after scribbling");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq after scribbling");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");

	/* The context closes with objects still open: the kernel cleans up. */
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq");
	printf("misuse: ok\n");
	return 0;
}
