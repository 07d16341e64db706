// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel verbs on an RDMA device, as kernel ULPs use them: ib_alloc_pd (and
 * its DMA MR), kernel CQs (poll, arming, missed events, overrun), RC and UD
 * QPs with work requests posted through ib_post_send/ib_post_recv (flushed
 * in the error state, refused before RTS), fast-registration MRs
 * (ib_alloc_mr, ib_map_mr_sg, IB_WR_REG_MR), kernel AHs, kernel SRQs and
 * ib_drain_qp; and what the kernel::rdma layer promises kernel callers:
 * ib_query_qp writes a whole attribute (zeros where the driver has
 * nothing), ib_modify_qp reads only the attributes its mask names (callers
 * pass partly initialised structs), and QPs without a send or receive CQ
 * are refused.  Loading the module runs every check against the device
 * named by "dev"; it fails to load (-EIO) if one fails, after saying which
 * in the kernel log.
 *
 *   insmod ferroce_kverbs_test.ko dev=ferroce0
 */
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/scatterlist.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "ferroce0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "the RDMA device to test");

#define CHECK(cond, fmt, ...)                                                \
	do {                                                                 \
		if (!(cond)) {                                               \
			pr_err("ferroce_kverbs_test: FAIL: " fmt "\n",       \
			       ##__VA_ARGS__);                               \
			return -EIO;                                         \
		}                                                            \
	} while (0)

#define OK(fmt, ...) pr_info("ferroce_kverbs_test: ok: " fmt "\n", ##__VA_ARGS__)

struct env {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	void *buf;		/* 8 pages */
	atomic_t comps;		/* completion handler calls */
	atomic_t cq_errs;	/* IB_EVENT_CQ_ERR */
};

static void comp_handler(struct ib_cq *cq, void *ctx)
{
	struct env *e = ctx;

	atomic_inc(&e->comps);
}

static void cq_event(struct ib_event *ev, void *ctx)
{
	struct env *e = ctx;

	if (ev->event == IB_EVENT_CQ_ERR)
		atomic_inc(&e->cq_errs);
}

static struct ib_qp *make_qp(struct env *e, struct ib_cq *cq,
			     enum ib_qp_type type, struct ib_srq *srq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = type,
	};

	return ib_create_qp(e->pd, &init);
}

static int to_init(struct ib_qp *qp)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qkey = 0x11111111,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE,
	};
	int mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;

	mask |= qp->qp_type == IB_QPT_UD ? IB_QP_QKEY : IB_QP_ACCESS_FLAGS;
	return ib_modify_qp(qp, &a, mask);
}

static int to_state(struct ib_qp *qp, enum ib_qp_state s)
{
	struct ib_qp_attr a = { .qp_state = s };

	return ib_modify_qp(qp, &a, IB_QP_STATE);
}

static int post_recv(struct env *e, struct ib_qp *qp, u64 wr_id)
{
	struct ib_sge sge = { (uintptr_t)e->buf, 64, e->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

/* One completion, flushed, of the work request wr_id on qp. */
static int expect_flushed(struct env *e, struct ib_qp *qp, u64 wr_id,
			  enum ib_wc_opcode opcode)
{
	struct ib_wc wc;
	int n = ib_poll_cq(e->cq, 1, &wc);

	CHECK(n == 1, "no completion for wr_id %llu (poll %d)", wr_id, n);
	CHECK(wc.wr_id == wr_id && wc.status == IB_WC_WR_FLUSH_ERR &&
		      wc.qp == qp && wc.opcode == opcode,
	      "completion wr_id %llu status %d opcode %d qp %p; expected %llu flushed, opcode %d, qp %p",
	      wc.wr_id, wc.status, wc.opcode, wc.qp, wr_id, opcode, qp);
	return 0;
}

/* Polls cq for one completion, for up to two seconds. */
static int wait_wc(struct ib_cq *cq, struct ib_wc *wc)
{
	int i, n;

	for (i = 0; i < 2000; i++) {
		n = ib_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep_range(500, 1000);
	}
	return 0;
}

static noinline int check_pd(struct env *e)
{
	CHECK(e->pd->local_dma_lkey != 0 && e->pd->__internal_mr,
	      "ib_alloc_pd gave no DMA MR (local_dma_lkey %#x)",
	      e->pd->local_dma_lkey);
	OK("ib_alloc_pd: DMA MR, local_dma_lkey %#x", e->pd->local_dma_lkey);
	return 0;
}

static noinline int check_rc_flush(struct env *e)
{
	struct ib_sge sge = { (uintptr_t)e->buf, 64, e->pd->local_dma_lkey };
	struct ib_rdma_wr write = {
		.wr = { .wr_id = 21, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE },
		.remote_addr = (uintptr_t)e->buf,
		.rkey = 0x1234,
	};
	struct ib_send_wr send = { .next = &write.wr, .wr_id = 20,
				   .sg_list = &sge, .num_sge = 1,
				   .opcode = IB_WR_SEND,
				   .send_flags = IB_SEND_SIGNALED };
	struct ib_send_wr inl = { .wr_id = 22, .sg_list = &sge, .num_sge = 1,
				  .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_INLINE };
	static struct ib_sge sges[33];
	struct ib_recv_wr too_many = { .wr_id = 9, .sg_list = sges, .num_sge = 33 };
	const struct ib_send_wr *bad;
	struct ib_qp *qp;
	struct ib_wc wc;
	int ret, i;

	qp = make_qp(e, e->cq, IB_QPT_RC, NULL);
	CHECK(!IS_ERR(qp), "create RC QP: %ld", PTR_ERR(qp));
	CHECK(to_init(qp) == 0, "RC QP to INIT");
	for (i = 0; i < 3; i++)
		CHECK(post_recv(e, qp, 10 + i) == 0, "post_recv %d", i);
	CHECK(ib_post_recv(qp, &too_many, NULL) == -EINVAL,
	      "a receive with more SGEs than max_recv_sge");
	ret = ib_post_send(qp, &send, &bad);
	CHECK(ret == -EINVAL && bad == &send, "post_send in INIT: %d", ret);
	CHECK(ib_poll_cq(e->cq, 1, &wc) == 0, "completions before the flush");
	OK("RC QP: receives queued in INIT, sends refused before RTS");

	CHECK(ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP) == 0, "req_notify_cq");
	atomic_set(&e->comps, 0);
	CHECK(to_state(qp, IB_QPS_ERR) == 0, "RC QP to ERR");
	CHECK(atomic_read(&e->comps) == 1, "completion handler called %d times",
	      atomic_read(&e->comps));
	for (i = 0; i < 3; i++)
		if (expect_flushed(e, qp, 10 + i, IB_WC_RECV))
			return -EIO;
	CHECK(ib_poll_cq(e->cq, 1, &wc) == 0, "a fourth completion");
	OK("ERR flushes the 3 receives in order, wc.qp set; the armed CQ called its handler once");

	ret = ib_post_send(qp, &send, &bad);
	CHECK(ret == 0, "post_send chain in ERR: %d", ret);
	if (expect_flushed(e, qp, 20, IB_WC_SEND) ||
	    expect_flushed(e, qp, 21, IB_WC_RDMA_WRITE))
		return -EIO;
	CHECK(ib_post_send(qp, &inl, NULL) == 0, "inline send in ERR");
	if (expect_flushed(e, qp, 22, IB_WC_SEND))
		return -EIO;
	CHECK(atomic_read(&e->comps) == 1, "a disarmed CQ called its handler");
	OK("work posted in ERR (a chain, an RDMA WRITE, inline data) is flushed at once");

	CHECK(ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP |
				      IB_CQ_REPORT_MISSED_EVENTS) == 0,
	      "missed events reported on an empty CQ");
	CHECK(post_recv(e, qp, 13) == 0, "post_recv in ERR");
	CHECK(atomic_read(&e->comps) == 2, "the re-armed CQ did not call its handler");
	CHECK(ib_req_notify_cq(e->cq, IB_CQ_NEXT_COMP |
				      IB_CQ_REPORT_MISSED_EVENTS) > 0,
	      "a waiting completion not reported as missed");
	if (expect_flushed(e, qp, 13, IB_WC_RECV))
		return -EIO;
	OK("req_notify_cq: IB_CQ_REPORT_MISSED_EVENTS says whether completions wait");
	ib_destroy_qp(qp);
	return 0;
}

