#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400 (TCG)
# qperf (Debian's qperf) between two namespaces over ferroce, connecting
# through rdma_cm (-cm1), as a user measuring a link would:
#
#   fqa: fqa0 10.86.0.1 ferroce1  <-veth->  fqb: fqb0 10.86.0.2 ferroce2
#
# RC SEND and RDMA WRITE/READ bandwidth, RC latency, both atomics' message
# rates and qperf's own checks of compare-and-swap and fetch-and-add.  Every
# test must report its figure, none an error; nothing is left behind.
. "$(dirname "$0")/../lib.sh"

command -v qperf >/dev/null || fail "no qperf (qemu/setup installs it)"
mark=$(dmesg | wc -l)
ferroce_over_veth fqa 10.86.0.1 ferroce1 fqb 10.86.0.2 ferroce2

timeout 300 ip netns exec fqa qperf >/tmp/qperf-server.log 2>&1 &
server=$!
wait_for 30 listening fqa 19765 || { cat /tmp/qperf-server.log; fail "the qperf server never listened"; }

qperf_run() { # TEST [OPTIONS]: one qperf test from fqb; checks its figure
	local t=$1 out
	shift
	out=$(timeout 120 ip netns exec fqb qperf 10.86.0.1 -t 2 -cm1 "$@" "$t" 2>&1) ||
		{ echo "$out"; cat /tmp/qperf-server.log; fail "qperf $t exited non-zero"; }
	echo "$out"
	case "$t" in
	# (qperf's verifying tests say nothing more when every value was right.)
	ver_*) echo "$out" | grep -Eq '^ *msg_rate *= *[0-9.]+ ' || fail "qperf $t: no message rate" ;;
	*_lat) echo "$out" | grep -Eq '^ *latency *= *[0-9.]+ (ns|us|ms|sec)' ||
		fail "qperf $t: no latency" ;;
	*_mr) echo "$out" | grep -Eq '^ *msg_rate *= *[0-9.]+ ' || fail "qperf $t: no message rate" ;;
	*) echo "$out" | grep -Eq '^ *bw *= *[0-9.]+ [KMG]?B/sec' || fail "qperf $t: no bandwidth" ;;
	esac
	echo "$out" | grep -Eiq 'fail|error' && fail "qperf $t reported an error"
	true
}

# (Not qperf's UD tests: -cm1 does not apply to them, and they address the
# peer by LID with no GRH, which ibv_create_ah refuses on RoCE: "failed to
# create address handle: Invalid argument".)
for t in rc_bw rc_rdma_write_bw rc_rdma_read_bw rc_lat rc_compare_swap_mr rc_fetch_add_mr \
	ver_rc_compare_swap ver_rc_fetch_add; do
	qperf_run "$t"
done
# Bigger messages than one MTU: RC segments them, READ asks in chunks.
qperf_run rc_rdma_read_bw -m 256K
qperf_run rc_bw -m 64K

timeout 30 ip netns exec fqb qperf 10.86.0.1 quit >/dev/null 2>&1
wait $server
# The server's child of each test ends in a segfault (ibv_destroy_qp(NULL)),
# on rxe just as here: Debian's qperf 0.4.11-3 destroys the QP of the
# listening rdma_cm_id, which has none, once the results are in.  A crash
# of the client fails its run above; these are counted, not judged.
echo "qperf server children that crashed at close (qperf's own bug): $(dmesg |
	tail -n +$((mark + 1)) | grep -c 'qperf.*segfault' || true)"
no_objects_left 10 ferroce1 ferroce2
echo "qperf runs over ferroce through rdma_cm"
