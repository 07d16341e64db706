/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ferroce: the provider's fast path, written in Rust (provider/ring).
 */
#ifndef FERROCE_RING_H
#define FERROCE_RING_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/ferroce-abi.h>

/* The consumer side of a CQ ring (struct CqState in provider/ring). */
struct ferroce_cq_state {
	void *base;
	uint32_t num_entries;
	uint32_t consumer;
};

void ferroce_cq_init(struct ferroce_cq_state *state, void *base,
		     uint32_t num_entries);
struct ibv_wc;
/*
 * Up to max completions into out; -1 if the kernel put the queue in error,
 * or if it overflowed (FERROCE_QUEUE_OVERFLOW) and holds no completion,
 * whatever max is (a max of 0 or less polls nothing, and out may be NULL).
 * A struct ferroce_cqe starts with the fields of struct ibv_wc, so each
 * completion is copied once, from the ring to out, which need not be
 * initialised: only the completions returned are written.
 */
int ferroce_cq_poll(struct ferroce_cq_state *state, struct ibv_wc *out,
		    int max);
/*
 * ORs FERROCE_CQ_NOTIFY_NEXT (or _SOLICITED) into notify, then a full
 * barrier: the next poll sees every completion the kernel did not signal.
 */
void ferroce_cq_arm(const struct ferroce_cq_state *state, int solicited_only);
/*
 * Removes the completions of QP qp_num from the ring, its receive
 * completions too unless keep_receives, keeping the others in order;
 * returns how many, or -1 for a CQ in error.  Under the CQ lock.
 */
int ferroce_cq_clean(struct ferroce_cq_state *state, uint32_t qp_num,
		     int keep_receives);
void ferroce_cq_remap(struct ferroce_cq_state *state, void *base,
		      uint32_t num_entries);

/*
 * What a work queue accepts (struct WqCaps): the capabilities its QP or SRQ
 * was created with, as the kernel returned them in ibv_qp_cap or
 * ibv_srq_attr.  Work requests are checked against these, not against the
 * room in a ring entry, which can be larger.
 */
struct ferroce_wq_caps {
	uint32_t qp_type;	/* enum ibv_qp_type; send queues only */
	uint32_t max_sge;
	uint32_t max_inline;	/* send queues only */
};

/* The producer side of a work queue (struct WqState in provider/ring). */
struct ferroce_wq_state {
	void *base;
	uint32_t num_entries;
	uint32_t wqe_size;
	uint32_t producer;
	uint32_t unpublished;
	struct ferroce_wq_caps caps;
};

/*
 * Checks of what create (or resize) responses describe, before anything is
 * mapped: 0, or EINVAL when the queue is not a non-zero power of two of
 * power-of-two entries with room for their header and the caps, inside the
 * mapping.  Only a checked queue is passed to ferroce_*_init.
 */
int ferroce_sq_check(const struct ferroce_mmap_info *mi, uint32_t wqe_size,
		     const struct ferroce_wq_caps *caps);
int ferroce_rq_check(const struct ferroce_mmap_info *mi, uint32_t wqe_size,
		     const struct ferroce_wq_caps *caps);
int ferroce_cq_check(const struct ferroce_mmap_info *mi);

void ferroce_wq_init(struct ferroce_wq_state *state, void *base,
		     uint32_t num_entries, uint32_t wqe_size,
		     const struct ferroce_wq_caps *caps);
/*
 * Write a WQE (not yet visible to the kernel): 0 or an errno.  The work
 * request is checked against the caps first (SGEs, inline size, opcode for
 * the QP type, atomic alignment): EINVAL, and nothing written, if it does
 * not fit.  A num_sge beyond max_sge is refused before sges is read.
 */
int ferroce_rq_post(struct ferroce_wq_state *state, uint64_t wr_id,
		    const struct ferroce_sge *sges, int num_sge);
int ferroce_sq_post(struct ferroce_wq_state *state,
		    const struct ferroce_send_wqe *header,
		    const struct ferroce_sge *sges, int num_sge);
