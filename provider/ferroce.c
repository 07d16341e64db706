// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ferroce: the rdma-core provider of the ferroce software RoCEv2 device.
 *
 * rdma-core's private provider API is C, so this file holds what it needs:
 * the device and context ops tables, the match table and the ibv_cmd_*
 * calls of the control verbs.  Verbs not listed in ferroce_ctx_ops fall back
 * to libibverbs' defaults, which fail with EOPNOTSUPP.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

static struct ibv_ah *ferroce_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	struct uferroce_create_ah_resp resp = {};
	struct ferroce_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;

	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.ah_num;
	return &ah->ibv_ah;
}

static int ferroce_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;

	free(to_fah(ibah));
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

/* Memory windows: the kernel gives the rkey; binds are work requests. */
static struct ibv_mw *ferroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int ferroce_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

static int ferroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			    void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};

	/* The kernel replaces the MR with a new one: new lkey and rkey. */
	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

/* Maps the queue mi describes into m; 0 or an errno. */
static int map_queue(struct ibv_context *context,
		     const struct ferroce_mmap_info *mi, struct ferroce_mapping *m)
{
	void *addr = mmap(NULL, mi->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			  context->cmd_fd, mi->offset);

	if (addr == MAP_FAILED)
		return errno;
	m->addr = addr;
	m->size = mi->size;
	return 0;
}

static void unmap_queue(struct ferroce_mapping *m)
{
	if (m->addr)
		munmap(m->addr, m->size);
	m->addr = NULL;
}

/*
 * After a resize: maps the new queue, then drops the old mapping (the kernel
 * no longer uses the old queue, which goes away with its last mapping).
 */
static int remap_queue(struct ibv_context *context,
		       const struct ferroce_mmap_info *mi, struct ferroce_mapping *m)
{
	struct ferroce_mapping new;
	int ret = map_queue(context, mi, &new);

	if (ret)
		return ret;
	unmap_queue(m);
	*m = new;
	return 0;
}

/*
 * Checks and maps the rings a create QP response describes; 0 or an errno
 * (the caller destroys the QP).  cap holds the capabilities the kernel
 * granted (libibverbs copied them from the response): work requests are
 * held to those.  A response whose rings cannot hold them (short, zero, or
 * nonsense sizes) fails the verb before anything is mapped.
 */
static int qp_map_rings(struct ibv_context *context, struct ferroce_qp *qp,
			uint32_t qp_type, const struct ibv_qp_cap *cap,
			bool has_srq, const struct ferroce_create_qp_resp *resp)
{
	struct ferroce_wq_caps sq_caps, rq_caps;
	int ret;

	sq_caps = (struct ferroce_wq_caps){
		.qp_type = qp_type,
		.max_sge = cap->max_send_sge,
		.max_inline = cap->max_inline_data,
	};
	rq_caps = (struct ferroce_wq_caps){
		.qp_type = qp_type,
		.max_sge = cap->max_recv_sge,
	};
	ret = ferroce_sq_check(&resp->sq_mi, resp->sq_wqe_size, &sq_caps);
	if (!ret && !has_srq)
		ret = ferroce_rq_check(&resp->rq_mi, resp->rq_wqe_size, &rq_caps);
	if (ret)
		return ret;

	ret = map_queue(context, &resp->sq_mi, &qp->sq_ring);
	if (ret)
		return ret;
	ferroce_wq_init(&qp->sq, qp->sq_ring.addr, resp->sq_mi.num_entries,
			resp->sq_wqe_size, &sq_caps);
	if (!has_srq) {
		ret = map_queue(context, &resp->rq_mi, &qp->rq_ring);
		if (ret) {
			unmap_queue(&qp->sq_ring);
			return ret;
		}
		ferroce_wq_init(&qp->rq, qp->rq_ring.addr,
				resp->rq_mi.num_entries, resp->rq_wqe_size,
				&rq_caps);
	}
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static struct ibv_qp *ferroce_create_qp(struct ibv_pd *pd,
					struct ibv_qp_init_attr *attr)
{
	struct uferroce_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct ferroce_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}

	ret = qp_map_rings(pd->context, qp, attr->qp_type, &attr->cap,
			   attr->srq, &resp.drv_payload);
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		free(qp);
		errno = ret;
		return NULL;
	}
	return &qp->vqp.qp;
}

/* Takes the QP's completions out of cq (see clean_qp_cqs). */
static void clean_cq(struct ibv_cq *ibcq, struct ibv_qp *ibqp)
{
	struct ferroce_cq *cq = to_fcq(ibcq);

	pthread_spin_lock(&cq->lock);
	if (cq->ring.addr)
		ferroce_cq_clean(&cq->state, ibqp->qp_num, ibqp->srq != NULL);
	pthread_spin_unlock(&cq->lock);
}

/*
 * A QP moved to RESET (or destroyed) leaves none of its completions in its
 * CQs (IBTA's Reset state; mlx4, mlx5 and hns clean their CQs the same
 * way), so a QP taken through RESET to RTS again polls only what it does
 * from then on.  The kernel completes nothing of the QP's own queues once
 * the modify returned.  The receive completions of a QP on an SRQ stay:
 * each stands for an SRQ WQE the application could not get back otherwise.
 * Each CQ's lock is taken, which ibv_start_poll holds until ibv_end_poll:
 * a thread must not reset or destroy a QP of a CQ it is polling that way
 * (as with mlx5's locked CQs).
 */
static void clean_qp_cqs(struct ibv_qp *ibqp)
{
	if (ibqp->send_cq)
		clean_cq(ibqp->send_cq, ibqp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		clean_cq(ibqp->recv_cq, ibqp);
}

static int ferroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			     int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET)
		clean_qp_cqs(ibqp);
	return ret;
}

static int ferroce_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int ferroce_destroy_qp(struct ibv_qp *ibqp)
{
	struct ferroce_qp *qp = to_fqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	/* Nothing polled later may name it (its number comes back). */
	clean_qp_cqs(ibqp);

	unmap_queue(&qp->sq_ring);
	unmap_queue(&qp->rq_ring);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	free(qp);
	return 0;
}

/*
 * How often a doorbell is rung when uverbs fails it before the driver runs:
 * a signal (EINTR), EAGAIN, or its kmalloc of the command (ENOMEM).  The
 * published work then sits in a healthy ring, so giving up would report as
 * refused work that a later doorbell runs; ringing again is harmless, since
 * a doorbell carries no work and only makes the kernel look at the ring.
 */
#define DOORBELL_TRIES 8

static bool doorbell_transient(int err)
{
	return err == EINTR || err == EAGAIN || err == ENOMEM;
}

