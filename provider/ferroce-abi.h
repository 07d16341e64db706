/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ferroce: the driver-specific uverbs commands, from the kernel's
 * <rdma/ferroce-abi.h> (copied into rdma-core's kernel-headers by build).
 */
#ifndef FERROCE_ABI_H
#define FERROCE_ABI_H

#include <infiniband/kern-abi.h>
#include <rdma/ferroce-abi.h>
#include <kernel-abi/ferroce-abi.h>

DECLARE_DRV_CMD(uferroce_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		ferroce_alloc_ucontext_cmd, ferroce_alloc_ucontext_resp);
DECLARE_DRV_CMD(uferroce_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, ferroce_create_ah_resp);
DECLARE_DRV_CMD(uferroce_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, ferroce_create_qp_resp);
DECLARE_DRV_CMD(uferroce_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, ferroce_create_cq_resp);
/* The extended verbs carry the same driver data as the basic ones. */
DECLARE_DRV_CMD(uferroce_create_qp_ex, IB_USER_VERBS_EX_CMD_CREATE_QP,
		empty, ferroce_create_qp_resp);
DECLARE_DRV_CMD(uferroce_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, ferroce_create_cq_resp);
DECLARE_DRV_CMD(uferroce_create_srq_ex, IB_USER_VERBS_CMD_CREATE_XSRQ,
		empty, ferroce_create_srq_resp);
DECLARE_DRV_CMD(uferroce_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, ferroce_resize_cq_resp);
DECLARE_DRV_CMD(uferroce_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, ferroce_create_srq_resp);
DECLARE_DRV_CMD(uferroce_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		ferroce_modify_srq_cmd, empty);

#endif /* FERROCE_ABI_H */
