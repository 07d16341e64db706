#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A CQ of 4 overflowed by 10 flushes: IBV_EVENT_CQ_ERR, the 4 completions it
# holds, then every poll fails instead of reporting an empty CQ; the same
# after resizing it to 64 (an overrun CQ stays overrun).  An armed CQ stays
# armed across a resize, and a resized CQ can be armed.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/cq-overflow "$(dirname "$0")/../progs/cq-overflow.c" -libverbs ||
	fail "cannot build progs/cq-overflow.c"
add_dummy fco0 10.77.0.1
ferroce_add ferroce0 fco0
timeout 60 /tmp/cq-overflow ferroce0 || fail "CQ overflow"
