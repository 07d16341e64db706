// SPDX-License-Identifier: GPL-2.0
/*
 * CQ arming through shared memory (ferroce-abi.h): requests are ORed into
 * the CQ's notify word and a full barrier separates arming from the next
 * poll, on both sides.
 *
 *   cq-arm DEVICE next-then-solicited
 *	arm for the next completion, then for the next solicited one: an
 *	unsolicited completion must still signal the completion channel
 *	(NEXT wins; a provider that stores the request instead of ORing it
 *	leaves only SOLICITED armed, and nothing fires).
 *   cq-arm DEVICE solicited-error
 *	armed for solicited completions only, an unsuccessful completion (a
 *	flushed receive) must signal: ibv_req_notify_cq(3) counts those as
 *	solicited.
 *   cq-arm DEVICE race [SECONDS]
 *	one thread makes flush completions (every post to a QP in ERR makes
 *	one at once), the main thread runs the canonical loop: poll until
 *	empty, arm, poll again, wait on the channel.  Every completion must be
 *	seen, and an armed, empty CQ that receives a completion must signal:
 *	completions in the CQ and no event within 8 s is a lost wakeup.  The
 *	window the full barriers close (store notify / load producer against
 *	store producer / load notify) is nanoseconds wide against a system
 *	call per completion, so this covers them only probabilistically; test
 *	24 (the OR) and the provider/ring unit tests cover them
 *	deterministically.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "verbs-util.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[4096];

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static struct ibv_qp *make_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	CHECK(qp, "create_qp: %s", strerror(errno));
	return qp;
}

/* A completion channel, a CQ of `cqe` entries on it and an RC QP on the CQ. */
struct watched {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static struct watched watched_open(int cqe)
{
	struct watched w;

	w.ch = ibv_create_comp_channel(ctx);
	CHECK(w.ch, "create_comp_channel: %s", strerror(errno));
	w.cq = ibv_create_cq(ctx, cqe, NULL, w.ch, 0);
	CHECK(w.cq, "create_cq: %s", strerror(errno));
	w.qp = make_qp(w.cq);
	return w;
}

static void watched_close(struct watched *w)
{
	CHECK(ibv_destroy_qp(w->qp) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(w->cq) == 0, "destroy_cq");
	CHECK(ibv_destroy_comp_channel(w->ch) == 0, "destroy_comp_channel");
}

/* The channel signals cq within 5 s (else fails with `why`); the event is taken and acked. */
static void expect_event(struct ibv_comp_channel *ch, struct ibv_cq *cq, const char *why)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	CHECK(readable(ch->fd, 5000), "%s", why);
	CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq, "get_cq_event");
	ibv_ack_cq_events(cq, 1);
}

/* Polls n successful completions of cq, within 5 s. */
static void poll_successes(struct ibv_cq *cq, int n, const char *what)
{
	double end = now() + 5;
	struct ibv_wc wc;
	int got = 0, r;

	while (got < n && now() < end) {
		r = ibv_poll_cq(cq, 1, &wc);
		CHECK(r >= 0, "poll_cq");
		if (r == 1) {
			CHECK(wc.status == IBV_WC_SUCCESS, "%s: status %d", what, wc.status);
			got++;
		}
	}
	CHECK(got == n, "%s: %d of %d completions", what, got, n);
}

static void next_then_solicited(void)
{
	struct watched w = watched_open(8);
	struct ibv_comp_channel *ch = w.ch;
	struct ibv_cq *cq = w.cq;
	struct ibv_qp *qp = w.qp;

	to_rts(qp);
	CHECK(post_recv_id(qp, mr, 1) == 0, "post_recv");

	CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq(next)");
	CHECK(ibv_req_notify_cq(cq, 1) == 0, "req_notify_cq(solicited)");
	CHECK(!readable(ch->fd, 0), "the channel fired before any completion");
	/*
	 * A SEND to itself without the Solicited Event bit: two successful,
	 * unsolicited completions (an unsuccessful one would count as solicited,
	 * see solicited_error()).
	 */
	CHECK(post_send_id(qp, mr, 2, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0, "post_send");
	expect_event(ch, cq,
		     "armed for the next completion, then for the next solicited one: an unsolicited completion did not signal the channel");
	poll_successes(cq, 2, "the SEND and its receive");
	printf("arm NEXT, then SOLICITED: the next (unsolicited) completion signalled\n");

	/* Disarmed by it: both requests were satisfied at once. */
	CHECK(post_recv_id(qp, mr, 3) == 0, "post_recv");
	CHECK(post_send_id(qp, mr, 4, IBV_WR_SEND, IBV_SEND_SIGNALED) == 0, "post_send");
	poll_successes(cq, 2, "the second SEND and its receive");
	CHECK(!readable(ch->fd, 200), "a disarmed CQ signalled");
	printf("one completion disarmed the CQ\n");
	watched_close(&w);
}

#define RACE_CQE 256
#define RACE_MAX 100000

static struct {
	struct ibv_qp *qp;
	double seconds;
	atomic_ulong posted;	/* completions the kernel has written */
	atomic_ulong seen;	/* completions polled */
	atomic_int done;
} race;

/* Flush completions, as fast as the CQ has room for them. */
static void *producer(void *arg)
{
	double end = now() + race.seconds;
	unsigned long i;

	(void)arg;
	for (i = 0; i < RACE_MAX && now() < end; i++) {
		double stuck = now() + 30;
		int ret;

		while (i - atomic_load(&race.seen) >= RACE_CQE - 16) {
			CHECK(now() < stuck, "the consumer stopped polling at %lu of %lu",
			      atomic_load(&race.seen), i);
			sched_yield();
		}
		/* On a QP in ERR each post is flushed by its doorbell at once. */
		if (i & 1)
			ret = post_send_id(race.qp, mr, i, IBV_WR_SEND, 0);
		else
			ret = post_recv_id(race.qp, mr, i);
		CHECK(ret == 0, "post %lu in ERR: %s", i, strerror(ret));
		atomic_store(&race.posted, i + 1);
	}
	atomic_store(&race.done, 1);
	return NULL;
}

/* Polls until the CQ is empty; returns how many completions it took. */
static unsigned long drain(struct ibv_cq *cq)
{
	unsigned long total = 0;
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++)
			CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR &&
				      wc[i].qp_num == race.qp->qp_num,
			      "completion %lu: status %d qp %u",
			      (unsigned long)wc[i].wr_id, wc[i].status,
			      wc[i].qp_num);
		total += n;
	}
	CHECK(n == 0, "poll_cq failed: %d", n);
	atomic_fetch_add(&race.seen, total);
	return total;
}