/*
 * A doorbell: a POST_SEND or POST_RECV command with no work requests (the
 * two commands start alike: response, qp_handle, wr_count, sge_count,
 * wqe_size).  0, or the errno of the last try (see "A failed doorbell").
 */
static int ring_doorbell(struct ibv_qp *ibqp, uint32_t command)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send body;
	} cmd = {};
	struct ib_uverbs_post_send_resp resp;
	int tries, ret = 0;

	cmd.hdr.command = command;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.body.response = (uintptr_t)&resp;
	cmd.body.qp_handle = ibqp->handle;
	cmd.body.wqe_size = command == IB_USER_VERBS_CMD_POST_SEND ?
				    sizeof(struct ibv_send_wr) :
				    sizeof(struct ib_uverbs_recv_wr);
	for (tries = 1; tries <= DOORBELL_TRIES; tries++) {
		ssize_t n = write(ibqp->context->cmd_fd, &cmd, sizeof(cmd));

		if (n == sizeof(cmd))
			return 0;
		/* uverbs takes a command whole or fails it. */
		ret = n < 0 ? errno : EIO;
		if (!doorbell_transient(ret))
			break;
		/* Memory (or whatever EAGAIN waits for) may take a moment. */
		if (ret != EINTR && tries < DOORBELL_TRIES) {
			struct timespec pause = { .tv_nsec = tries * 1000000L };

			nanosleep(&pause, NULL);
		}
	}
	return ret;
}

/*
 * Errors are reported as rxe's provider reports them (rxe_post_send,
 * rxe_post_recv): an errno, and *bad_wr names the first work request that
 * was not posted; those before it were.  Where ferroce differs:
 * - rxe leaves *bad_wr NULL when the state refuses receive work; ferroce
 *   names the first work request, as the verbs contract asks;
 * - rxe rings the send doorbell on every call, ferroce only when this call
 *   published work and the kernel asks for it (NEED_WAKEUP);
 * - when the doorbell fails, rxe returns its error with *bad_wr NULL, as if
 *   every work request had been posted; ferroce returns it with *bad_wr set
 *   to the first work request of the call;
 * - rxe fails every empty chain (wr NULL) with EINVAL.  ferroce refuses it
 *   only where it refuses any chain (the QP's state, no receive queue:
 *   EINVAL with *bad_wr NULL, the first work request); elsewhere it posts
 *   nothing, rings no doorbell and returns 0, as mlx5 does: asking for
 *   nothing is not an error.
 *
 * A failed doorbell.  When the doorbell is rung, the call's work requests
 * before the first one the checks refused (all of them if none was) are
 * published in the ring; those from the refused one on were never written.
 * What becomes of the published ones depends on the error:
 * - EINVAL: the driver refused the doorbell.  Either the QP is before RTS
 *   (its state changed under this call) and the kernel has dropped the
 *   send queue's published work, or the kernel found the ring corrupt and
 *   put it in error (FERROCE_QUEUE_ERROR): posts fail with EIO from then
 *   on, and neither a doorbell nor a move to ERR reads the ring again.
 *   None of this call's work will execute or complete.
 * - EINTR, EAGAIN, ENOMEM: uverbs failed before the driver ran; the
 *   doorbell is rung again, up to DOORBELL_TRIES times.
 * - anything else, or a transient error that outlasted the retries: the
 *   error is returned with *bad_wr naming the first work request, but that
 *   work was not dropped: the kernel may or may not have seen the doorbell,
 *   and the work stays published in a ring that is not in error.  The
 *   caller can rely only on nothing executing it once the device is gone
 *   (EIO, ENODEV).  Otherwise it must treat the work as posted but not yet
 *   rung for: the next doorbell of this queue (any later post) runs it and
 *   a move to ERR flushes it, so its buffers stay in use until its
 *   completions are polled (flush completions after a move to ERR), or the
 *   QP is reset or destroyed, which drops it without completions.
 */

/* Writes a chain of receive work requests; 0 or an errno and *bad_wr. */
static int post_recv_wrs(struct ferroce_wq_state *wq, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr)
{
	int ret;

	for (; wr; wr = wr->next) {
		/* struct ibv_sge has the layout of struct ferroce_sge. */
		ret = ferroce_rq_post(wq, wr->wr_id,
				      (const struct ferroce_sge *)wr->sg_list,
				      wr->num_sge);
		if (ret) {
			*bad_wr = wr;
			return ret;
		}
	}
	return 0;
}

static int ferroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	struct ferroce_qp *qp = to_fqp(ibqp);
	int ret, doorbell;

	if (!bad_wr)
		return EINVAL;
	*bad_wr = NULL;
	/*
	 * No receive queue (the QP receives from its SRQ), or a QP in RESET,
	 * which takes no work (IBTA C10-97.2.1; libibverbs keeps ibqp->state).
	 * Every other state accepts receive work; in ERR it is flushed at once.
	 */
	if (!qp->rq_ring.addr || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	ret = post_recv_wrs(&qp->rq, wr, bad_wr);
	/* Set while the QP is in error: the kernel flushes the new work. */
	doorbell = ferroce_wq_publish(&qp->rq);
	pthread_spin_unlock(&qp->rq_lock);
	if (doorbell) {
		int db = ring_doorbell(ibqp, IB_USER_VERBS_CMD_POST_RECV);

		/* wr is still the first: see "A failed doorbell". */
		if (db) {
			*bad_wr = wr;
			ret = db;
		}
	}
	return ret;
}

/* A memory window bind (IBV_WR_BIND_MW, ibv_bind_mw), as the kernel reads it. */
static void fill_bind(struct ferroce_send_wqe *w, const struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *info)
{
	w->wr.bind.addr = info->addr;
	w->wr.bind.length = info->length;
	w->wr.bind.mw_rkey = mw ? mw->rkey : 0;
	w->wr.bind.rkey = rkey;
	w->wr.bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	w->wr.bind.access = info->mw_access_flags;
}

static void fill_send_wqe(struct ferroce_send_wqe *w, const struct ibv_send_wr *wr)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_data = wr->imm_data;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		w->wr.atomic.swap = wr->wr.atomic.swap;
		w->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		w->imm_data = wr->invalidate_rkey;
		break;
	case IBV_WR_BIND_MW:
		fill_bind(w, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	default:
		break;
	}
}

/* Whether a QP in state can take send work (IBTA 10.8.2, C10-97.2.1). */
static bool sq_accepts_work(enum ibv_qp_state state)
{
	switch (state) {
	case IBV_QPS_RESET:
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		return false;
	default:
		/* RTS, SQD (queued), SQE and ERR (flushed at once). */
		return true;
	}
}

