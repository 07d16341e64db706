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
#include <sys/mman.h>

#include <infiniband/driver.h>
#include <rdma/ferroce-abi.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "ferroce.h"
#include "ferroce-abi.h"

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

static struct ibv_mr *ferroce_reg_mr(struct ibv_pd *pd, void *addr,
				     size_t length, uint64_t hca_va,
				     int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int ferroce_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;

	free(vmr);
	return 0;
}

static void *map_queue(struct ibv_context *context,
		       const struct ferroce_mmap_info *mi)
{
	return mmap(NULL, mi->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    context->cmd_fd, mi->offset);
}

static struct ibv_cq *ferroce_create_cq(struct ibv_context *context, int cqe,
				       struct ibv_comp_channel *channel,
				       int comp_vector)
{
	struct uferroce_create_cq_resp resp = {};
	struct ibv_create_cq cmd = {};
	struct ferroce_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(context, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}

	cq->ring = map_queue(context, &resp.mi);
	if (cq->ring == MAP_FAILED) {
		ret = errno;
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		free(cq);
		errno = ret;
		return NULL;
	}
	cq->ring_size = resp.mi.size;
	ferroce_cq_init(&cq->state, cq->ring, resp.mi.num_entries);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->vcq.cq;
}

static int ferroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	struct uferroce_resize_cq_resp resp = {};
	struct ibv_resize_cq cmd = {};
	void *ring;
	int ret;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto out;

	/*
	 * The kernel moved the unpolled completions to the new ring; the old
	 * one is no longer written and goes away with its last mapping.
	 */
	ring = map_queue(ibcq->context, &resp.mi);
	if (ring == MAP_FAILED) {
		ret = errno;
		goto out;
	}
	munmap(cq->ring, cq->ring_size);
	cq->ring = ring;
	cq->ring_size = resp.mi.size;
	ferroce_cq_remap(&cq->state, ring, resp.mi.num_entries);
out:
	pthread_spin_unlock(&cq->lock);
	return ret;
}

static int ferroce_destroy_cq(struct ibv_cq *ibcq)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	munmap(cq->ring, cq->ring_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static void cqe_to_wc(const struct ferroce_cqe *cqe, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->imm_data = cqe->imm_data;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = cqe->wc_flags;
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
}

static int ferroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	struct ferroce_cqe cqes[16];
	int done = 0, n, i;

	pthread_spin_lock(&cq->lock);
	while (done < ne) {
		int want = ne - done < 16 ? ne - done : 16;

		n = ferroce_cq_poll(&cq->state, cqes, want);
		if (n < 0) {
			/* The kernel put the CQ in error. */
			pthread_spin_unlock(&cq->lock);
			return done ? done : -1;
		}
		for (i = 0; i < n; i++)
			cqe_to_wc(&cqes[i], &wc[done + i]);
		done += n;
		if (n < want)
			break;
	}
	pthread_spin_unlock(&cq->lock);
	return done;
}

static int ferroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	/* Armed in shared memory: no system call (see ferroce-abi.h). */
	ferroce_cq_arm(&to_fcq(ibcq)->state, solicited_only);
	return 0;
}

static const struct verbs_context_ops ferroce_ctx_ops = {
	.alloc_pd = ferroce_alloc_pd,
	.create_cq = ferroce_create_cq,
	.dealloc_pd = ferroce_dealloc_pd,
	.dereg_mr = ferroce_dereg_mr,
	.destroy_cq = ferroce_destroy_cq,
	.free_context = ferroce_free_context,
	.query_device_ex = ferroce_query_device_ex,
	.poll_cq = ferroce_poll_cq,
	.query_port = ferroce_query_port,
	.reg_mr = ferroce_reg_mr,
	.req_notify_cq = ferroce_req_notify_cq,
	.resize_cq = ferroce_resize_cq,
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
