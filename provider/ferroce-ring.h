/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ferroce: the provider's fast path, written in Rust (provider/ring).
 */
#ifndef FERROCE_RING_H
#define FERROCE_RING_H

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
 * The extended CQ (ibv_cq_ex) on the same ring, polled one completion at
 * a time (struct CqCursor): start_poll, next_poll and end_poll under the
 * CQ lock.  The current completion is
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

#endif /* FERROCE_RING_H */