static int ferroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad_wr)
{
	struct ferroce_qp *qp = to_fqp(ibqp);
	struct ibv_send_wr *first = wr;
	struct ferroce_send_wqe w;
	int ret = 0, doorbell;

	if (!bad_wr)
		return EINVAL;
	*bad_wr = NULL;
	/*
	 * Refused before anything is written: work published now would stay
	 * in the ring and be executed (or flushed) by a later state.
	 */
	if (!sq_accepts_work(ibqp->state)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		fill_send_wqe(&w, wr);
		if (ibqp->qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah) {
				ret = EINVAL;
				*bad_wr = wr;
				break;
			}
			w.wr.ud.ah_num = to_fah(wr->wr.ud.ah)->ah_num;
			w.wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
			w.wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		}
		/* Checked against the QP's caps, then written (Rust). */
		ret = ferroce_sq_post(&qp->sq, &w,
				      (const struct ferroce_sge *)wr->sg_list,
				      wr->num_sge);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	/* 1 only if this call wrote work and the kernel asks to be told. */
	doorbell = ferroce_wq_publish(&qp->sq);
	pthread_spin_unlock(&qp->sq_lock);
	if (doorbell) {
		int db = ring_doorbell(ibqp, IB_USER_VERBS_CMD_POST_SEND);

		/* See "A failed doorbell". */
		if (db) {
			*bad_wr = first;
			ret = db;
		}
	}
	return ret;
}

/*
 * ibv_bind_mw (type 1 windows): a BIND_MW work request with the window's
 * next key; the window takes that key once the request is posted (a
 * failed bind's completion tells the caller to undo it, as rxe's does).
 */
static int ferroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = {
		.wr_id = bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int ret;

	if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	ret = ferroce_post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

/*
 * Checks and maps the queue a create SRQ response describes, held to the
 * max_sge the kernel granted; 0 or an errno (the caller destroys the SRQ).
 */
static int srq_map_ring(struct ibv_context *context, struct ferroce_srq *srq,
			uint32_t max_sge,
			const struct ferroce_create_srq_resp *resp)
{
	struct ferroce_wq_caps caps = { .max_sge = max_sge };
	int ret;

	ret = ferroce_rq_check(&resp->mi, resp->wqe_size, &caps);
	if (!ret)
		ret = map_queue(context, &resp->mi, &srq->ring);
	if (ret)
		return ret;
	ferroce_wq_init(&srq->wq, srq->ring.addr, resp->mi.num_entries,
			resp->wqe_size, &caps);
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static struct ibv_srq *ferroce_create_srq(struct ibv_pd *pd,
					  struct ibv_srq_init_attr *attr)
{
	struct uferroce_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct ferroce_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}

	/* libibverbs copied the granted max_sge into attr. */
	ret = srq_map_ring(pd->context, srq, attr->attr.max_sge,
			   &resp.drv_payload);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->vsrq.srq;
}

/*
 * ibv_create_srq_ex.  libibverbs sends basic SRQs that ask for nothing but
 * a PD (and the type) to create_srq; the others come here.  Only basic
 * SRQs exist (no XRC, no tag matching); a basic SRQ's CQ (comp_mask CQ) is
 * meaningless and ignored, as the kernel ignores it.
 */
static struct ibv_srq *ferroce_create_srq_ex(struct ibv_context *context,
					     struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t supported = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
				   IBV_SRQ_INIT_ATTR_CQ;
	struct uferroce_create_srq_ex_resp resp = {};
	struct uferroce_create_srq_ex cmd = {};
	struct ferroce_srq *srq;
	int ret;

	if ((attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}

	ret = srq_map_ring(context, srq, attr->attr.max_sge, &resp.drv_payload);
	if (ret) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		free(srq);
		errno = ret;
		return NULL;
	}
	return &srq->vsrq.srq;
}

static int ferroce_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			      int attr_mask)
{
	struct ferroce_srq *srq = to_fsrq(ibsrq);
	struct uferroce_modify_srq cmd = {};
	struct ferroce_mmap_info mi = {};
	struct ferroce_wq_caps caps;
	int ret;

	/* A resize moves the ring: no post may run meanwhile. */
	pthread_spin_lock(&srq->lock);
	cmd.mmap_info_addr = (uintptr_t)&mi;
	ret = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (ret || !(attr_mask & IBV_SRQ_MAX_WR))
		goto out;

	/*
	 * The kernel moved the WQEs not yet taken to the new ring and set its
	 * producer index; the entries keep their size and the SRQ its caps.
	 */
	caps = srq->wq.caps;
	ret = ferroce_rq_check(&mi, srq->wq.wqe_size, &caps);
	if (!ret)
		ret = remap_queue(ibsrq->context, &mi, &srq->ring);
	if (ret) {
		/*
		 * The kernel no longer reads the old ring: work posted there
		 * would be lost without a trace.  Drop it; posts fail from now
		 * on (EIO), and the SRQ can only be destroyed.
		 */
		unmap_queue(&srq->ring);
		goto out;
	}
	ferroce_wq_init(&srq->wq, srq->ring.addr, mi.num_entries,
			srq->wq.wqe_size, &caps);
out:
	pthread_spin_unlock(&srq->lock);
	return ret;
}

static int ferroce_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

static int ferroce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ferroce_srq *srq = to_fsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;

	unmap_queue(&srq->ring);
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

static int ferroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
				 struct ibv_recv_wr **bad_wr)
{
	struct ferroce_srq *srq = to_fsrq(ibsrq);
	int ret;

	if (!bad_wr)
		return EINVAL;
	*bad_wr = NULL;
	/* An SRQ needs no doorbell: its work is taken as messages arrive. */
	pthread_spin_lock(&srq->lock);
	if (srq->ring.addr) {
		ret = post_recv_wrs(&srq->wq, wr, bad_wr);
		ferroce_wq_publish(&srq->wq);
	} else {
		/* A resize failed (see ferroce_modify_srq). */
		*bad_wr = wr;
		ret = EIO;
	}
	pthread_spin_unlock(&srq->lock);
	return ret;
}

/* Checks and maps a new CQ's ring; 0 or an errno (the caller destroys it). */
static int cq_map_ring(struct ibv_context *context, struct ferroce_cq *cq,
		       const struct ferroce_mmap_info *mi)
{
	int ret = ferroce_cq_check(mi);

	if (!ret)
		ret = map_queue(context, mi, &cq->ring);
	if (ret)
		return ret;
	ferroce_cq_init(&cq->state, cq->ring.addr, mi->num_entries);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
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

	ret = cq_map_ring(context, cq, &resp.mi);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		free(cq);
		errno = ret;
		return NULL;
	}
	return &cq->vcq.cq;
}

