// SPDX-License-Identifier: GPL-2.0
/*
 * Objects are never larger than the limits the device advertises: a CQ of
 * max_cqe entries has max_cqe (not the next power of two), one of
 * max_cqe + 1 is refused (EINVAL), and likewise QP capabilities against
 * max_qp_wr and max_sge and SRQ sizes against max_srq_wr and max_srq_sge.
 *
 *   max-sizes DEVICE
 */
#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;

static struct ibv_qp *qp_with(struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .cap = *cap,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	*cap = init.cap;
	return qp;
}

static void qp_refused(struct ibv_qp_cap cap, const char *what)
{
	struct ibv_qp *qp = qp_with(&cap);

	CHECK(!qp, "a QP with %s was created", what);
	CHECK(errno == EINVAL, "a QP with %s: %s, expected EINVAL", what, strerror(errno));
}

int main(int argc, char **argv)
{
	struct ibv_device_attr d;
	struct ibv_qp_cap cap;
	struct ibv_cq *big;
	struct ibv_qp *qp;
	struct ibv_srq *srq;

	CHECK(argc == 2, "usage: max-sizes DEVICE");
	ctx = open_device(argv[1]);
	CHECK(ibv_query_device(ctx, &d) == 0, "query_device");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));

	big = ibv_create_cq(ctx, d.max_cqe, NULL, NULL, 0);
	CHECK(big, "a CQ of max_cqe (%d) entries: %s", d.max_cqe, strerror(errno));
	CHECK(big->cqe >= d.max_cqe && big->cqe <= d.max_cqe,
	      "a CQ of max_cqe (%d) entries has %d", d.max_cqe, big->cqe);
	CHECK(ibv_destroy_cq(big) == 0, "destroy_cq");
	CHECK(!ibv_create_cq(ctx, d.max_cqe + 1, NULL, NULL, 0) && errno == EINVAL,
	      "a CQ of max_cqe + 1 entries: not refused with EINVAL");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	CHECK(ibv_resize_cq(cq, d.max_cqe) == 0, "resize to max_cqe: %s", strerror(errno));
	CHECK(cq->cqe >= d.max_cqe && cq->cqe <= d.max_cqe,
	      "a CQ resized to max_cqe (%d) entries has %d", d.max_cqe, cq->cqe);
	CHECK(ibv_resize_cq(cq, 16) == 0, "resize back to 16");
	printf("CQ: max_cqe %d gives %d entries, max_cqe + 1 refused\n", d.max_cqe,
	       d.max_cqe);

	cap = (struct ibv_qp_cap){ .max_send_wr = d.max_qp_wr, .max_recv_wr = d.max_qp_wr,
				   .max_send_sge = 1, .max_recv_sge = 1 };
	qp = qp_with(&cap);
	CHECK(qp, "a QP of max_qp_wr (%d) work requests: %s", d.max_qp_wr, strerror(errno));
	CHECK(cap.max_send_wr == (uint32_t)d.max_qp_wr && cap.max_recv_wr == (uint32_t)d.max_qp_wr,
	      "a QP of max_qp_wr (%d) got %u send and %u receive work requests",
	      d.max_qp_wr, cap.max_send_wr, cap.max_recv_wr);
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	cap = (struct ibv_qp_cap){ .max_send_wr = 1, .max_recv_wr = 1,
				   .max_send_sge = d.max_sge, .max_recv_sge = d.max_sge };
	qp = qp_with(&cap);
	CHECK(qp, "a QP of max_sge (%d) SGEs: %s", d.max_sge, strerror(errno));
	CHECK(cap.max_send_sge == (uint32_t)d.max_sge && cap.max_recv_sge == (uint32_t)d.max_sge,
	      "a QP of max_sge (%d) SGEs got %u send and %u receive SGEs", d.max_sge,
	      cap.max_send_sge, cap.max_recv_sge);
	CHECK(cap.max_send_wr <= (uint32_t)d.max_qp_wr && cap.max_recv_wr <= (uint32_t)d.max_qp_wr,
	      "a QP got %u/%u work requests, beyond max_qp_wr %d", cap.max_send_wr,
	      cap.max_recv_wr, d.max_qp_wr);
	CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
	qp_refused((struct ibv_qp_cap){ .max_send_wr = d.max_qp_wr + 1, .max_recv_wr = 1,
					.max_send_sge = 1, .max_recv_sge = 1 },
		   "max_qp_wr + 1 send work requests");
	qp_refused((struct ibv_qp_cap){ .max_send_wr = 1, .max_recv_wr = d.max_qp_wr + 1,
					.max_send_sge = 1, .max_recv_sge = 1 },
		   "max_qp_wr + 1 receive work requests");
	qp_refused((struct ibv_qp_cap){ .max_send_wr = 1, .max_recv_wr = 1,
					.max_send_sge = d.max_sge + 1, .max_recv_sge = 1 },
		   "max_sge + 1 send SGEs");
	qp_refused((struct ibv_qp_cap){ .max_send_wr = 1, .max_recv_wr = 1,
					.max_send_sge = 1, .max_recv_sge = d.max_sge + 1 },
		   "max_sge + 1 receive SGEs");
	printf("QP: max_qp_wr %d and max_sge %d given exactly, one more refused\n",
	       d.max_qp_wr, d.max_sge);

	struct ibv_srq_init_attr si = { .attr = { .max_wr = d.max_srq_wr, .max_sge = 1 } };
	srq = ibv_create_srq(pd, &si);
	CHECK(srq, "an SRQ of max_srq_wr (%d): %s", d.max_srq_wr, strerror(errno));
	CHECK(si.attr.max_wr == (uint32_t)d.max_srq_wr,
	      "an SRQ of max_srq_wr (%d) got %u", d.max_srq_wr, si.attr.max_wr);
	CHECK(ibv_destroy_srq(srq) == 0, "destroy_srq");
	si = (struct ibv_srq_init_attr){ .attr = { .max_wr = d.max_srq_wr + 1, .max_sge = 1 } };
	CHECK(!ibv_create_srq(pd, &si) && errno == EINVAL,
	      "an SRQ of max_srq_wr + 1: not refused with EINVAL");
	si = (struct ibv_srq_init_attr){ .attr = { .max_wr = 4, .max_sge = d.max_srq_sge + 1 } };
	CHECK(!ibv_create_srq(pd, &si) && errno == EINVAL,
	      "an SRQ of max_srq_sge + 1: not refused with EINVAL");
	printf("SRQ: max_srq_wr %d given exactly, one more refused\n", d.max_srq_wr);

	CHECK(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "cleanup");
	ibv_close_device(ctx);
	return 0;
}