static noinline int check_fast_reg(struct env *e)
{
	struct scatterlist sg[5];
	struct ib_reg_wr reg = { .wr = { .wr_id = 30, .opcode = IB_WR_REG_MR,
					 .send_flags = IB_SEND_SIGNALED },
				 .access = IB_ACCESS_LOCAL_WRITE |
					   IB_ACCESS_REMOTE_WRITE };
	struct ib_qp *qp;
	struct ib_mr *mr;
	int n, i;

	/* ULPs (nvme-rdma, iSER, NFS/RDMA) use fast registration only where this says so. */
	CHECK(e->pd->device->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS,
	      "IB_DEVICE_MEM_MGT_EXTENSIONS is not set: ULPs will not register memory");
	mr = ib_alloc_mr(e->pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK(!IS_ERR(mr), "ib_alloc_mr: %ld", PTR_ERR(mr));
	sg_init_table(sg, 5);
	for (i = 0; i < 5; i++)
		sg_set_buf(&sg[i], e->buf + i * PAGE_SIZE, PAGE_SIZE);
	CHECK(ib_dma_map_sg(e->ibdev, sg, 3, DMA_BIDIRECTIONAL) == 3, "map sg");
	n = ib_map_mr_sg(mr, sg, 3, NULL, PAGE_SIZE);
	CHECK(n == 3, "ib_map_mr_sg of 3 pages: %d", n);
	CHECK(mr->iova == (uintptr_t)e->buf && mr->length == 3 * PAGE_SIZE,
	      "mapped MR: iova %llx length %llu", mr->iova, mr->length);
	ib_dma_unmap_sg(e->ibdev, sg, 3, DMA_BIDIRECTIONAL);
	CHECK(ib_dma_map_sg(e->ibdev, sg, 5, DMA_BIDIRECTIONAL) == 5, "map sg");
	n = ib_map_mr_sg(mr, sg, 5, NULL, PAGE_SIZE);
	CHECK(n == 4, "5 pages into an MR of 4: %d mapped", n);
	ib_dma_unmap_sg(e->ibdev, sg, 5, DMA_BIDIRECTIONAL);
	OK("ib_alloc_mr + ib_map_mr_sg: pages listed, iova and length set, capacity enforced");

	qp = make_qp(e, e->cq, IB_QPT_RC, NULL);
	CHECK(!IS_ERR(qp), "create RC QP");
	CHECK(to_init(qp) == 0 && to_state(qp, IB_QPS_ERR) == 0, "QP to ERR");
	reg.mr = mr;
	reg.key = mr->rkey ^ 0x1000;		/* another index */
	CHECK(ib_post_send(qp, &reg.wr, NULL) == -EINVAL,
	      "REG_MR with a key of another MR index");
	reg.key = ib_inc_rkey(mr->rkey);
	CHECK(ib_post_send(qp, &reg.wr, NULL) == 0, "REG_MR in ERR");
	if (expect_flushed(e, qp, 30, IB_WC_REG_MR))
		return -EIO;
	OK("IB_WR_REG_MR: a key of another MR refused; flushed as IB_WC_REG_MR");
	ib_destroy_qp(qp);
	CHECK(ib_dereg_mr(mr) == 0, "dereg fast-reg MR");
	return 0;
}

static noinline int check_ud(struct env *e)
{
	struct ib_sge sge = { (uintptr_t)e->buf, 64, e->pd->local_dma_lkey };
	struct ib_ud_wr ud = { .wr = { .wr_id = 40, .sg_list = &sge,
				       .num_sge = 1, .opcode = IB_WR_SEND,
				       .send_flags = IB_SEND_SIGNALED },
			       .remote_qpn = 1, .remote_qkey = 0x11111111 };
	struct rdma_ah_attr attr = {};
	struct ib_qp_init_attr init_attr;
	struct ib_qp_attr a = {};
	union ib_gid gid;
	struct ib_ah *ah;
	struct ib_qp *qp;
	struct ib_wc wc;
	int ret;

	CHECK(rdma_query_gid(e->ibdev, 1, 1, &gid) == 0, "GID index 1");
	attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr, 1);
	rdma_ah_set_grh(&attr, &gid, 0, 1, 64, 0);
	eth_broadcast_addr(attr.roce.dmac);
	ah = rdma_create_ah(e->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	CHECK(!IS_ERR(ah), "rdma_create_ah: %ld", PTR_ERR(ah));

	qp = make_qp(e, e->cq, IB_QPT_UD, NULL);
	CHECK(!IS_ERR(qp), "create UD QP: %ld", PTR_ERR(qp));
	CHECK(to_init(qp) == 0, "UD QP to INIT");
	CHECK(to_state(qp, IB_QPS_RTR) == 0, "UD QP to RTR");
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 1;
	CHECK(ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN) == 0, "UD QP to RTS");
	ret = ib_post_send(qp, &ud.wr, NULL);
	CHECK(ret == -EINVAL, "a UD send without an AH: %d", ret);
	ud.ah = ah;
	CHECK(ib_post_send(qp, &ud.wr, NULL) == 0, "a UD send in RTS");
	/*
	 * To QP1 of this device with a Q_Key that is not QP1's: dropped there,
	 * but sent (UD has no acknowledgement), so it completes successfully.
	 */
	CHECK(wait_wc(e->cq, &wc) == 1 && wc.wr_id == 40 &&
		      wc.status == IB_WC_SUCCESS && wc.qp == qp,
	      "the UD send's completion: wr_id %llu status %d",
	      (unsigned long long)wc.wr_id, wc.status);
	ud.wr.wr_id = 41;
	ud.wr.num_sge = 1;
	sge.length = 8192;	/* more than a datagram */
	CHECK(ib_post_send(qp, &ud.wr, NULL) == 0, "an oversized UD send");
	CHECK(wait_wc(e->cq, &wc) == 1 && wc.wr_id == 41 &&
		      wc.status == IB_WC_LOC_LEN_ERR && wc.qp == qp,
	      "the oversized UD send's completion: wr_id %llu status %d",
	      (unsigned long long)wc.wr_id, wc.status);
	CHECK(ib_query_qp(qp, &a, IB_QP_STATE, &init_attr) == 0 &&
		      a.qp_state == IB_QPS_SQE,
	      "UD QP state %d after a failed send", a.qp_state);
	a.qp_state = IB_QPS_RTS;
	a.cur_qp_state = IB_QPS_SQE;
	CHECK(ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_CUR_STATE) == 0,
	      "UD QP from SQE back to RTS, as ib_mad recovers QP1");
	OK("UD QP: kernel AH, a send completes; an oversized one fails (LOC_LEN_ERR, SQE), SQE -> RTS recovers");
	ib_destroy_qp(qp);
	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	return 0;
}