static int ferroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	struct uferroce_resize_cq_resp resp = {};
	struct ibv_resize_cq cmd = {};
	int ret;

	pthread_spin_lock(&cq->lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto out;

	/* The kernel moved the unpolled completions to the new ring. */
	ret = ferroce_cq_check(&resp.mi);
	if (!ret)
		ret = remap_queue(ibcq->context, &resp.mi, &cq->ring);
	if (ret) {
		/*
		 * The old ring gets no more completions: polling it would
		 * wait forever.  Drop it; polls fail from now on and the CQ
		 * can only be destroyed.
		 */
		unmap_queue(&cq->ring);
		goto out;
	}
	ferroce_cq_remap(&cq->state, cq->ring.addr, resp.mi.num_entries);
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

	unmap_queue(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* ferroce_cq_poll copies the head of each struct ferroce_cqe as a struct ibv_wc. */
#define SAME_FIELD(f)                                                        \
	static_assert(offsetof(struct ibv_wc, f) ==                           \
			      offsetof(struct ferroce_cqe, f) &&              \
		      sizeof(((struct ibv_wc *)0)->f) ==                      \
			      sizeof(((struct ferroce_cqe *)0)->f),           \
		      "struct ferroce_cqe must start like struct ibv_wc: " #f)
SAME_FIELD(wr_id);
SAME_FIELD(status);
SAME_FIELD(opcode);
SAME_FIELD(vendor_err);
SAME_FIELD(byte_len);
SAME_FIELD(imm_data);
SAME_FIELD(qp_num);
SAME_FIELD(src_qp);
SAME_FIELD(wc_flags);
SAME_FIELD(pkey_index);
SAME_FIELD(slid);
SAME_FIELD(sl);
SAME_FIELD(dlid_path_bits);
static_assert(sizeof(struct ibv_wc) == 48, "struct ibv_wc changed size");

/*
 * What provider/ring assumes of the structures it shares with this file and
 * with the kernel: it cannot see these headers, so it hard-codes offsets,
 * sizes and values, and asserts the same numbers on its side (the
 * "layouts" asserts in provider/ring/src/lib.rs).  A change on either side
 * fails one of the two builds instead of corrupting a ring.
 */
#define AT(type, field, off)                                                 \
	static_assert(offsetof(type, field) == (off),                        \
		      #type "." #field " is at " #off " in provider/ring")
#define SIZE(type, size)                                                     \
	static_assert(sizeof(type) == (size), #type " is " #size " bytes in provider/ring")

/* struct CqState, struct WqCaps, struct WqState, struct MmapInfo. */
SIZE(struct ferroce_cq_state, 16);
AT(struct ferroce_cq_state, base, 0);
AT(struct ferroce_cq_state, num_entries, 8);
AT(struct ferroce_cq_state, consumer, 12);
SIZE(struct ferroce_wq_caps, 12);
AT(struct ferroce_wq_caps, qp_type, 0);
AT(struct ferroce_wq_caps, max_sge, 4);
AT(struct ferroce_wq_caps, max_inline, 8);
SIZE(struct ferroce_wq_state, 40);
AT(struct ferroce_wq_state, base, 0);
AT(struct ferroce_wq_state, num_entries, 8);
AT(struct ferroce_wq_state, wqe_size, 12);
AT(struct ferroce_wq_state, producer, 16);
AT(struct ferroce_wq_state, unpublished, 20);
AT(struct ferroce_wq_state, caps, 24);
SIZE(struct ferroce_mmap_info, 16);
AT(struct ferroce_mmap_info, offset, 0);
AT(struct ferroce_mmap_info, size, 8);
AT(struct ferroce_mmap_info, num_entries, 12);

/* The rings (module layout): control block, entries, flags. */
AT(struct ferroce_queue_ctrl, producer, 0);
AT(struct ferroce_queue_ctrl, consumer, 64);
AT(struct ferroce_queue_ctrl, notify, 128);
AT(struct ferroce_queue_ctrl, flags, 132);
static_assert(sizeof(struct ferroce_queue_ctrl) <= FERROCE_QUEUE_ENTRIES &&
		      FERROCE_QUEUE_ENTRIES == 256,
	      "entries start at 256 in provider/ring");
static_assert(FERROCE_QUEUE_ERROR == 1 && FERROCE_QUEUE_OVERFLOW == 2 &&
		      FERROCE_QUEUE_NEED_WAKEUP == 4 &&
		      FERROCE_CQ_NOTIFY_NEXT == 1 &&
		      FERROCE_CQ_NOTIFY_SOLICITED == 2,
	      "queue flags and notify values as in provider/ring");
SIZE(struct ferroce_cqe, 64);
/* struct Cqe and struct Wc; SAME_FIELD above ties struct ibv_wc to these. */
AT(struct ferroce_cqe, wr_id, 0);
AT(struct ferroce_cqe, status, 8);
AT(struct ferroce_cqe, opcode, 12);
AT(struct ferroce_cqe, vendor_err, 16);
AT(struct ferroce_cqe, byte_len, 20);
AT(struct ferroce_cqe, imm_data, 24);
AT(struct ferroce_cqe, qp_num, 28);
AT(struct ferroce_cqe, src_qp, 32);
AT(struct ferroce_cqe, wc_flags, 36);
AT(struct ferroce_cqe, pkey_index, 40);
AT(struct ferroce_cqe, slid, 42);
AT(struct ferroce_cqe, sl, 44);
AT(struct ferroce_cqe, dlid_path_bits, 45);

/*
 * Work queue entries: ferroce_sq_post copies the 64-byte header this file
 * fills, reads opcode, send_flags and the remote address from it, and
 * writes num_sge and inline_len; ferroce_rq_post writes a whole
 * struct ferroce_recv_wqe.
 */
SIZE(struct ferroce_send_wqe, 64);
AT(struct ferroce_send_wqe, wr_id, 0);
AT(struct ferroce_send_wqe, opcode, 8);
AT(struct ferroce_send_wqe, send_flags, 12);
AT(struct ferroce_send_wqe, num_sge, 16);
AT(struct ferroce_send_wqe, inline_len, 20);
AT(struct ferroce_send_wqe, wr.rdma.remote_addr, 32);
AT(struct ferroce_send_wqe, wr.atomic.remote_addr, 32);
AT(struct ferroce_send_wqe, sge, 64);
SIZE(struct ferroce_recv_wqe, 16);
AT(struct ferroce_recv_wqe, wr_id, 0);
AT(struct ferroce_recv_wqe, num_sge, 8);
AT(struct ferroce_recv_wqe, reserved, 12);
AT(struct ferroce_recv_wqe, sge, 16);

/* struct ibv_sge is passed to provider/ring as a struct ferroce_sge. */
#define SAME_SGE(f)                                                          \
	static_assert(offsetof(struct ibv_sge, f) ==                          \
			      offsetof(struct ferroce_sge, f) &&              \
		      sizeof(((struct ibv_sge *)0)->f) ==                     \
			      sizeof(((struct ferroce_sge *)0)->f),           \
		      "struct ibv_sge must have the layout of struct ferroce_sge: " #f)
SAME_SGE(addr);
SAME_SGE(length);
SAME_SGE(lkey);
SIZE(struct ibv_sge, 16);
SIZE(struct ferroce_sge, 16);
AT(struct ferroce_sge, addr, 0);
AT(struct ferroce_sge, length, 8);
AT(struct ferroce_sge, lkey, 12);

/* The ibv_qp_ex batch and the ibv_cq_ex cursor (provider/ring). */
SIZE(struct ferroce_sq_batch, 96);
AT(struct ferroce_sq_batch, header, 0);
AT(struct ferroce_sq_batch, slot, 64);
AT(struct ferroce_sq_batch, length, 72);
AT(struct ferroce_sq_batch, err, 80);
AT(struct ferroce_sq_batch, open, 84);
AT(struct ferroce_sq_batch, ud_set, 88);
SIZE(struct ferroce_cq_cursor, 72);
AT(struct ferroce_cq_cursor, cqe, 0);
AT(struct ferroce_cq_cursor, held, 64);
AT(struct ferroce_cq_cursor, reserved, 68);
/* struct DataBuf, and the UD fields ferroce_sq_batch_ud writes. */
SIZE(struct ibv_data_buf, 16);
AT(struct ibv_data_buf, addr, 0);
AT(struct ibv_data_buf, length, 8);
AT(struct ferroce_send_wqe, imm_data, 24);
AT(struct ferroce_send_wqe, wr.ud.ah_num, 32);
AT(struct ferroce_send_wqe, wr.ud.remote_qpn, 36);
AT(struct ferroce_send_wqe, wr.ud.remote_qkey, 40);
/* The kernel reads an ATOMIC_WRITE's value here (abi::ATOMIC_WRITE_VALUE). */
AT(struct ferroce_send_wqe, wr.atomic_write.remote_addr, 32);
AT(struct ferroce_send_wqe, wr.atomic_write.rkey, 40);
AT(struct ferroce_send_wqe, wr.atomic_write.value, 48);
/* provider/ring (layout::SEND_FLUSH_*) and the kernel read a FLUSH's fields here. */
AT(struct ferroce_send_wqe, wr.flush.remote_addr, 32);
AT(struct ferroce_send_wqe, wr.flush.length, 40);
AT(struct ferroce_send_wqe, wr.flush.rkey, 48);
AT(struct ferroce_send_wqe, wr.flush.type, 52);
AT(struct ferroce_send_wqe, wr.flush.level, 53);
/* send_ops_ok: bit n of send_ops_flags is opcode n, up to SEND_WITH_INV. */
static_assert(IBV_QP_EX_WITH_RDMA_WRITE == 1 << IBV_WR_RDMA_WRITE &&
		      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM ==
			      1 << IBV_WR_RDMA_WRITE_WITH_IMM &&
		      IBV_QP_EX_WITH_SEND == 1 << IBV_WR_SEND &&
		      IBV_QP_EX_WITH_SEND_WITH_IMM == 1 << IBV_WR_SEND_WITH_IMM &&
		      IBV_QP_EX_WITH_RDMA_READ == 1 << IBV_WR_RDMA_READ &&
		      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP ==
			      1 << IBV_WR_ATOMIC_CMP_AND_SWP &&
		      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD ==
			      1 << IBV_WR_ATOMIC_FETCH_AND_ADD &&
		      IBV_QP_EX_WITH_LOCAL_INV == 1 << IBV_WR_LOCAL_INV &&
		      IBV_QP_EX_WITH_BIND_MW == 1 << IBV_WR_BIND_MW &&
		      IBV_QP_EX_WITH_SEND_WITH_INV == 1 << IBV_WR_SEND_WITH_INV &&
		      IBV_QP_EX_WITH_FLUSH == 1 << 11 &&
		      IBV_QP_EX_WITH_ATOMIC_WRITE == 1 << 12,
	      "IBV_QP_EX_WITH_* as in provider/ring (send_ops_ok)");

/* The verbs values provider/ring checks work requests against. */
static_assert(IBV_WR_RDMA_WRITE == 0 && IBV_WR_RDMA_WRITE_WITH_IMM == 1 &&
		      IBV_WR_SEND == 2 && IBV_WR_SEND_WITH_IMM == 3 &&
		      IBV_WR_RDMA_READ == 4 && IBV_WR_ATOMIC_CMP_AND_SWP == 5 &&
		      IBV_WR_ATOMIC_FETCH_AND_ADD == 6 &&
		      IBV_WR_LOCAL_INV == 7 && IBV_WR_BIND_MW == 8 &&
		      IBV_WR_SEND_WITH_INV == 9 && IBV_WR_FLUSH == 14 &&
		      IBV_WR_ATOMIC_WRITE == 15,
	      "enum ibv_wr_opcode as in provider/ring (mod opcode)");
static_assert(IBV_QPT_RC == 2 && IBV_QPT_UC == 3 && IBV_QPT_UD == 4,
	      "enum ibv_qp_type as in provider/ring (mod qp_type)");
static_assert(IBV_SEND_INLINE == 8, "IBV_SEND_INLINE as in provider/ring");

static int ferroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	int n;

	pthread_spin_lock(&cq->lock);
	/* No ring: a resize failed (see ferroce_resize_cq). */
	n = cq->ring.addr ? ferroce_cq_poll(&cq->state, wc, ne) : -1;
	pthread_spin_unlock(&cq->lock);
	/*
	 * -1: the kernel put the CQ in error, or it overflowed (the owner got
	 * IBV_EVENT_CQ_ERR) and the completions it held are all polled.
	 */
	return n;
}

static int ferroce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct ferroce_cq *cq = to_fcq(ibcq);
	int ret = 0;

	/*
	 * Armed in shared memory, no system call (see ferroce-abi.h): an
	 * atomic OR and a full barrier.  Under the CQ lock, which a resize
	 * holds while it moves the CQ to a new ring: arming the old ring
	 * would be lost.
	 */
	pthread_spin_lock(&cq->lock);
	if (cq->ring.addr)
		ferroce_cq_arm(&cq->state, solicited_only);
	else
		ret = EIO; /* a resize failed (see ferroce_resize_cq) */
	pthread_spin_unlock(&cq->lock);
	return ret;
}

/*
 * The extended CQ (ibv_create_cq_ex): one completion at a time, read field
 * by field.  start_poll takes the CQ lock and end_poll drops it, so a
 * resize (which moves the ring) cannot run in between; when start_poll
 * fails the lock is not held and end_poll must not be called (verbs.h).
 * Errors are ferroce_poll_cq's: ENOENT for an empty CQ, EIO for a CQ in
 * error or one whose resize failed, EOVERFLOW for an overflowed CQ holding
 * no more completions (an overflowed CQ never looks empty).
 */
static int ferroce_start_poll(struct ibv_cq_ex *ibcqx,
			      struct ibv_poll_cq_attr *attr)
{
	struct ferroce_cq *cq = cqx_to_fcq(ibcqx);
	int ret;

	/* No poll attribute is defined yet. */
	if (attr && attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	ret = cq->ring.addr ? ferroce_cq_start(&cq->state, &cq->cursor) : EIO;
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		return ret;
	}
	ibcqx->wr_id = cq->cursor.cqe.wr_id;
	ibcqx->status = cq->cursor.cqe.status;
	return 0;
}

static int ferroce_next_poll(struct ibv_cq_ex *ibcqx)
{
	struct ferroce_cq *cq = cqx_to_fcq(ibcqx);
	int ret = ferroce_cq_next(&cq->state, &cq->cursor);

	if (!ret) {
		ibcqx->wr_id = cq->cursor.cqe.wr_id;
		ibcqx->status = cq->cursor.cqe.status;
	}
	return ret;
}

static void ferroce_end_poll(struct ibv_cq_ex *ibcqx)
{
	struct ferroce_cq *cq = cqx_to_fcq(ibcqx);

	ferroce_cq_end(&cq->state, &cq->cursor);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode ferroce_read_opcode(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.opcode;
}

static uint32_t ferroce_read_vendor_err(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.vendor_err;
}

static uint32_t ferroce_read_byte_len(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.byte_len;
}

/*
 * The CQE's imm_data holds the immediate (big endian) or, with
 * IBV_WC_WITH_INV, the invalidated rkey in host order (as ibv_wc's union
 * has it).  ibv_wc_read_invalidated_rkey byte-swaps what this returns, so
 * the rkey is returned big endian.
 */
static __be32 ferroce_read_imm_data(struct ibv_cq_ex *ibcqx)
{
	const struct ferroce_cqe *cqe = &cqx_to_fcq(ibcqx)->cursor.cqe;

	if (cqe->wc_flags & IBV_WC_WITH_INV)
		return htobe32(cqe->imm_data);
	return (__force __be32)cqe->imm_data;
}

static uint32_t ferroce_read_qp_num(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.qp_num;
}

static uint32_t ferroce_read_src_qp(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.src_qp;
}

static unsigned int ferroce_read_wc_flags(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.wc_flags;
}

static uint32_t ferroce_read_slid(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.slid;
}

static uint8_t ferroce_read_sl(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.sl;
}

static uint8_t ferroce_read_dlid_path_bits(struct ibv_cq_ex *ibcqx)
{
	return cqx_to_fcq(ibcqx)->cursor.cqe.dlid_path_bits;
}

/*
 * The wc_flags a ferroce CQE holds: the fields of struct ibv_wc.  No
 * timestamps, VLANs, flow tags or tag matching: asking for one fails with
 * EOPNOTSUPP rather than reading garbage.
 */
#define FERROCE_WC_EX_FLAGS ((uint64_t)IBV_WC_STANDARD_FLAGS)

static struct ibv_cq_ex *ferroce_create_cq_ex(struct ibv_context *context,
					      struct ibv_cq_init_attr_ex *attr)
{
	struct uferroce_create_cq_ex_resp resp = {};
	struct uferroce_create_cq_ex cmd = {};
	struct ferroce_cq *cq;
	int ret;

	/*
	 * A parent domain (comp_mask PD) is not supported; of the flags only
	 * SINGLE_THREADED, a hint (the lock stays).  IGNORE_OVERRUN and
	 * completion timestamps would change what the ring means.
	 */
	if ((attr->wc_flags & ~FERROCE_WC_EX_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq_ex(context, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (ret) {
		free(cq);
		errno = ret;
		return NULL;
	}

	ret = cq_map_ring(context, cq, &resp.mi);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		free(cq);
		errno = ret;
		return NULL;
	}

	/* Every field is in every CQE: all readers, whatever was asked for. */
	cq->vcq.cq_ex.start_poll = ferroce_start_poll;
	cq->vcq.cq_ex.next_poll = ferroce_next_poll;
	cq->vcq.cq_ex.end_poll = ferroce_end_poll;
	cq->vcq.cq_ex.read_opcode = ferroce_read_opcode;
	cq->vcq.cq_ex.read_vendor_err = ferroce_read_vendor_err;
	cq->vcq.cq_ex.read_byte_len = ferroce_read_byte_len;
	cq->vcq.cq_ex.read_imm_data = ferroce_read_imm_data;
	cq->vcq.cq_ex.read_qp_num = ferroce_read_qp_num;
	cq->vcq.cq_ex.read_src_qp = ferroce_read_src_qp;
	cq->vcq.cq_ex.read_wc_flags = ferroce_read_wc_flags;
	cq->vcq.cq_ex.read_slid = ferroce_read_slid;
	cq->vcq.cq_ex.read_sl = ferroce_read_sl;
	cq->vcq.cq_ex.read_dlid_path_bits = ferroce_read_dlid_path_bits;
	return &cq->vcq.cq_ex;
}

/*
 * The extended QP (ibv_create_qp_ex): work requests built with ibv_qp_ex's
 * wr_* functions into the same send queue as ibv_post_send, checked by the
 * same rules (provider/ring, sq_batch).  wr_start takes the SQ lock,
 * wr_complete or wr_abort drop it.  Builders and setters cannot fail: the
 * batch's first error is latched and wr_complete returns it, having
 * published none of the batch.  Otherwise wr_complete publishes the batch
 * and rings the doorbell when the kernel asks; a failed doorbell is
 * returned as ibv_post_send returns it ("A failed doorbell": the batch is
 * published and will run or flush).  What ferroce returns where rxe's
 * provider differs: EINVAL (as ibv_post_send) for too many SGEs or too much
 * inline data, where rxe latches ENOSPC; EINVAL for a batch started while
 * the QP's state refuses send work (RESET, INIT, RTR), which rxe lets
 * through.
 */
static void ferroce_wr_begin(struct ibv_qp_ex *ibqpx, struct ferroce_send_wqe *w)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	w->wr_id = ibqpx->wr_id;
	w->send_flags = ibqpx->wr_flags;
	ferroce_sq_batch_begin(&qp->sq, &qp->batch, w);
}

static void ferroce_wr_send(struct ibv_qp_ex *ibqpx)
{
	struct ferroce_send_wqe w = { .opcode = IBV_WR_SEND };

	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm_data)
{
	struct ferroce_send_wqe w = {
		.opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = (__force uint32_t)imm_data,
	};

	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_send_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	/* As ibv_post_send's SEND_WITH_INV: the rkey in imm_data. */
	struct ferroce_send_wqe w = {
		.opcode = IBV_WR_SEND_WITH_INV,
		.imm_data = invalidate_rkey,
	};

	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_local_inv(struct ibv_qp_ex *ibqpx, uint32_t invalidate_rkey)
{
	struct ferroce_send_wqe w = {
		.opcode = IBV_WR_LOCAL_INV,
		.imm_data = invalidate_rkey,
	};

	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw, uint32_t rkey,
			       const struct ibv_mw_bind_info *info)
{
	struct ferroce_send_wqe w = { .opcode = IBV_WR_BIND_MW };

	fill_bind(&w, mw, rkey, info);
	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_rdma(struct ibv_qp_ex *ibqpx, uint32_t opcode,
			    uint32_t rkey, uint64_t remote_addr,
			    uint32_t imm_data)
{
	struct ferroce_send_wqe w = { .opcode = opcode, .imm_data = imm_data };

	w.wr.rdma.remote_addr = remote_addr;
	w.wr.rdma.rkey = rkey;
	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				  uint64_t remote_addr)
{
	ferroce_wr_rdma(ibqpx, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void ferroce_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				      uint64_t remote_addr, __be32 imm_data)
{
	ferroce_wr_rdma(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
			(__force uint32_t)imm_data);
}

static void ferroce_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t remote_addr)
{
	ferroce_wr_rdma(ibqpx, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void ferroce_wr_atomic(struct ibv_qp_ex *ibqpx, uint32_t opcode,
			      uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare_add, uint64_t swap)
{
	struct ferroce_send_wqe w = { .opcode = opcode };

	w.wr.atomic.remote_addr = remote_addr;
	w.wr.atomic.compare_add = compare_add;
	w.wr.atomic.swap = swap;
	w.wr.atomic.rkey = rkey;
	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				      uint64_t remote_addr, uint64_t compare,
				      uint64_t swap)
{
	ferroce_wr_atomic(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
			  compare, swap);
}

static void ferroce_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
					uint64_t remote_addr, uint64_t add)
{
	ferroce_wr_atomic(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey,
			  remote_addr, add, 0);
}

static void ferroce_wr_atomic_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				   uint64_t remote_addr, const void *atomic_wr)
{
	struct ferroce_send_wqe w = { .opcode = IBV_WR_ATOMIC_WRITE };

	/* The 8 bytes travel in the WQE, as they are in memory: no SGE. */
	w.wr.atomic_write.remote_addr = remote_addr;
	w.wr.atomic_write.rkey = rkey;
	memcpy(w.wr.atomic_write.value, atomic_wr, sizeof(w.wr.atomic_write.value));
	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_flush(struct ibv_qp_ex *ibqpx, uint32_t rkey,
			     uint64_t remote_addr, size_t len, uint8_t type,
			     uint8_t level)
{
	struct ferroce_send_wqe w = { .opcode = IBV_WR_FLUSH };

	/* No SGE: a FLUSH moves no bytes. provider/ring checks type and level. */
	w.wr.flush.remote_addr = remote_addr;
	w.wr.flush.length = len;
	w.wr.flush.rkey = rkey;
	w.wr.flush.type = type;
	w.wr.flush.level = level;
	ferroce_wr_begin(ibqpx, &w);
}

static void ferroce_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			       uint64_t addr, uint32_t length)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);
	struct ferroce_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	ferroce_sq_batch_sges(&qp->sq, &qp->batch, &sge, 1);
}

static void ferroce_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num_sge,
				    const struct ibv_sge *sg_list)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	/* struct ibv_sge has the layout of struct ferroce_sge. */
	ferroce_sq_batch_sges(&qp->sq, &qp->batch,
			      (const struct ferroce_sge *)sg_list, num_sge);
}

static void ferroce_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				       size_t length)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	ferroce_sq_batch_inline(&qp->sq, &qp->batch, &buf, 1);
}

static void ferroce_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx,
					    size_t num_buf,
					    const struct ibv_data_buf *buf_list)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	ferroce_sq_batch_inline(&qp->sq, &qp->batch, buf_list, num_buf);
}