/*
 * Publish the written WQEs: release-store the producer index, full barrier,
 * load NEED_WAKEUP.  1 if this call published work and the kernel asks for
 * the doorbell; never 1 when nothing was written.
 */
int ferroce_wq_publish(struct ferroce_wq_state *state);

/*
 * The extended verbs (ibv_cq_ex, ibv_qp_ex) on the same rings.
 *
 * A CQ polled one completion at a time (struct CqCursor): start_poll,
 * next_poll and end_poll under the CQ lock.  The current completion is
 * copied into the cursor, which the read_* functions read.
 */
struct ferroce_cq_cursor {
	struct ferroce_cqe cqe;
	uint32_t held;
	uint32_t reserved;
};

/*
 * 0 with the completion in cursor, ENOENT if there is none, EIO if the
 * kernel put the CQ in error, EOVERFLOW if it overflowed and holds no more
 * (ferroce_cq_poll's -1 cases).  Entries passed over are given back to the
 * kernel by ferroce_cq_end, which must follow a ferroce_cq_start that
 * returned 0.
 */
int ferroce_cq_start(struct ferroce_cq_state *state,
		     struct ferroce_cq_cursor *cursor);
int ferroce_cq_next(struct ferroce_cq_state *state,
		    struct ferroce_cq_cursor *cursor);
void ferroce_cq_end(struct ferroce_cq_state *state,
		    struct ferroce_cq_cursor *cursor);

/*
 * An ibv_qp_ex batch (struct SqBatch), under the SQ lock from wr_start to
 * wr_complete or wr_abort.  A builder stages a WQE header (wr_id, opcode,
 * send_flags, imm_data, wr.rdma or wr.atomic filled in) and takes the next
 * entry; setters write its data into the entry.  Each work request is
 * checked as ferroce_sq_post checks one when the next builder or
 * wr_complete finishes it.  The first error is latched and fails the whole
 * batch in ferroce_sq_batch_complete, which publishes nothing then; abort
 * drops the batch.  A count of SGEs beyond max_sge fails it unread.
 */
struct ferroce_sq_batch {
	uint8_t header[64];
	void *slot;
	uint64_t length;
	int32_t err;
	uint32_t open;
	uint32_t ud_set;
	uint32_t reserved;
};

struct ibv_data_buf;
void ferroce_sq_batch_start(struct ferroce_wq_state *state,
			    struct ferroce_sq_batch *batch);
void ferroce_sq_batch_fail(struct ferroce_sq_batch *batch, int err);
void ferroce_sq_batch_begin(struct ferroce_wq_state *state,
			    struct ferroce_sq_batch *batch,
			    const struct ferroce_send_wqe *header);
void ferroce_sq_batch_sges(struct ferroce_wq_state *state,
			   struct ferroce_sq_batch *batch,
			   const struct ferroce_sge *sges, size_t num_sge);
void ferroce_sq_batch_inline(struct ferroce_wq_state *state,
			     struct ferroce_sq_batch *batch,
			     const struct ibv_data_buf *bufs, size_t num_buf);
void ferroce_sq_batch_ud(struct ferroce_wq_state *state,
			 struct ferroce_sq_batch *batch, uint32_t ah_num,
			 uint32_t remote_qpn, uint32_t remote_qkey);
void ferroce_sq_batch_abort(struct ferroce_wq_state *state,
			    struct ferroce_sq_batch *batch);
/* 0 and *doorbell (as ferroce_wq_publish), or the batch's first error. */
int ferroce_sq_batch_complete(struct ferroce_wq_state *state,
			      struct ferroce_sq_batch *batch, int *doorbell);
/* 0, or EOPNOTSUPP if a QP of qp_type cannot do all of send_ops_flags. */
int ferroce_send_ops_check(uint32_t qp_type, uint64_t send_ops_flags);

#endif /* FERROCE_RING_H */