static noinline int check_overrun(struct env *e)
{
	struct ib_cq_init_attr ca = { .cqe = 4 };
	struct ib_cq *small;
	struct ib_qp *qp;
	struct ib_wc wc[8];
	int i, n;

	small = ib_create_cq(e->ibdev, comp_handler, cq_event, e, &ca);
	CHECK(!IS_ERR(small), "create CQ of 4");
	qp = make_qp(e, small, IB_QPT_RC, NULL);
	CHECK(!IS_ERR(qp) && to_init(qp) == 0, "QP on the small CQ");
	for (i = 0; i < 7; i++)
		CHECK(post_recv(e, qp, 50 + i) == 0, "post_recv %d", i);
	atomic_set(&e->cq_errs, 0);
	CHECK(to_state(qp, IB_QPS_ERR) == 0, "to ERR");
	CHECK(atomic_read(&e->cq_errs) == 1, "IB_EVENT_CQ_ERR %d times",
	      atomic_read(&e->cq_errs));
	n = ib_poll_cq(small, 8, wc);
	CHECK(n == 4 && wc[0].wr_id == 50 && wc[3].wr_id == 53,
	      "an overrun CQ of 4 gave %d completions", n);
	OK("CQ overrun: IB_EVENT_CQ_ERR once, the 4 completions it held intact");
	ib_destroy_qp(qp);
	ib_destroy_cq(small);
	return 0;
}