static void ferroce_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
				   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	/* ibv_post_send refuses a UD work request without an AH. */
	if (!ah) {
		ferroce_sq_batch_fail(&qp->batch, EINVAL);
		return;
	}
	ferroce_sq_batch_ud(&qp->sq, &qp->batch, to_fah(ah)->ah_num,
			    remote_qpn, remote_qkey);
}

static void ferroce_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	pthread_spin_lock(&qp->sq_lock);
	ferroce_sq_batch_start(&qp->sq, &qp->batch);
	/* As ibv_post_send: nothing is written for a later state to run. */
	if (!sq_accepts_work(qp->vqp.qp.state))
		ferroce_sq_batch_fail(&qp->batch, EINVAL);
}

static int ferroce_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);
	int ret, doorbell;

	ret = ferroce_sq_batch_complete(&qp->sq, &qp->batch, &doorbell);
	pthread_spin_unlock(&qp->sq_lock);
	if (!ret && doorbell)
		ret = ring_doorbell(&qp->vqp.qp, IB_USER_VERBS_CMD_POST_SEND);
	return ret;
}

static void ferroce_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct ferroce_qp *qp = qpx_to_fqp(ibqpx);

	ferroce_sq_batch_abort(&qp->sq, &qp->batch);
	pthread_spin_unlock(&qp->sq_lock);
}