static void arm_poll_race(double seconds)
{
	struct watched w = watched_open(RACE_CQE);
	struct ibv_comp_channel *ch = w.ch;
	unsigned long events = 0, arms = 0, waits = 0;
	struct ibv_cq *cq = w.cq, *ev_cq;
	pthread_t thread;
	double deadline;
	void *ev_ctx;

	race.qp = w.qp;
	race.seconds = seconds;
	to_init(race.qp);
	modify_state(race.qp, IBV_QPS_ERR);
	CHECK(pthread_create(&thread, NULL, producer, NULL) == 0, "pthread_create");

	deadline = now() + seconds + 60;
	for (;;) {
		CHECK(now() < deadline, "the race did not end");
		drain(cq);
		if (atomic_load(&race.done) &&
		    atomic_load(&race.seen) == atomic_load(&race.posted))
			break;
		CHECK(ibv_req_notify_cq(cq, 0) == 0, "req_notify_cq");
		arms++;
		/* Completions that came before the arm took effect. */
		if (drain(cq))
			continue;
		if (atomic_load(&race.done) &&
		    atomic_load(&race.seen) == atomic_load(&race.posted))
			break;
		waits++;
		if (!readable(ch->fd, 3000)) {
			unsigned long late = drain(cq);

			CHECK(!atomic_load(&race.done) ||
				      atomic_load(&race.seen) == atomic_load(&race.posted),
			      "completions lost: %lu posted, %lu polled",
			      atomic_load(&race.posted), atomic_load(&race.seen));
			if (!late)
				continue;
			/*
			 * The CQ was armed and empty, and completions came:
			 * the kernel owes the channel an event.  It signals
			 * after dropping its ring lock, so under TCG a
			 * stalled vCPU can hold the event back with the
			 * completions already in the CQ; only an event that
			 * never comes is a lost wakeup.
			 */
			CHECK(readable(ch->fd, 5000),
			      "lost wakeup: %lu completions in an armed CQ and no event in 8 s (seen %lu of %lu)",
			      late, atomic_load(&race.seen) - late,
			      atomic_load(&race.posted));
		}
		CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq,
		      "get_cq_event");
		events++;
	}
	CHECK(pthread_join(thread, NULL) == 0, "pthread_join");
	CHECK(atomic_load(&race.posted) > 0, "no completions made");
	printf("arm/poll race: %lu completions, all polled; %lu arms, %lu waits, %lu events, no lost wakeup\n",
	       atomic_load(&race.seen), arms, waits, events);
	/* An armed CQ may signal once more for the last completions. */
	while (readable(ch->fd, 100) && ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0)
		events++;
	ibv_ack_cq_events(cq, events);
	watched_close(&w);
}

/*
 * Armed for solicited completions only, a CQ signals an unsuccessful one:
 * ibv_req_notify_cq(3) counts every completion whose status is not success
 * as solicited (a flushed receive here), so a consumer that waits for
 * solicited messages learns that its QP failed.
 */
static void solicited_error(void)
{
	struct watched w = watched_open(8);
	struct ibv_wc wc;

	to_init(w.qp);
	CHECK(post_recv_id(w.qp, mr, 3) == 0, "post_recv");
	CHECK(ibv_req_notify_cq(w.cq, 1) == 0, "req_notify_cq(solicited)");
	modify_state(w.qp, IBV_QPS_ERR);
	expect_event(w.ch, w.cq,
		     "armed for solicited completions: a flushed (unsuccessful) completion did not signal the channel");
	CHECK(ibv_poll_cq(w.cq, 1, &wc) == 1 && wc.wr_id == 3 && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "the flush completion");
	printf("arm SOLICITED: an unsuccessful completion signalled\n");
	watched_close(&w);
}

int main(int argc, char **argv)
{
	CHECK(argc >= 3,
	      "usage: cq-arm DEVICE next-then-solicited|solicited-error|race [SECONDS]");
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	if (!strcmp(argv[2], "next-then-solicited"))
		next_then_solicited();
	else if (!strcmp(argv[2], "solicited-error"))
		solicited_error();
	else if (!strcmp(argv[2], "race"))
		arm_poll_race(argc > 3 ? atof(argv[3]) : 3);
	else
		CHECK(0, "unknown check %s", argv[2]);
	CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	return 0;
}
