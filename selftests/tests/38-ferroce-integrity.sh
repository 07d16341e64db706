#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Data integrity on one ferroce device (direct placement between two RC
# QPs): random sizes, offsets and SGE splits with every opcode, both ways,
# every byte checked; then the failures (keys, bounds, PDs, access, short
# receive buffers, RNR) must be refused with IBTA's statuses and change
# nothing.  The port counters count it all; the QPs, CQs and MRs are gone
# afterwards.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
add_dummy fint0 10.78.0.1
ferroce_add ferroce0 fint0
out=$(timeout 300 /tmp/integrity ferroce0 400 2>&1) || { echo "$out"; fail "integrity"; }
echo "$out"
# The port counters saw it: messages and bytes both ways, RNR waits, NAKs
# and drops (the failures provoke each), in `rdma statistic` and sysfs.
stats=$(rdma statistic show link ferroce0/1) || fail "rdma statistic show: $stats"
echo "$stats"
for c in sent_msgs sent_bytes rcvd_msgs rcvd_bytes rnr_waits naks dropped; do
	v=$(awk -v c=$c '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }' <<<"$stats")
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "counter $c is '$v'"
	[ "$(cat /sys/class/infiniband/ferroce0/ports/1/hw_counters/$c)" -ge "$v" ] ||
		fail "sysfs hw_counters/$c below rdma statistic's $v"
done
for t in qp cq mr pd; do
	wait_for 5 res_at_baseline ferroce0 $t || fail "$t objects left: $(rdma resource show ferroce0)"
done
