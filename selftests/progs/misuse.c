// SPDX-License-Identifier: GPL-2.0
/*
 * Misuse of ferroce's control verbs through libibverbs and the raw uverbs
 * write() interface: objects destroyed in the wrong order and twice.
 * Prints one line per check; exits non-zero on the first wrong answer.
 *
 *   misuse DEVICE
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "FAIL: " __VA_ARGS__);            \
			fprintf(stderr, "\n");                            \
			exit(1);                                          \
		}                                                         \
	} while (0)

/*
 * A uverbs command written straight to the device file; resp_len is the
 * size of the response the command's "response" member points to.
 */
static int raw_destroy(int fd, uint32_t command, const void *body, size_t len,
		       size_t resp_len)
{
	char buf[sizeof(struct ib_uverbs_cmd_hdr) + 64];
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
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	static char buf[8192];
	uint32_t pd_handle, cq_handle;
	int i, n, ret;

	CHECK(argc == 2, "usage: misuse DEVICE");
	list = ibv_get_device_list(&n);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	CHECK(ctx, "cannot open %s", argv[1]);

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

	/* The context closes with objects still open: the kernel cleans up. */
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq");
	ibv_free_device_list(list);
	printf("misuse: ok\n");
	return 0;
}