static noinline int check_srq(struct env *e)
{
	struct ib_srq_init_attr init = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ib_sge sge = { (uintptr_t)e->buf, 64, e->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct ib_srq_attr a;
	struct ib_srq *srq;
	struct ib_qp *qp;
	int i, ret;

	srq = ib_create_srq(e->pd, &init);
	CHECK(!IS_ERR(srq), "ib_create_srq: %ld", PTR_ERR(srq));
	for (i = 0; i < 8; i++) {
		wr.wr_id = 60 + i;
		CHECK(ib_post_srq_recv(srq, &wr, NULL) == 0, "post_srq_recv %d", i);
	}
	ret = ib_post_srq_recv(srq, &wr, NULL);
	CHECK(ret == -ENOMEM, "a 9th WQE in an SRQ of 8: %d", ret);
	CHECK(ib_query_srq(srq, &a) == 0 && a.max_wr == 8, "query SRQ");
	qp = make_qp(e, e->cq, IB_QPT_RC, srq);
	CHECK(!IS_ERR(qp), "QP on the SRQ: %ld", PTR_ERR(qp));
	CHECK(post_recv(e, qp, 1) == -EINVAL, "post_recv on a QP with an SRQ");
	ib_destroy_qp(qp);
	ib_destroy_srq(srq);
	OK("kernel SRQ: posts until full, QPs on it have no receive queue");
	return 0;
}

static noinline int check_drain(struct env *e)
{
	struct ib_cq *cq = ib_alloc_cq(e->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	struct ib_qp *qp;

	CHECK(!IS_ERR(cq), "ib_alloc_cq: %ld", PTR_ERR(cq));
	qp = make_qp(e, cq, IB_QPT_RC, NULL);
	CHECK(!IS_ERR(qp) && to_init(qp) == 0, "QP for ib_drain_qp");
	ib_drain_qp(qp);
	OK("ib_drain_qp returns: its drain work requests are flushed");
	ib_destroy_qp(qp);
	ib_free_cq(cq);
	return 0;
}

/*
 * The checks below (kernel::rdma's promises to kernel callers) clean up
 * after a failure too: a QP left behind would make ib_dealloc_pd WARN.
 */
#define EXPECT(cond, fmt, ...)                                               \
	do {                                                                 \
		if (!(cond)) {                                               \
			pr_err("ferroce_kverbs_test: FAIL: " fmt "\n",       \
			       ##__VA_ARGS__);                               \
			ret = -EIO;                                          \
			goto out;                                            \
		}                                                            \
	} while (0)

#define QUERY_ALL                                                            \
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY |        \
	 IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY |   \
	 IB_QP_AV | IB_QP_PATH_MTU | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |       \
	 IB_QP_RNR_RETRY | IB_QP_RQ_PSN | IB_QP_MAX_QP_RD_ATOMIC |           \
	 IB_QP_ALT_PATH | IB_QP_MIN_RNR_TIMER | IB_QP_SQ_PSN |               \
	 IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_PATH_MIG_STATE | IB_QP_CAP |       \
	 IB_QP_DEST_QPN)

/*
 * ib_query_qp into attributes full of garbage (0xa5, as a kmalloc'd buffer
 * may hold): what the driver has nothing for must read as zero.  APM is
 * not supported, so the whole alternate path is zero; a QP in RESET or a
 * UD QP has no primary path either.
 */
static int query_is_zeroed(struct ib_qp *qp, struct ib_qp_attr *a,
			   struct ib_qp_init_attr *init, bool has_path)
{
	memset(a, 0xa5, sizeof(*a));
	memset(init, 0xa5, sizeof(*init));
	CHECK(ib_query_qp(qp, a, QUERY_ALL, init) == 0, "ib_query_qp");
	CHECK(!memchr_inv(&a->alt_ah_attr, 0, sizeof(a->alt_ah_attr)),
	      "ib_query_qp left garbage in alt_ah_attr (first bytes %*ph)",
	      16, &a->alt_ah_attr);
	CHECK(!a->alt_pkey_index && !a->alt_port_num && !a->alt_timeout &&
		      !a->sq_draining && a->path_mig_state == IB_MIG_MIGRATED &&
		      !a->rate_limit && !a->xmit_slave,
	      "ib_query_qp left garbage: alt_pkey_index %#x alt_port_num %#x alt_timeout %#x sq_draining %#x path_mig_state %#x rate_limit %#x xmit_slave %p",
	      a->alt_pkey_index, a->alt_port_num, a->alt_timeout,
	      a->sq_draining, a->path_mig_state, a->rate_limit, a->xmit_slave);
	CHECK(has_path || !memchr_inv(&a->ah_attr, 0, sizeof(a->ah_attr)),
	      "ib_query_qp left garbage in ah_attr of a QP without a path (first bytes %*ph)",
	      16, &a->ah_attr);
	/* Creation attributes: what this QP does not have reads as none. */
	CHECK(!init->create_flags && !init->source_qpn && !init->xrcd &&
		      !init->rwq_ind_tbl,
	      "ib_query_qp left garbage in the init attributes: create_flags %#x source_qpn %#x xrcd %p rwq_ind_tbl %p",
	      init->create_flags, init->source_qpn, init->xrcd,
	      init->rwq_ind_tbl);
	CHECK((!init->send_cq || init->send_cq == qp->send_cq) &&
		      (!init->recv_cq || init->recv_cq == qp->recv_cq) &&
		      (!init->srq || init->srq == qp->srq) &&
		      (!init->qp_context || init->qp_context == qp->qp_context),
	      "ib_query_qp left garbage in the init attributes: send_cq %p recv_cq %p srq %p qp_context %p",
	      init->send_cq, init->recv_cq, init->srq, init->qp_context);
	return 0;
}

/*
 * Moves a new QP RESET -> INIT -> RTR -> RTS as a kernel caller that reuses
 * one struct ib_qp_attr does: every step starts from garbage (0xff) and
 * sets only the attributes its mask names.  Then the QP must hold exactly
 * those values, and the defaults where nothing was set.  Queries in RESET
 * and RTS also check that ib_query_qp zeroes what the driver has nothing
 * for; that result goes to *zeroed, so that each promise is reported on
 * its own.
 */
static noinline int check_modify_masked_one(struct env *e, enum ib_qp_type type,
					    int *zeroed)
{
	struct ib_qp_attr *a = kmalloc(sizeof(*a), GFP_KERNEL);
	struct ib_qp_init_attr *init = kmalloc(sizeof(*init), GFP_KERNEL);
	bool rc = type == IB_QPT_RC;
	const char *name = rc ? "RC" : "UD";
	struct ib_qp *qp = NULL;
	union ib_gid gid;
	int mask, ret = 0;

	EXPECT(a && init, "out of memory");
	EXPECT(rdma_query_gid(e->ibdev, 1, 1, &gid) == 0, "GID index 1");
	qp = make_qp(e, e->cq, type, NULL);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		qp = NULL;
		EXPECT(0, "create %s QP: %d", name, ret);
	}
	if (query_is_zeroed(qp, a, init, false)) {
		pr_err("ferroce_kverbs_test: FAIL: the query of a %s QP in RESET\n", name);
		*zeroed = -EIO;
	}

	memset(a, 0xff, sizeof(*a));
	a->qp_state = IB_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = 1;
	mask = IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT;
	if (rc) {
		a->qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ;
		mask |= IB_QP_ACCESS_FLAGS;
	} else {
		a->qkey = 0x12345;
		mask |= IB_QP_QKEY;
	}
	ret = ib_modify_qp(qp, a, mask);
	EXPECT(ret == 0, "%s QP to INIT from a garbage-filled attr: %d", name, ret);

	memset(a, 0xff, sizeof(*a));
	a->qp_state = IB_QPS_RTR;
	mask = IB_QP_STATE;
	if (rc) {
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&a->ah_attr, 1);
		rdma_ah_set_grh(&a->ah_attr, &gid, 0, 1, 64, 0);
		a->ah_attr.roce.dmac[0] = 0x02;
		a->ah_attr.roce.dmac[5] = 0x01;
		a->path_mtu = IB_MTU_1024;
		a->dest_qp_num = qp->qp_num;
		a->rq_psn = 0x123;
		a->max_dest_rd_atomic = 1;
		a->min_rnr_timer = 12;
		mask |= IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			IB_QP_MIN_RNR_TIMER;
	}
	ret = ib_modify_qp(qp, a, mask);
	EXPECT(ret == 0, "%s QP to RTR from a garbage-filled attr: %d", name, ret);

	memset(a, 0xff, sizeof(*a));
	a->qp_state = IB_QPS_RTS;
	a->sq_psn = 0x456;
	mask = IB_QP_STATE | IB_QP_SQ_PSN;
	if (rc) {
		a->timeout = 14;
		a->retry_cnt = 7;
		a->rnr_retry = 6;
		a->max_rd_atomic = 1;
		mask |= IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			IB_QP_MAX_QP_RD_ATOMIC;
	}
	ret = ib_modify_qp(qp, a, mask);
	EXPECT(ret == 0, "%s QP to RTS from a garbage-filled attr: %d", name, ret);

	if (query_is_zeroed(qp, a, init, rc)) {
		pr_err("ferroce_kverbs_test: FAIL: the query of a %s QP in RTS\n", name);
		*zeroed = -EIO;
	}
	EXPECT(a->qp_state == IB_QPS_RTS && a->port_num == 1 &&
		       a->pkey_index == 0 && a->sq_psn == 0x456 &&
		       !a->en_sqd_async_notify,
	       "%s QP after the walk: state %d port %u pkey_index %u sq_psn %#x en_sqd_async_notify %u",
	       name, a->qp_state, a->port_num, a->pkey_index, a->sq_psn,
	       a->en_sqd_async_notify);
	if (rc) {
		EXPECT(a->path_mtu == IB_MTU_1024 && a->dest_qp_num == qp->qp_num &&
			       a->rq_psn == 0x123 && a->max_dest_rd_atomic == 1 &&
			       a->min_rnr_timer == 12 && a->timeout == 14 &&
			       a->retry_cnt == 7 && a->rnr_retry == 6 &&
			       a->max_rd_atomic == 1 &&
			       a->qp_access_flags == (IB_ACCESS_REMOTE_WRITE |
						      IB_ACCESS_REMOTE_READ) &&
			       a->qkey == 0,
		       "RC QP after the walk: mtu %d dest_qpn %#x rq_psn %#x max_dest_rd_atomic %u min_rnr_timer %u timeout %u retry %u rnr_retry %u max_rd_atomic %u access %#x qkey %#x",
		       a->path_mtu, a->dest_qp_num, a->rq_psn,
		       a->max_dest_rd_atomic, a->min_rnr_timer, a->timeout,
		       a->retry_cnt, a->rnr_retry, a->max_rd_atomic,
		       a->qp_access_flags, a->qkey);
		EXPECT((rdma_ah_get_ah_flags(&a->ah_attr) & IB_AH_GRH) &&
			       rdma_ah_get_port_num(&a->ah_attr) == 1 &&
			       a->ah_attr.grh.sgid_index == 1 &&
			       a->ah_attr.grh.hop_limit == 64 &&
			       !memcmp(&a->ah_attr.grh.dgid, &gid, sizeof(gid)),
		       "RC QP after the walk: the path is not the one set (port %u sgid_index %u hop_limit %u)",
		       rdma_ah_get_port_num(&a->ah_attr),
		       a->ah_attr.grh.sgid_index, a->ah_attr.grh.hop_limit);
	} else {
		EXPECT(a->qkey == 0x12345 && a->dest_qp_num == 0 &&
			       a->rq_psn == 0 && a->qp_access_flags == 0 &&
			       a->timeout == 0 && a->retry_cnt == 0 &&
			       a->rnr_retry == 0 && a->min_rnr_timer == 0 &&
			       a->max_rd_atomic == 0 && a->max_dest_rd_atomic == 0,
		       "UD QP after the walk: qkey %#x dest_qpn %#x rq_psn %#x access %#x timeout %u retry %u rnr_retry %u min_rnr_timer %u rd_atomic %u/%u",
		       a->qkey, a->dest_qp_num, a->rq_psn, a->qp_access_flags,
		       a->timeout, a->retry_cnt, a->rnr_retry,
		       a->min_rnr_timer, a->max_rd_atomic,
		       a->max_dest_rd_atomic);
	}
	OK("%s QP: RESET -> RTS from garbage-filled attrs, only the masked fields taken",
	   name);
out:
	if (qp)
		ib_destroy_qp(qp);
	kfree(a);
	kfree(init);
	return ret;
}

