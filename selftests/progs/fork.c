// SPDX-License-Identifier: GPL-2.0
/*
 * Queue mappings are not inherited across fork(): a child that touches one
 * of its parent's rings (CQ, SQ, RQ: the uverbs file's mappings in
 * /proc/self/maps) dies of SIGSEGV instead of reading or corrupting them,
 * and the parent's verbs keep working afterwards (post, poll, arm, flush).
 *
 *   fork DEVICE
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "uverbs-raw.h"

static char buf[4096];

int main(int argc, char **argv)
{
	struct ring_map maps[16];
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_wc wc[4];
	void *ev_ctx;
	int i, n, status;

	CHECK(argc == 2, "usage: fork DEVICE");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	ch = ibv_create_comp_channel(ctx);
	CHECK(ch, "create_comp_channel: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	CHECK(cq, "create_cq: %s", strerror(errno));
	struct ibv_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &qi);
	CHECK(qp, "create_qp: %s", strerror(errno));
	to_rts(qp);
	CHECK(post_recv_id(qp, mr, 1) == 0, "post_recv before fork");

	n = uverbs_maps(maps, 16);
	CHECK(n == 3, "%d queue mappings, expected 3 (CQ, SQ, RQ)", n);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			struct rlimit no_core = { 0, 0 };

			setrlimit(RLIMIT_CORE, &no_core);
			/* Survives only if the mapping was inherited. */
			(void)*(volatile uint32_t *)maps[i].lo;
			_exit(0);
		}
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
		CHECK(!WIFEXITED(status),
		      "a forked child read its parent's ring at %#lx (exit %d): the mapping was inherited",
		      maps[i].lo, WEXITSTATUS(status));
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
		      "the child touching ring %#lx ended with status %#x, expected SIGSEGV",
		      maps[i].lo, status);
	}
	printf("children touching the %d rings: SIGSEGV\n", n);

	/*
	 * The parent's queues are intact and still work: a send to itself
	 * lands in the receive posted before the fork, then ERR flushes the
	 * one posted after.
	 */
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq after fork");
	CHECK(post_recv_id(qp, mr, 2) == 0, "post_recv after fork");
	CHECK(post_send_id(qp, mr, 3, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0,
	      "post_send after fork");
	CHECK(readable(ch->fd, 2000), "the armed CQ did not signal its channel");
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq, "get_cq_event");
	ibv_ack_cq_events(cq, 1);
	modify_state(qp, IBV_QPS_ERR);
	n = ibv_poll_cq(cq, 4, wc);
	CHECK(n == 3 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RECV && wc[1].wr_id == 3 &&
		      wc[1].status == IBV_WC_SUCCESS && wc[2].wr_id == 2 &&
		      wc[2].status == IBV_WC_WR_FLUSH_ERR,
	      "after fork: %d completions (first wr_id %llu status %d), expected receive 1 and send 3 done, receive 2 flushed",
	      n, (unsigned long long)wc[0].wr_id, wc[0].status);
	printf("parent after fork: post, arm, send, receive, flush and poll work\n");

	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq), "destroy QP, CQ");
	CHECK(!ibv_destroy_comp_channel(ch) && !ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd),
	      "cleanup");
	ibv_close_device(ctx);
	return 0;
}
