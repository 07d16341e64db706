/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ferroce: the rdma-core provider of the ferroce software RoCEv2 device.
 */
#ifndef FERROCE_H
#define FERROCE_H

#include <pthread.h>
#include <infiniband/driver.h>

#include "ferroce-ring.h"

/* One queue's mapping of the uverbs file (struct ferroce_mmap_info). */
struct ferroce_mapping {
	void *addr;
	size_t size;
};

struct ferroce_device {
	struct verbs_device ibv_dev;
};

/*
 * The FERROCE_UCTX_* features (ferroce-abi.h) this provider implements,
 * asked for in GET_CONTEXT.  None is defined yet.
 */
#define FERROCE_PROVIDER_FEATURES 0ULL

struct ferroce_context {
	struct verbs_context ibv_ctx;
	/*
	 * The FERROCE_UCTX_* features the kernel enabled for this context: a
	 * feature's code paths test its bit here.
	 */
	uint64_t comp_mask;
};

struct ferroce_cq {
	struct verbs_cq vcq;
	/* Serialises polling and resizing, as the ring has one consumer. */
	pthread_spinlock_t lock;
	struct ferroce_mapping ring;
	struct ferroce_cq_state state;
	/* The completion ibv_cq_ex is on, between start_poll and end_poll. */
	struct ferroce_cq_cursor cursor;
};

static inline struct ferroce_cq *cqx_to_fcq(struct ibv_cq_ex *ibcqx)
{
	return container_of(ibcqx, struct ferroce_cq, vcq.cq_ex);
}

static inline struct ferroce_cq *to_fcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct ferroce_cq, vcq.cq);
}

struct ferroce_qp {
	struct verbs_qp vqp;
	/* One producer per queue. */
	pthread_spinlock_t sq_lock;
	pthread_spinlock_t rq_lock;
	struct ferroce_mapping sq_ring;
	struct ferroce_mapping rq_ring;	/* none when the QP receives from an SRQ */
	struct ferroce_wq_state sq;
	struct ferroce_wq_state rq;
	/* The ibv_qp_ex batch, between wr_start and wr_complete or wr_abort. */
	struct ferroce_sq_batch batch;
};

static inline struct ferroce_qp *to_fqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct ferroce_qp, vqp.qp);
}

static inline struct ferroce_qp *qpx_to_fqp(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct ferroce_qp, vqp.qp_ex);
}

struct ferroce_srq {
	struct verbs_srq vsrq;
	/* One producer; also held across a resize, which moves the ring. */
	pthread_spinlock_t lock;
	struct ferroce_mapping ring;
	struct ferroce_wq_state wq;
};

static inline struct ferroce_srq *to_fsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct ferroce_srq, vsrq.srq);
}

struct ferroce_ah {
	struct ibv_ah ibv_ah;
	/* What UD send work requests name the AH by. */
	uint32_t ah_num;
};

static inline struct ferroce_ah *to_fah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct ferroce_ah, ibv_ah);
}

static inline struct ferroce_context *to_fctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct ferroce_context, ibv_ctx.context);
}

static inline struct ferroce_device *to_fdev(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct ferroce_device, ibv_dev.device);
}

#endif /* FERROCE_H */