/* ib_modify_qp reads only what the mask names; ib_query_qp zeroes the rest. */
static noinline int check_modify_masked(struct env *e)
{
	int zeroed = 0, ret;

	ret = check_modify_masked_one(e, IB_QPT_RC, &zeroed) ?:
	      check_modify_masked_one(e, IB_QPT_UD, &zeroed);
	if (!zeroed)
		OK("ib_query_qp into garbage: zeros where the driver has nothing (alternate path, sq_draining, no path in RESET or UD)");
	return ret ?: zeroed;
}

/*
 * ib_core lets kernel users create QPs without a send or a receive CQ (it
 * checks neither); a driver that completes work needs both, so they are
 * refused (EINVAL, as rxe does).
 */
static noinline int check_null_cq(struct env *e)
{
	static const struct { bool send, recv; } cases[] = {
		{ false, true }, { true, false }, { false, false },
	};
	struct ib_qp *qp = NULL;
	int i, ret = 0;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ib_qp_init_attr init = {
			.send_cq = cases[i].send ? e->cq : NULL,
			.recv_cq = cases[i].recv ? e->cq : NULL,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.sq_sig_type = IB_SIGNAL_REQ_WR,
			.qp_type = IB_QPT_RC,
		};

		qp = ib_create_qp(e->pd, &init);
		if (!IS_ERR(qp))
			EXPECT(0, "ib_create_qp with send_cq %p recv_cq %p succeeded",
			       init.send_cq, init.recv_cq);
		EXPECT(PTR_ERR(qp) == -EINVAL,
		       "ib_create_qp with send_cq %p recv_cq %p: %ld, expected -EINVAL",
		       init.send_cq, init.recv_cq, PTR_ERR(qp));
		qp = NULL;
	}
	OK("QPs without a send or receive CQ refused with -EINVAL");
