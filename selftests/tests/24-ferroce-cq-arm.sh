#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# CQ arming ORs the request into the shared notify word: armed for the next
# completion and then for the next solicited one, a CQ signals its channel
# on the next (unsolicited) completion.  Needs both halves: the provider ORs
# the request in, and the kernel fires on the NEXT bit whatever else is set.
# Armed for solicited completions only, it signals an unsuccessful one
# (ibv_req_notify_cq(3): those count as solicited).
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/cq-arm "$(dirname "$0")/../progs/cq-arm.c" -libverbs -lpthread ||
	fail "cannot build progs/cq-arm.c"
add_dummy fca0 10.75.0.1
ferroce_add ferroce0 fca0
timeout 60 /tmp/cq-arm ferroce0 next-then-solicited || fail "arming NEXT then SOLICITED"
timeout 60 /tmp/cq-arm ferroce0 solicited-error || fail "armed SOLICITED, an error completion"
