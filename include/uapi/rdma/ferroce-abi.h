/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * ferroce: the uverbs ABI between the ferroce kernel driver and its
 * rdma-core provider.
 *
 * The driver identifies itself to libibverbs as RDMA_DRIVER_FERROCE
 * (<rdma/ib_user_ioctl_verbs.h>); the provider binds devices by that id
 * only, so neither rdma-core's rxe provider binds ferroce nor ferroce's
 * provider binds rxe.  FERROCE_UVERBS_ABI_VERSION changes whenever a
 * structure below changes incompatibly; the provider accepts exactly one.
 */
#ifndef FERROCE_ABI_USER_H
#define FERROCE_ABI_USER_H

#include <linux/types.h>

#define FERROCE_UVERBS_ABI_VERSION 1

/* The node description prefix; the netdev's name follows it. */
#define FERROCE_NODE_DESC "ferroce"

/*
 * Queues shared with user space: CQs, where the kernel produces, and SQs,
 * RQs and SRQs, where user space produces, all with the same layout.  A queue is one mapping: a control block, then 2^n entries of a
 * fixed size starting at FERROCE_QUEUE_ENTRIES.  Producer and consumer
 * indices are free-running u32 counters on separate cache lines (entry =
 * index & (num_entries - 1)), so either side learns how much work waits
 * with one load and publishes a batch with one store; per-entry ownership
 * bits would make the consumer write every entry back.  The side that owns
 * an index writes it with release semantics, the other side reads it with
 * acquire semantics.  The kernel keeps its own copy of the index it
 * produces and never trusts the user's: an index that claims more than
 * num_entries outstanding entries puts the queue in error.
 *
 * Wakeups (CQ arming, FERROCE_QUEUE_NEED_WAKEUP) are a store on one side
 * followed by a load of what the other side stores: release/acquire does
 * not order a store before a later load, so each side puts a full memory
 * barrier between the two (as io_uring's SQ_NEED_WAKEUP does):
 *   CQ    user: OR notify; full barrier; load producer (poll again)
 *         kernel: store producer; full barrier; load notify
 *   SQ/RQ user: store producer; full barrier; load flags (NEED_WAKEUP)
 *         kernel: set NEED_WAKEUP; full barrier; load producer
 * Otherwise both sides could miss each other's store and a completion
 * event or a doorbell would be lost.
 */
struct ferroce_queue_ctrl {
	__u32 producer;		/* written by the producer */
	__u32 pad0[15];
	__u32 consumer;		/* written by the consumer */
	__u32 pad1[15];
	__u32 notify;		/* CQ: FERROCE_CQ_NOTIFY_*, armed by the user */
	__u32 flags;		/* FERROCE_QUEUE_*, written by the kernel */
	__u32 pad2[14];
};

#define FERROCE_QUEUE_ENTRIES 256	/* byte offset of entry 0 */

/*
 * ferroce_queue_ctrl.flags: only the kernel changes them, one bit at a
 * time with atomic OR/AND-NOT, so setting one flag never clears another.
 * A CQ with FERROCE_QUEUE_OVERFLOW set lost a completion: the provider
 * returns what the ring still holds, then fails every poll (and the owner
 * got IBV_EVENT_CQ_ERR).
 */
#define FERROCE_QUEUE_ERROR	(1U << 0)	/* the kernel stopped using it */
#define FERROCE_QUEUE_OVERFLOW	(1U << 1)	/* CQ: a completion was lost */
/*
 * SQ, RQ: nothing in the kernel is watching the producer index, so new work
 * needs the doorbell system call: POST_SEND (SQ) or POST_RECV (RQ), each
 * with no work requests.  While it is clear (a kernel poller owns the SQ;
 * an RQ whose work is taken as packets arrive) the provider only stores
 * the producer index.  An RQ needs the doorbell while its QP is in the
 * error state, where new work is flushed at once, and while an RC sender
 * waits for a receive WQE, which the doorbell resumes.
 */
#define FERROCE_QUEUE_NEED_WAKEUP (1U << 2)

/*
 * CQ arming without a syscall: the user ORs NEXT or SOLICITED into
 * `notify` (atomically, so arming for the next completion is never
 * weakened by a later solicited-only request: NEXT wins); the kernel
 * clears it (atomic exchange) when it writes a CQE that satisfies it and
 * then signals the completion channel.  The provider arms under its CQ
 * lock, which a resize (a new ring) also holds.
 */
#define FERROCE_CQ_NOTIFY_NEXT		1
#define FERROCE_CQ_NOTIFY_SOLICITED	2

/*
 * A completion: 64 bytes, host byte order except imm_data (big endian).
 * The kernel writes an entry, then publishes the producer index.  A full
 * CQ never loses an entry already written: the completion that does not
 * fit is dropped, FERROCE_QUEUE_OVERFLOW is set and the owner gets
 * IBV_EVENT_CQ_ERR.  QPs moved to the error state complete their
 * outstanding work requests with IBV_WC_WR_FLUSH_ERR, unsignaled ones
 * included, in posting order, receive queue after send queue.
 */