out:
	if (!IS_ERR_OR_NULL(qp))
		ib_destroy_qp(qp);
	return ret;
}

/*
 * Kernel users' data path: two connected RC QPs of this device (one
 * through its GID, so the transfer takes the device's own path), their
 * memory named by the DMA MR (lkeys and, with IB_PD_UNSAFE_GLOBAL_RKEY, an
 * rkey for all of kernel memory) and by a fast-registration MR.
 */
struct pair {
	struct ib_pd *pd;
	struct ib_cq *cq[2];
	struct ib_qp *qp[2];
	u8 *buf;		/* e->buf: 8 pages */
};

static int pair_connect(struct ib_qp *qp, u32 dest)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC,
	};
	union ib_gid gid;
	int ret;

	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	ret = rdma_query_gid(qp->device, 1, 1, &gid);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &gid, 0, 1, 64, 0);
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
				    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				    IB_QP_MAX_QP_RD_ATOMIC);
}

/* One completion on side i: wr_id, status and opcode as expected. */
static int pair_wc(struct pair *p, int i, u64 wr_id, enum ib_wc_status status,
		   enum ib_wc_opcode opcode, struct ib_wc *wc)
{
	CHECK(wait_wc(p->cq[i], wc) == 1, "no completion on QP %d for wr_id %llu",
	      i, wr_id);
	CHECK(wc->wr_id == wr_id && wc->status == status && wc->qp == p->qp[i] &&
		      (status != IB_WC_SUCCESS || wc->opcode == opcode),
	      "QP %d: completion wr_id %llu status %d opcode %d; expected wr_id %llu status %d opcode %d",
	      i, wc->wr_id, wc->status, wc->opcode, wr_id, status, opcode);
	return 0;
}

