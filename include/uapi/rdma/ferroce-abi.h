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
 * Queues shared with user space (CQ now; SQ, RQ and SRQ with the same
 * layout).  A queue is one mapping: a control block, then 2^n entries of a
 * fixed size starting at FERROCE_QUEUE_ENTRIES.  Producer and consumer
 * indices are free-running u32 counters on separate cache lines (entry =
 * index & (num_entries - 1)), so either side learns how much work waits
 * with one load and publishes a batch with one store; per-entry ownership
 * bits would make the consumer write every entry back.  The side that owns
 * an index writes it with release semantics, the other side reads it with
 * acquire semantics.  The kernel keeps its own copy of the index it
 * produces and never trusts the user's: an index that claims more than
 * num_entries outstanding entries puts the queue in error.
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

/* ferroce_queue_ctrl.flags */
#define FERROCE_QUEUE_ERROR	(1U << 0)	/* the kernel stopped using it */
#define FERROCE_QUEUE_OVERFLOW	(1U << 1)	/* CQ: a completion was lost */

/*
 * CQ arming without a syscall: the user stores NEXT or SOLICITED in
 * `notify`; the kernel clears it (atomic exchange) when it writes a CQE
 * that satisfies it, and then signals the completion channel.
 */
#define FERROCE_CQ_NOTIFY_NEXT		1
#define FERROCE_CQ_NOTIFY_SOLICITED	2

/* A completion: 64 bytes, host byte order except imm_data (big endian). */
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

/* Where a queue's mapping is: mmap(cmd_fd, size, offset). */
struct ferroce_mmap_info {
	__aligned_u64 offset;
	__u32 size;
	__u32 num_entries;	/* a power of two */
};

struct ferroce_create_cq_resp {
	struct ferroce_mmap_info mi;
};

struct ferroce_resize_cq_resp {
	struct ferroce_mmap_info mi;
};

#endif /* FERROCE_ABI_USER_H */