/* The builders of the operations send_ops_flags asks for; others stay NULL. */
static void set_qp_ex_ops(struct ibv_qp_ex *x, uint64_t ops)
{
	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = ferroce_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = ferroce_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = ferroce_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = ferroce_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = ferroce_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = ferroce_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = ferroce_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = ferroce_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = ferroce_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		x->wr_atomic_write = ferroce_wr_atomic_write;
	if (ops & IBV_QP_EX_WITH_FLUSH)
		x->wr_flush = ferroce_wr_flush;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = ferroce_wr_bind_mw;
	x->wr_set_sge = ferroce_wr_set_sge;
	x->wr_set_sge_list = ferroce_wr_set_sge_list;
	x->wr_set_inline_data = ferroce_wr_set_inline_data;
	x->wr_set_inline_data_list = ferroce_wr_set_inline_data_list;
	x->wr_set_ud_addr = ferroce_wr_set_ud_addr;
	x->wr_start = ferroce_wr_start;
	x->wr_complete = ferroce_wr_complete;
	x->wr_abort = ferroce_wr_abort;
}

/*
 * struct verbs_qp keeps comp_mask after its ibv_qp/ibv_qp_ex union, so
 * where comp_mask is depends on the size of struct ibv_qp_ex, which grew
 * after rdma-core 44 (wr_flush was appended) with no change of the private
 * ABI.  This provider is built with v55's headers, but Debian's libibverbs
 * 44 runs it and reads comp_mask (ibv_qp_to_qp_ex tests VERBS_QP_EX there)
 * 8 bytes earlier, where v55 has wr_flush.  Both libraries zero their
 * comp_mask while creating the QP (set_qp in cmd_qp.c): marking both places
 * first shows which one the running library uses.
 */