static int pair_recv(struct pair *p, int i, u64 wr_id, void *at, u32 len)
{
	struct ib_sge sge = { (uintptr_t)at, len, p->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(p->qp[i], &wr, NULL);
}

static int pair_rdma(struct pair *p, u64 wr_id, enum ib_wr_opcode op,
		     void *local, u32 len, u64 remote, u32 rkey)
{
	struct ib_sge sge = { (uintptr_t)local, len, p->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
			.opcode = op, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = remote,
		.rkey = rkey,
	};

	return ib_post_send(p->qp[0], &wr.wr, NULL);
}

static int pair_reg(struct pair *p, int i, u64 wr_id, struct ib_mr *mr, u32 key)
{
	struct ib_reg_wr reg = {
		.wr = { .wr_id = wr_id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr,
		.key = key,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC,
	};

	ib_update_fast_reg_key(mr, key & 0xff);
	return ib_post_send(p->qp[i], &reg.wr, NULL);
}

static int pair_fill(u8 *at, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		at[i] = (u8)(seed + i * 7);
	return 0;
}

static noinline int pair_transfers(struct env *e, struct pair *p)
{
	u8 *src = p->buf, *dst = p->buf + 2 * PAGE_SIZE;
	struct ib_sge sge = { (uintptr_t)src, 3000, p->pd->local_dma_lkey };
	struct ib_send_wr send = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IB_WR_SEND_WITH_IMM,
				   .send_flags = IB_SEND_SIGNALED,
				   .ex.imm_data = cpu_to_be32(0xabcd) };
	unsigned long flags;
	struct ib_wc wc;
	int ret;

	/* SEND with immediate, 3000 bytes (3 packets of 1024). */
	pair_fill(src, 3000, 1);
	memset(dst, 0, 3000);
	CHECK(pair_recv(p, 1, 101, dst, 4096) == 0, "post_recv");
	CHECK(ib_post_send(p->qp[0], &send, NULL) == 0, "post SEND");
	if (pair_wc(p, 0, 1, IB_WC_SUCCESS, IB_WC_SEND, &wc) ||
	    pair_wc(p, 1, 101, IB_WC_SUCCESS, IB_WC_RECV, &wc))
		return -EIO;
	CHECK(wc.byte_len == 3000 && (wc.wc_flags & IB_WC_WITH_IMM) &&
		      wc.ex.imm_data == cpu_to_be32(0xabcd),
	      "received %u bytes, flags %#x, imm %#x", wc.byte_len,
	      wc.wc_flags, be32_to_cpu(wc.ex.imm_data));
	CHECK(!memcmp(src, dst, 3000), "SEND: the data differs");
	OK("kernel RC SEND_WITH_IMM through the DMA MR: 3000 bytes, immediate, data verified");

	/* RDMA WRITE and READ through the PD's global rkey (kernel addresses). */
	pair_fill(src, 5000, 2);
	memset(dst, 0, 5000);
	CHECK(pair_rdma(p, 2, IB_WR_RDMA_WRITE, src, 5000, (uintptr_t)dst,
			p->pd->unsafe_global_rkey) == 0, "post WRITE");
	if (pair_wc(p, 0, 2, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, &wc))
		return -EIO;
	CHECK(!memcmp(src, dst, 5000), "WRITE: the data differs");
	pair_fill(dst, 5000, 3);
	memset(src, 0, 5000);
	CHECK(pair_rdma(p, 3, IB_WR_RDMA_READ, src, 5000, (uintptr_t)dst,
			p->pd->unsafe_global_rkey) == 0, "post READ");
	if (pair_wc(p, 0, 3, IB_WC_SUCCESS, IB_WC_RDMA_READ, &wc))
		return -EIO;
	CHECK(wc.byte_len == 5000 && !memcmp(src, dst, 5000),
	      "READ: %u bytes, data %s", wc.byte_len,
	      memcmp(src, dst, 5000) ? "differs" : "same");
	OK("kernel RC RDMA WRITE and READ of 5000 bytes across pages, global rkey: data verified");

	/*
	 * Posted with interrupts off (as ib_mad posts): nothing may be sent
	 * there, so the QP's work item executes it.
	 */
	pair_fill(src, 100, 4);
	memset(dst, 0, 100);
	send.wr_id = 7;
	send.opcode = IB_WR_SEND;
	sge.length = 100;
	local_irq_save(flags);
	ret = pair_recv(p, 1, 107, dst, 4096) ?: ib_post_send(p->qp[0], &send, NULL);
	local_irq_restore(flags);
	CHECK(ret == 0, "post with interrupts off: %d", ret);
	if (pair_wc(p, 0, 7, IB_WC_SUCCESS, IB_WC_SEND, &wc) ||
	    pair_wc(p, 1, 107, IB_WC_SUCCESS, IB_WC_RECV, &wc))
		return -EIO;
	CHECK(wc.byte_len == 100 && !memcmp(src, dst, 100), "SEND posted with interrupts off: data");
	OK("a SEND posted with interrupts off completes (deferred to the QP's work item)");
	return 0;
}

static noinline int pair_fast_reg(struct env *e, struct pair *p)
{
	u8 *src = p->buf, *region = p->buf + 4 * PAGE_SIZE;
	struct scatterlist sg[2];
	struct ib_sge sge = { (uintptr_t)src, 16, p->pd->local_dma_lkey };
	struct ib_send_wr inv = { .wr_id = 14, .opcode = IB_WR_LOCAL_INV,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_send_wr sinv = { .wr_id = 16, .sg_list = &sge, .num_sge = 1,
				   .opcode = IB_WR_SEND_WITH_INV,
				   .send_flags = IB_SEND_SIGNALED };
	/* An aligned word of the region, 4 bytes into the MR (iova = region + 100). */
	u64 *word = (u64 *)(region + 104);
	struct ib_atomic_wr atomic = {
		.wr = { .wr_id = 18, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = (uintptr_t)region + 104,
		.compare_add = 5,
	};
	struct ib_mr *mr;
	struct ib_wc wc;
	u32 key;
	int n, ret = 0;

	mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, 2);
	CHECK(!IS_ERR(mr), "ib_alloc_mr: %ld", PTR_ERR(mr));
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], region + 100, PAGE_SIZE - 100);
	sg_set_buf(&sg[1], region + PAGE_SIZE, PAGE_SIZE);
	EXPECT(ib_dma_map_sg(p->qp[0]->device, sg, 2, DMA_BIDIRECTIONAL) == 2, "map sg");
	n = ib_map_mr_sg(mr, sg, 2, NULL, PAGE_SIZE);
	EXPECT(n == 2 && mr->iova == (uintptr_t)region + 100, "ib_map_mr_sg: %d", n);

	key = mr->rkey;
	EXPECT(pair_reg(p, 1, 11, mr, ib_inc_rkey(key)) == 0, "post REG_MR");
	EXPECT(pair_wc(p, 1, 11, IB_WC_SUCCESS, IB_WC_REG_MR, &wc) == 0, "REG_MR");
	key = mr->rkey;
	pair_fill(src, 6000, 5);
	memset(region, 0, 2 * PAGE_SIZE);
	/* 6000 bytes from iova + 10: across the two pages of the list. */
	EXPECT(pair_rdma(p, 12, IB_WR_RDMA_WRITE, src, 6000, mr->iova + 10, key) == 0,
	       "post WRITE to the fast-reg MR");
	EXPECT(pair_wc(p, 0, 12, IB_WC_SUCCESS, IB_WC_RDMA_WRITE, &wc) == 0, "WRITE");
	EXPECT(!memcmp(src, region + 110, 6000) && region[109] == 0 &&
		       region[110 + 6000] == 0,
	       "WRITE through the fast-reg MR: data misplaced");
	EXPECT(pair_rdma(p, 13, IB_WR_RDMA_READ, src + 6000, 100, mr->iova + 5990, key) == 0,
	       "post READ from the fast-reg MR");
	EXPECT(pair_wc(p, 0, 13, IB_WC_SUCCESS, IB_WC_RDMA_READ, &wc) == 0, "READ");
	EXPECT(!memcmp(src + 6000, region + 6090, 100), "READ through the fast-reg MR: data");
	OK("IB_WR_REG_MR, then RDMA WRITE and READ through its rkey at an offset, across its pages");

	/*
	 * Atomics on an aligned word of the region (the global rkey of
	 * ib_alloc_pd allows no atomics, as in C).
	 */
	*word = 40;
	sge.length = 8;
	atomic.rkey = key;
	EXPECT(ib_post_send(p->qp[0], &atomic.wr, NULL) == 0, "post FETCH_ADD");
	EXPECT(pair_wc(p, 0, 18, IB_WC_SUCCESS, IB_WC_FETCH_ADD, &wc) == 0, "FETCH_ADD");
	EXPECT(*word == 45 && *(u64 *)src == 40, "FETCH_ADD: word %llu, fetched %llu",
	       *word, *(u64 *)src);
	atomic.wr.wr_id = 19;
	atomic.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
	atomic.compare_add = 45;
	atomic.swap = 1000;
	EXPECT(ib_post_send(p->qp[0], &atomic.wr, NULL) == 0, "post CMP_AND_SWP");
	EXPECT(pair_wc(p, 0, 19, IB_WC_SUCCESS, IB_WC_COMP_SWAP, &wc) == 0, "CMP_AND_SWP");
	EXPECT(*word == 1000 && *(u64 *)src == 45, "CMP_AND_SWP: word %llu, fetched %llu",
	       *word, *(u64 *)src);
	OK("kernel RC FETCH_ADD and CMP_AND_SWP through the fast-reg MR");

	/* LOCAL_INV frees it: registering it again works (a valid MR cannot be). */
	inv.ex.invalidate_rkey = key;
	EXPECT(ib_post_send(p->qp[1], &inv, NULL) == 0, "post LOCAL_INV");
	EXPECT(pair_wc(p, 1, 14, IB_WC_SUCCESS, IB_WC_LOCAL_INV, &wc) == 0, "LOCAL_INV");
	EXPECT(pair_reg(p, 1, 15, mr, ib_inc_rkey(key)) == 0, "post REG_MR again");
	EXPECT(pair_wc(p, 1, 15, IB_WC_SUCCESS, IB_WC_REG_MR, &wc) == 0, "REG_MR again");
	key = mr->rkey;
	OK("IB_WR_LOCAL_INV; the MR registers again with a new key");

	/* SEND_WITH_INV invalidates it at the receiver. */
	EXPECT(pair_recv(p, 1, 116, region + 3 * PAGE_SIZE, 64) == 0, "post_recv");
	sinv.ex.invalidate_rkey = key;
	EXPECT(ib_post_send(p->qp[0], &sinv, NULL) == 0, "post SEND_WITH_INV");
	EXPECT(pair_wc(p, 0, 16, IB_WC_SUCCESS, IB_WC_SEND, &wc) == 0, "SEND_WITH_INV");
	EXPECT(pair_wc(p, 1, 116, IB_WC_SUCCESS, IB_WC_RECV, &wc) == 0, "its receive");
	EXPECT((wc.wc_flags & IB_WC_WITH_INVALIDATE) && wc.ex.invalidate_rkey == key,
	       "receive flags %#x, invalidated rkey %#x (expected %#x)", wc.wc_flags,
	       wc.ex.invalidate_rkey, key);
	OK("IB_WR_SEND_WITH_INV: the receiver's completion names the rkey it invalidated");

	/* Invalidated: a WRITE through the old rkey fails and changes nothing. */
	memset(region, 0, PAGE_SIZE);
	EXPECT(pair_rdma(p, 17, IB_WR_RDMA_WRITE, src, 64, mr->iova, key) == 0,
	       "post WRITE to the invalidated MR");
	EXPECT(pair_wc(p, 0, 17, IB_WC_REM_ACCESS_ERR, IB_WC_RDMA_WRITE, &wc) == 0,
	       "WRITE to an invalidated MR");
	EXPECT(!memchr_inv(region, 0, PAGE_SIZE), "the invalidated MR was written");
	OK("a WRITE through the invalidated rkey fails (REM_ACCESS_ERR), memory untouched");
out:
	ib_dma_unmap_sg(p->qp[0]->device, sg, 2, DMA_BIDIRECTIONAL);
	ib_dereg_mr(mr);
	return ret;
}

