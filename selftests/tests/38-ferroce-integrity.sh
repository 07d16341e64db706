#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Data integrity on one ferroce device (direct placement between two RC
# QPs): random sizes, offsets and SGE splits with every opcode, both ways,
# every byte checked; then the failures (keys, bounds, PDs, access, short
# receive buffers, RNR) must be refused with IBTA's statuses and change
# nothing.  The QPs, CQs and MRs are gone afterwards.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
add_dummy fint0 10.78.0.1
ferroce_add ferroce0 fint0
out=$(timeout 300 /tmp/integrity ferroce0 400 2>&1) || { echo "$out"; fail "integrity"; }
echo "$out"
for t in qp cq mr pd; do
	wait_for 5 res_at_baseline ferroce0 $t || fail "$t objects left: $(rdma resource show ferroce0)"
done
