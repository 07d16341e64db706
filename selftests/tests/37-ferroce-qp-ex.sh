#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The extended verbs on the shared rings: ibv_qp_ex batches (wr_start,
# wr_* builders and setters, wr_complete, wr_abort) checked as post_send
# checks work and published only at wr_complete, ibv_cq_ex polling
# (start_poll, next_poll, end_poll) with ibv_poll_cq's overflow rules,
# ibv_create_srq_ex for basic SRQs, and the refusals of what ferroce cannot
# do (send operations, completion fields, SRQ types).
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/qp-ex "$(dirname "$0")/../progs/qp-ex.c" -libverbs ||
	fail "cannot build progs/qp-ex.c"
add_dummy fqx0 10.79.0.1
ferroce_add ferroce0 fqx0
timeout 120 /tmp/qp-ex ferroce0 || fail "extended verbs"
