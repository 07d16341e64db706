// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: sizes round up and are bounded by max_srq_wr and
 * max_srq_sge; the limit arms, fires IBV_EVENT_SRQ_LIMIT_REACHED once when
 * fewer WQEs remain, and disarms; a resize keeps the posted WQEs (and
 * refuses to shrink below them); QPs on an SRQ have no receive queue of
 * their own and report IBV_EVENT_QP_LAST_WQE_REACHED when they fail; an
 * SRQ in use cannot be destroyed.
 *
 *   srq DEVICE
 */
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];

static struct ibv_srq *make_srq(uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr init = {
		.attr = { .max_wr = max_wr, .max_sge = max_sge },
	};

	return ibv_create_srq(pd, &init);
}

static void sizes(const struct ibv_device_attr *dev)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 5, .max_sge = 3 } };
	struct ibv_srq_attr a;
	struct ibv_srq *srq;

	srq = ibv_create_srq(pd, &init);
	CHECK(srq, "create_srq: %s", strerror(errno));
	CHECK(init.attr.max_wr == 8 && init.attr.max_sge >= 3,
	      "5 WRs, 3 SGEs asked: %u, %u given", init.attr.max_wr,
	      init.attr.max_sge);
	CHECK(ibv_query_srq(srq, &a) == 0, "query_srq");
	CHECK(a.max_wr == 8 && a.max_sge == init.attr.max_sge && a.srq_limit == 0,
	      "query_srq: %u %u %u", a.max_wr, a.max_sge, a.srq_limit);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");

	errno = 0;
	CHECK(!make_srq(dev->max_srq_wr + 1, 1) && errno == EINVAL,
	      "max_srq_wr + 1: %s", strerror(errno));
	errno = 0;
	CHECK(!make_srq(4, dev->max_srq_sge + 1) && errno == EINVAL,
	      "max_srq_sge + 1: %s", strerror(errno));
	errno = 0;
	CHECK(!make_srq(0, 1) && errno == EINVAL, "0 WRs: %s", strerror(errno));
	srq = make_srq(dev->max_srq_wr, dev->max_srq_sge);
	CHECK(srq, "an SRQ at max_srq_wr and max_srq_sge: %s", strerror(errno));
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	printf("SRQ sizes round up to a power of two within max_srq_wr/max_srq_sge\n");
}

static void limit_and_resize(void)
{
	struct ibv_async_event ev;
	struct ibv_srq_attr a;
	struct ibv_srq *srq = make_srq(8, 1);
	int ret, i;

	CHECK(srq, "create_srq: %s", strerror(errno));
	for (i = 0; i < 2; i++)
		CHECK(post_srq_recv_id(srq, mr, i) == 0, "post_srq_recv");

	/* 2 WQEs, limit 1: armed, quiet. */
	a = (struct ibv_srq_attr){ .srq_limit = 1 };
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "arm at 1");
	CHECK(next_async_event(ctx, 200, &ev) == -1, "event %d with 2 WQEs above limit 1",
	      ev.event_type);
	CHECK(ibv_query_srq(srq, &a) == 0 && a.srq_limit == 1, "armed limit reads %u",
	      a.srq_limit);

	/* Limit 4 with 2 WQEs: below it already, so it fires now and disarms. */
	a = (struct ibv_srq_attr){ .srq_limit = 4 };
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0, "arm at 4");
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_SRQ_LIMIT_REACHED &&
		      ev.element.srq == srq,
	      "no IBV_EVENT_SRQ_LIMIT_REACHED");
	CHECK(ibv_query_srq(srq, &a) == 0 && a.srq_limit == 0,
	      "the limit did not disarm (%u)", a.srq_limit);
	CHECK(next_async_event(ctx, 200, &ev) == -1, "a second limit event");
	printf("SRQ limit: quiet above it, IBV_EVENT_SRQ_LIMIT_REACHED once below it, then disarmed\n");

	a = (struct ibv_srq_attr){ .srq_limit = 9 };
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT);
	CHECK(ret == EINVAL, "a limit above max_wr: %d", ret);

	/* Grow to 16 with 2 posted: 14 more fit, the 15th does not. */
	for (i = 2; i < 6; i++)
		CHECK(post_srq_recv_id(srq, mr, i) == 0, "post_srq_recv %d", i);
	a = (struct ibv_srq_attr){ .max_wr = 16 };
	CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR) == 0, "resize to 16");
	CHECK(ibv_query_srq(srq, &a) == 0 && a.max_wr == 16, "resized to %u", a.max_wr);
	for (i = 6; i < 16; i++)
		CHECK(post_srq_recv_id(srq, mr, i) == 0, "post_srq_recv %d after resize", i);
	ret = post_srq_recv_id(srq, mr, 16);
	CHECK(ret == ENOMEM, "the 17th WQE in an SRQ of 16: %d", ret);
	a = (struct ibv_srq_attr){ .max_wr = 8 };
	ret = ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR);
	CHECK(ret == EINVAL, "shrinking below 16 posted WQEs: %d", ret);
	CHECK(ibv_query_srq(srq, &a) == 0 && a.max_wr == 16, "a refused resize changed max_wr");
	ret = post_srq_recv_id(srq, mr, 16);
	CHECK(ret == ENOMEM, "after a refused resize the SRQ holds %d", ret);
	printf("SRQ resize keeps the posted WQEs; shrinking below them: EINVAL\n");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
}

static void qp_on_srq(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_srq *srq = make_srq(16, 1);
	struct ibv_async_event ev;
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int ret;

	CHECK(cq && srq, "create_cq/create_srq");
	qp = ibv_create_qp(pd, &init);
	CHECK(qp, "create_qp on an SRQ: %s", strerror(errno));
	CHECK(init.cap.max_recv_wr == 0, "a QP on an SRQ reports %u receive WRs",
	      init.cap.max_recv_wr);
	ret = post_recv_id(qp, mr, 1);
	CHECK(ret == EINVAL, "post_recv to a QP on an SRQ: %d", ret);
	CHECK(post_srq_recv_id(srq, mr, 7) == 0, "post_srq_recv");
	ret = ibv_destroy_srq(srq);
	CHECK(ret == EBUSY, "destroying an SRQ in use: %d", ret);

	to_rts(qp);
	modify_state(qp, IBV_QPS_ERR);
	CHECK(next_async_event(ctx, 5000, &ev) == IBV_EVENT_QP_LAST_WQE_REACHED &&
		      ev.element.qp == qp,
	      "no IBV_EVENT_QP_LAST_WQE_REACHED");
	/* The SRQ's WQEs belong to the SRQ: the QP's flush leaves them. */
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "the SRQ's WQE was flushed with the QP");
	printf("a QP on an SRQ: no own receive queue, LAST_WQE_REACHED on error, the SRQ kept its WQEs\n");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

int main(int argc, char **argv)
{
	struct ibv_device_attr dev;

	CHECK(argc == 2, "usage: srq DEVICE");
	ctx = open_device(argv[1]);
	CHECK(ibv_query_device(ctx, &dev) == 0, "query_device");
	CHECK(dev.max_srq > 0 && dev.max_srq_wr > 0 && dev.max_srq_sge > 0,
	      "SRQs not advertised");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	sizes(&dev);
	limit_and_resize();
	qp_on_srq();
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
