#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Completions the kernel writes itself: a QP in the error state flushes its
# work (posted before or after) as IBV_WC_WR_FLUSH_ERR, in order; RESET
# drops work silently; CQ arming in shared memory signals the completion
# channel once; an overrun CQ keeps its entries and reports IBV_EVENT_CQ_ERR.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/flush "$(dirname "$0")/../progs/flush.c" -libverbs ||
	fail "cannot build progs/flush.c"
add_dummy ffl0 10.73.0.1
ferroce_add ferroce0 ffl0
/tmp/flush ferroce0 || fail "flush checks"
