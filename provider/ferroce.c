// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ferroce: the rdma-core provider of the ferroce software RoCEv2 device.
 *
 * rdma-core's private provider API is C, so this file holds what it needs:
 * the device and context ops tables, the match table and the ibv_cmd_*
 * calls of the control verbs.  Verbs not listed in ferroce_ctx_ops fall back
 * to libibverbs' defaults, which fail with EOPNOTSUPP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/driver.h>
#include <rdma/ferroce-abi.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "ferroce.h"

static void ferroce_free_context(struct ibv_context *ibctx);

static int ferroce_query_device_ex(struct ibv_context *context,
				   const struct ibv_query_device_ex_input *input,
				   struct ibv_device_attr_ex *attr,
				   size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

static int ferroce_query_port(struct ibv_context *context, uint8_t port,
			      struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *ferroce_alloc_pd(struct ibv_context *context)
{
	struct ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int ferroce_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;

	free(pd);
	return 0;
}

static const struct verbs_context_ops ferroce_ctx_ops = {
	.alloc_pd = ferroce_alloc_pd,
	.dealloc_pd = ferroce_dealloc_pd,
	.free_context = ferroce_free_context,
	.query_device_ex = ferroce_query_device_ex,
	.query_port = ferroce_query_port,
};

static struct verbs_context *ferroce_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	struct ferroce_context *ctx;
	struct ibv_get_context cmd = {};
	struct ib_uverbs_get_context_resp resp = {};

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_FERROCE);
	if (!ctx)
		return NULL;

	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd), &resp,
				sizeof(resp))) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		return NULL;
	}

	verbs_set_ops(&ctx->ibv_ctx, &ferroce_ctx_ops);
	return &ctx->ibv_ctx;
}

static void ferroce_free_context(struct ibv_context *ibctx)
{
	struct ferroce_context *ctx = to_fctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static struct verbs_device *ferroce_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct ferroce_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static void ferroce_device_free(struct verbs_device *verbs_dev)
{
	free(to_fdev(&verbs_dev->device));
}

static const struct verbs_match_ent ferroce_match_table[] = {
	VERBS_DRIVER_ID(RDMA_DRIVER_FERROCE),
	{},
};

static const struct verbs_device_ops ferroce_dev_ops = {
	.name = "ferroce",
	.match_min_abi_version = FERROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = FERROCE_UVERBS_ABI_VERSION,
	.match_table = ferroce_match_table,
	.alloc_device = ferroce_device_alloc,
	.uninit_device = ferroce_device_free,
	.alloc_context = ferroce_alloc_context,
};
PROVIDER_DRIVER(ferroce, ferroce_dev_ops);