struct ferroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;		/* enum ibv_wc_status */
	__u32 opcode;		/* enum ibv_wc_opcode */
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_data;		/* or the invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;		/* enum ibv_wc_flags */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 reserved0;
	__u32 reserved1[4];
};

/* A scatter/gather entry of a work request. */
struct ferroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * A receive work request (RQ and SRQ): a header, then num_sge SGEs.  An
 * SRQ's WQEs are taken by whichever of its QPs receives a message, so they
 * complete in arrival order, not posting order.
 */
struct ferroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct ferroce_sge sge[];
};

/*
 * A send work request: a 64-byte header, then num_sge SGEs or, with
 * IBV_SEND_INLINE, inline_len bytes of data.
 */
struct ferroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;		/* enum ibv_wr_opcode */
	__u32 send_flags;	/* enum ibv_send_flags */
	__u32 num_sge;
	__u32 inline_len;
	__u32 imm_data;		/* big endian; or the rkey to invalidate */
	__u32 reserved0;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		/*
		 * IBV_WR_ATOMIC_WRITE (RC, ibv_wr_atomic_write only): the 8
		 * bytes of value, in memory order, stored at remote_addr
		 * (8-byte aligned) in one piece.  The WQE has no SGEs.
		 */
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
			__u8 value[8];
		} atomic_write;
		/*
		 * IBV_WR_FLUSH (RC, ibv_wr_flush only): the responder makes
		 * the memory written before it visible to every reader
		 * (type IBV_FLUSH_GLOBAL; IBV_FLUSH_PERSISTENT: persistent),
		 * length bytes at remote_addr (level IBV_FLUSH_RANGE; at most
		 * 2^31 - 1, IBTA A19) or the whole region rkey names
		 * (IBV_FLUSH_MR).
		 * The WQE has no SGEs.
		 */
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 length;
			__u32 rkey;
			__u8 type;
			__u8 level;
			__u16 reserved;
		} flush;
		struct {
			__u32 ah_num;
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		/*
		 * IBV_WR_BIND_MW (and ibv_bind_mw): the window whose rkey is
		 * mw_rkey takes rkey's key byte and length bytes at addr of
		 * the MR mr_lkey (length 0: no MR, unbound), with the
		 * IBV_ACCESS_* flags in access.
		 */
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mw_rkey;
			__u32 rkey;
			__u32 mr_lkey;
			__u32 access;
		} bind;
	} wr;
	struct ferroce_sge sge[];
};

/*
 * GET_CONTEXT: features are negotiated, not versioned.  The provider sets
 * in comp_mask the FERROCE_UCTX_* features it supports; the kernel answers
 * with those it enables (a subset), ignoring bits it does not know.  An
 * older provider sends no command data and gets no feature.  No feature
 * is defined yet: the kernel poller and doorbell batching will be.
 */
struct ferroce_alloc_ucontext_cmd {
	__aligned_u64 comp_mask;
};

struct ferroce_alloc_ucontext_resp {
	__aligned_u64 comp_mask;
};

/*
 * Queue mappings carry VM_DONTCOPY: a child process made by fork() does
 * not inherit them (touching one there faults), so it can never corrupt
 * its parent's rings.
 */

/* Where a queue's mapping is: mmap(cmd_fd, size, offset). */
struct ferroce_mmap_info {
	__aligned_u64 offset;
	__u32 size;
	__u32 num_entries;	/* a power of two */
};

/*
 * A QP's queues; rq_mi is all zero when the QP receives from an SRQ.  Entry
 * sizes are powers of two that fit the QP's SGE and inline capabilities.
 */
struct ferroce_create_qp_resp {
	struct ferroce_mmap_info sq_mi;
	struct ferroce_mmap_info rq_mi;
	__u32 sq_wqe_size;
	__u32 rq_wqe_size;
};

/*
 * A basic SRQ's queue.  Its limit is armed with ibv_modify_srq; when fewer
 * WQEs than the limit remain (at arming time or later), the kernel reports
 * IBV_EVENT_SRQ_LIMIT_REACHED once and disarms it.
 */
struct ferroce_create_srq_resp {
	struct ferroce_mmap_info mi;
	__u32 wqe_size;
	__u32 reserved;
};

/*
 * ibv_modify_srq with IBV_SRQ_MAX_WR moves the SRQ to a new queue, with
 * the WQEs not yet taken moved to its first entries and its producer index
 * set to their number.  MODIFY_SRQ has no response, so the kernel writes
 * the new queue's ferroce_mmap_info to user memory at mmap_info_addr; the
 * provider maps it and unmaps the old one.
 */
struct ferroce_modify_srq_cmd {
	__aligned_u64 mmap_info_addr;
};

struct ferroce_create_cq_resp {
	struct ferroce_mmap_info mi;
};

struct ferroce_resize_cq_resp {
	struct ferroce_mmap_info mi;
};

/*
 * An address handle's number: UD send work requests name their AH by it,
 * and the kernel looks it up (and checks it belongs to the QP's PD).
 */
struct ferroce_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

#endif /* FERROCE_ABI_USER_H */
