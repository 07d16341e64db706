#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600 (TCG; every lost packet is recovered by RC's retransmission)
# No memory for a packet: the skbs ferroce sends are made to fail now and
# then (failslab on skbuff_head_cache alone, 3% of the allocations), while
# the integrity program moves data between ferroce1 and ferroce2 over a veth
# in two namespaces.  A packet that cannot be made is lost, as on the wire,
# and RC recovers it; what it must not do is send on from the same reading
# of the memory, which would put one packet's bytes under the next PSN (a
# retransmission's duplicates hide that from the PSN check: the responder
# takes the first packet past what it has).  Every byte must arrive
# exactly, and tx_lost must show the failures hit ferroce.
. "$(dirname "$0")/../lib.sh"

[ -e /proc/self/fail-nth ] || skip "no CONFIG_FAULT_INJECTION in this kernel"
F=/sys/kernel/debug/failslab
[ -d $F ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
[ -d $F ] || skip "no CONFIG_FAILSLAB with CONFIG_FAULT_INJECTION_DEBUG_FS"
CACHE=/sys/kernel/slab/skbuff_head_cache/failslab
[ -w $CACHE ] || skip "no $CACHE (SLUB's sysfs)"

declare -A old
for k in probability interval times space verbose cache-filter; do
	old[$k]=$(cat $F/$k)
done
restore() {
	echo 0 >$F/probability
	echo 0 >$CACHE
	for k in "${!old[@]}"; do
		echo "${old[$k]}" >$F/$k
	done
}
trap 'rc=$?; set +e; restore; (exit $rc); cleanup' EXIT

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
ferroce_over_veth fna 10.83.0.1 ferroce1 fnb 10.83.0.2 ferroce2
g1=$(roce_gid ferroce1 10.83.0.1)
g2=$(roce_gid ferroce2 10.83.0.2)

lost() { # DEV: its tx_lost counter
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/tx_lost"
}
qps_up() { # both devices hold a QP more than at creation
	[ "$(res_count ferroce1 qp)" -gt "${RES_BASE[ferroce1.qp]}" ] &&
		[ "$(res_count ferroce2 qp)" -gt "${RES_BASE[ferroce2.qp]}" ]
}
before=$(($(lost ferroce1) + $(lost ferroce2)))

# Only skbs fail, and only once the program has its devices open: the
# netlink of `rdma` and of libibverbs' device list makes skbs too.
echo 1 >$CACHE
echo Y >$F/cache-filter
echo 0 >$F/verbose
echo 0 >$F/space
echo 1 >$F/interval
echo -1 >$F/times
/tmp/integrity -l -s 262144 -t 60 -b ferroce2 -x "$g1" -X "$g2" ferroce1 100 >/tmp/tx-nomem.out 2>&1 &
pid=$!
if ! wait_for 60 qps_up; then
	kill $pid 2>/dev/null
	wait $pid || true
	cat /tmp/tx-nomem.out
	fail "the integrity program made no QPs in 60 s"
fi
echo 3 >$F/probability
rc=0
wait $pid || rc=$?
echo 0 >$F/probability
cat /tmp/tx-nomem.out
[ $rc = 0 ] || fail "integrity with skb allocations failing (exit $rc)"

after=$(($(lost ferroce1) + $(lost ferroce2)))
echo "tx_lost: $((after - before)) packets could not be made"
[ "$after" -gt "$before" ] || fail "no skb allocation of ferroce failed: the test tested nothing"
rdma statistic show link ferroce1/1
rdma statistic show link ferroce2/1
no_objects_left 10 ferroce1 ferroce2
echo "packets that could not be made were recovered as lost ones: every byte delivered"