static noinline int check_rc_data(struct env *e)
{
	struct pair p = { .buf = e->buf };
	int i, ret = 0;

	p.pd = ib_alloc_pd(e->ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	CHECK(!IS_ERR(p.pd), "ib_alloc_pd(UNSAFE_GLOBAL_RKEY): %ld", PTR_ERR(p.pd));
	for (i = 0; i < 2; i++) {
		struct ib_cq_init_attr ca = { .cqe = 16 };
		struct ib_qp_init_attr init = {
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 2, .max_recv_sge = 2 },
			.sq_sig_type = IB_SIGNAL_REQ_WR,
			.qp_type = IB_QPT_RC,
		};

		p.cq[i] = ib_create_cq(e->ibdev, NULL, NULL, NULL, &ca);
		EXPECT(!IS_ERR(p.cq[i]), "create CQ: %ld", PTR_ERR(p.cq[i]));
		init.send_cq = init.recv_cq = p.cq[i];
		p.qp[i] = ib_create_qp(p.pd, &init);
		EXPECT(!IS_ERR(p.qp[i]), "create QP: %ld", PTR_ERR(p.qp[i]));
	}
	for (i = 0; i < 2; i++) {
		ret = pair_connect(p.qp[i], p.qp[1 - i]->qp_num);
		EXPECT(ret == 0, "connect QP %d: %d", i, ret);
	}
	ret = pair_transfers(e, &p) ?: pair_fast_reg(e, &p);
out:
	for (i = 0; i < 2; i++) {
		if (!IS_ERR_OR_NULL(p.qp[i]))
			ib_destroy_qp(p.qp[i]);
		if (!IS_ERR_OR_NULL(p.cq[i]))
			ib_destroy_cq(p.cq[i]);
	}
	ib_dealloc_pd(p.pd);
	return ret;
}

static int run(struct env *e)
{
	struct ib_cq_init_attr ca = { .cqe = 32 };
	int ret, r;

	e->pd = ib_alloc_pd(e->ibdev, 0);
	CHECK(!IS_ERR(e->pd), "ib_alloc_pd: %ld", PTR_ERR(e->pd));
	e->cq = ib_create_cq(e->ibdev, comp_handler, cq_event, e, &ca);
	CHECK(!IS_ERR(e->cq), "ib_create_cq: %ld", PTR_ERR(e->cq));
	CHECK(e->cq->cqe >= 32, "CQ of %d entries", e->cq->cqe);

	ret = check_pd(e) ?: check_rc_flush(e) ?: check_fast_reg(e) ?:
	      check_ud(e) ?: check_overrun(e) ?: check_srq(e) ?:
	      check_drain(e);
	/* Each of these says what it found whatever the others did. */
	r = check_modify_masked(e);
	ret = ret ?: r;
	r = check_null_cq(e);
	ret = ret ?: r;
	r = check_rc_data(e);
	ret = ret ?: r;

	ib_destroy_cq(e->cq);
	ib_dealloc_pd(e->pd);
	return ret;
}

static int __init kverbs_test_init(void)
{
	struct env e = {};
	int ret;

	e.ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!e.ibdev) {
		pr_err("ferroce_kverbs_test: FAIL: no device %s\n", dev);
		return -ENODEV;
	}
	e.buf = kzalloc(8 * PAGE_SIZE, GFP_KERNEL);
	ret = e.buf ? run(&e) : -ENOMEM;
	kfree(e.buf);
	ib_device_put(e.ibdev);
	if (!ret)
		pr_info("ferroce_kverbs_test: all checks passed on %s\n", dev);
	return ret;
}

static void __exit kverbs_test_exit(void)
{
}

module_init(kverbs_test_init);
module_exit(kverbs_test_exit);
MODULE_DESCRIPTION("Kernel verbs checks for an RDMA device");
MODULE_LICENSE("GPL");