#define QP_COMP_MASK_MARK 0xfe77ace5u

static uint32_t *old_qp_comp_mask(struct ferroce_qp *qp)
{
	return (uint32_t *)((char *)&qp->vqp.qp_ex +
			    offsetof(struct ibv_qp_ex, wr_flush));
}

static_assert(offsetof(struct verbs_qp, comp_mask) ==
		      offsetof(struct ibv_qp_ex, wr_flush) + sizeof(void *),
	      "struct ibv_qp_ex ends with wr_flush, then comes comp_mask");

static void mark_qp_comp_mask(struct ferroce_qp *qp)
{
	qp->vqp.comp_mask = QP_COMP_MASK_MARK;
	*old_qp_comp_mask(qp) = QP_COMP_MASK_MARK;
}

/*
 * After a QP was created: the comp_mask the library zeroed, the other one
 * cleared; NULL if the library zeroed neither (a layout this provider does
 * not know).
 */
static uint32_t *lib_qp_comp_mask(struct ferroce_qp *qp)
{
	uint32_t *old = old_qp_comp_mask(qp);

	if (qp->vqp.comp_mask != QP_COMP_MASK_MARK) {
		*old = 0; /* wr_flush: no such operation here */
		return &qp->vqp.comp_mask;
	}
	if (*old != QP_COMP_MASK_MARK) {
		qp->vqp.comp_mask = 0;
		return old;
	}
	return NULL;
}

/*
 * ibv_create_qp_ex: a PD (no XRC domain, RSS or indirection table), no
 * create flags, and send_ops_flags the QP type can do (provider/ring,
 * send_ops_ok): anything else fails with EOPNOTSUPP before the kernel is
 * asked, as in rxe's provider.
 */
static struct ibv_qp *ferroce_create_qp_ex(struct ibv_context *context,
					   struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t supported = IBV_QP_INIT_ATTR_PD |
				   IBV_QP_INIT_ATTR_CREATE_FLAGS |
				   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct uferroce_create_qp_ex_resp resp = {};
	struct uferroce_create_qp_ex cmd = {};
	struct ferroce_qp *qp;
	uint32_t *comp_mask;
	int ret;

	if ((attr->comp_mask & ~supported) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = ferroce_send_ops_check(attr->qp_type,
					     attr->send_ops_flags);
		if (ret) {
			errno = ret;
			return NULL;
		}
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	mark_qp_comp_mask(qp);
	ret = ibv_cmd_create_qp_ex2(context, &qp->vqp, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}

	comp_mask = lib_qp_comp_mask(qp);
	/*
	 * Under libibverbs 44 wr_flush is where the library keeps its
	 * comp_mask (it sets VERBS_QP_EX there): no FLUSH for such a QP.  An
	 * application built against 44's headers cannot ask for it anyway.
	 */
	if (comp_mask == old_qp_comp_mask(qp) &&
	    (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & IBV_QP_EX_WITH_FLUSH))
		comp_mask = NULL;
	ret = comp_mask ? qp_map_rings(context, qp, attr->qp_type, &attr->cap,
				       attr->srq, &resp.drv_payload) :
			  EOPNOTSUPP;
	if (ret) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		free(qp);
		errno = ret;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		set_qp_ex_ops(&qp->vqp.qp_ex, attr->send_ops_flags);
	else
		set_qp_ex_ops(&qp->vqp.qp_ex, 0);
	/* ibv_qp_to_qp_ex gives the ibv_qp_ex of this QP only. */
	*comp_mask |= VERBS_QP_EX;
	return &qp->vqp.qp;
}

static const struct verbs_context_ops ferroce_ctx_ops = {
	.alloc_mw = ferroce_alloc_mw,
	.alloc_pd = ferroce_alloc_pd,
	/* Multicast attachments are the kernel's (the receive path reads them). */
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = ferroce_bind_mw,
	.create_ah = ferroce_create_ah,
	.create_cq = ferroce_create_cq,
	.create_cq_ex = ferroce_create_cq_ex,
	.create_qp = ferroce_create_qp,
	.create_qp_ex = ferroce_create_qp_ex,
	.create_srq = ferroce_create_srq,
	.create_srq_ex = ferroce_create_srq_ex,
	.dealloc_mw = ferroce_dealloc_mw,
	.dealloc_pd = ferroce_dealloc_pd,
	.dereg_mr = ferroce_dereg_mr,
	.destroy_ah = ferroce_destroy_ah,
	.destroy_cq = ferroce_destroy_cq,
	.destroy_qp = ferroce_destroy_qp,
	.destroy_srq = ferroce_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.modify_qp = ferroce_modify_qp,
	.modify_srq = ferroce_modify_srq,
	.free_context = ferroce_free_context,
	.query_device_ex = ferroce_query_device_ex,
	.poll_cq = ferroce_poll_cq,
	.post_recv = ferroce_post_recv,
	.post_send = ferroce_post_send,
	.post_srq_recv = ferroce_post_srq_recv,
	.query_qp = ferroce_query_qp,
	.query_port = ferroce_query_port,
	.query_srq = ferroce_query_srq,
	.reg_mr = ferroce_reg_mr,
	.req_notify_cq = ferroce_req_notify_cq,
	.rereg_mr = ferroce_rereg_mr,
	.resize_cq = ferroce_resize_cq,
};

static struct verbs_context *ferroce_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	struct uferroce_alloc_ucontext_resp resp = {};
	struct uferroce_alloc_ucontext cmd = {};
	struct ferroce_context *ctx;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_FERROCE);
	if (!ctx)
		return NULL;

	/*
	 * Features are negotiated (struct ferroce_alloc_ucontext_cmd): ask for
	 * those this provider supports, keep those the kernel enables.  A
	 * kernel that writes no response leaves resp zeroed: no feature.
	 */
	cmd.comp_mask = FERROCE_PROVIDER_FEATURES;
	if (ibv_cmd_get_context(&ctx->ibv_ctx, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp))) {
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		return NULL;
	}
	/* The kernel may only enable what was asked for; ignore anything else. */
	ctx->comp_mask = resp.comp_mask & FERROCE_PROVIDER_FEATURES;

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
