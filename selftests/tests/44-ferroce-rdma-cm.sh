#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400 (TCG; rxe is slow)
# QP1 on the wire: ib_core's connection manager (ib_cm, rdma_cm) talks to
# its peer with MADs that the GSI QP (QP1) of each device sends and
# receives as RoCEv2 datagrams, posted by the kernel's MAD layer (with
# interrupts off: ferroce's work item sends them).  Stock rdma_cm tools
# connect through it, with rdma_rxe and with another ferroce device:
#
#   init_net: frx0 10.83.0.1 rxe0      <-veth->  fcm:  ftx0 10.83.0.2 ferroce0
#   fca:      fca0 10.84.0.1 ferroce1  <-veth->  fcb:  fcb0 10.84.0.2 ferroce2
#
# rping (RC: SEND, RDMA READ and WRITE, data checked with -V), ucmatose
# (RC connections and messages), udaddy (UD: SIDR over QP1, then
# datagrams), with either end serving; each device's QP1 counted MADs.
. "$(dirname "$0")/../lib.sh"

add_netns fcm
add_veth frx0 - 10.83.0.1 ftx0 fcm 10.83.0.2
rdma_link_add rxe0 rxe frx0
ferroce_add ferroce0 ftx0 fcm
add_netns fca
add_netns fcb
add_veth fca0 fca 10.84.0.1 fcb0 fcb 10.84.0.2
ferroce_add ferroce1 fca0 fca
ferroce_add ferroce2 fcb0 fcb
for d in "rxe0 10.83.0.1" "ferroce0 10.83.0.2" "ferroce1 10.84.0.1" "ferroce2 10.84.0.2"; do
	set -- $d
	roce_gid "$1" "$2" >/dev/null || fail "$1 has no RoCE v2 GID for $2"
done

# cm_pair SRV_NS SRV_IP CLI_NS LABEL SERVER_CMD... -- CLIENT_CMD...: an
# rdma_cm server bound to SRV_IP in SRV_NS ("-": init_net), and its client
# in CLI_NS, given SRV_IP last; both must succeed.  The client's output is
# left in /tmp/client.log.
cm_pair() {
	local out label=$4
	out=$(SERVER_LISTENS=rdma_cm server_client "$1" "$2" "$3" "${@:5}") ||
		{ echo "$out"; fail "$label"; }
	echo "ok $label"
}

pairs=("- 10.83.0.1 fcm rxe0 ferroce0" "fcm 10.83.0.2 - ferroce0 rxe0"
	"fca 10.84.0.1 fcb ferroce1 ferroce2" "fcb 10.84.0.2 fca ferroce2 ferroce1")
for p in "${pairs[@]}"; do
	set -- $p
	sns=$1 sip=$2 cns=$3 sdev=$4 cdev=$5
	cm_pair "$sns" "$sip" "$cns" "rping: $cdev -> $sdev" \
		rping -s -C 10 -S 256 -V -a "$sip" -- rping -c -C 10 -S 256 -V -a
	cm_pair "$sns" "$sip" "$cns" "ucmatose: $cdev -> $sdev" \
		ucmatose -c 2 -C 10 -b "$sip" -- ucmatose -c 2 -C 10 -s
	grep -q 'data transfers complete' /tmp/client.log ||
		{ cat /tmp/client.log; fail "ucmatose: $cdev -> $sdev: not complete"; }
	cm_pair "$sns" "$sip" "$cns" "udaddy: $cdev -> $sdev" \
		udaddy -c 2 -C 10 -b "$sip" -- udaddy -c 2 -C 10 -s
	grep -q 'test complete' /tmp/client.log ||
		{ cat /tmp/client.log; fail "udaddy: $cdev -> $sdev: not complete"; }
done

for d in ferroce0 ferroce1 ferroce2; do
	stats=$(rdma statistic show link $d/1)
	echo "$d: $stats"
	for t in qp cq mr pd; do
		wait_for 10 res_at_baseline $d $t || fail "$d: $t objects left: $(rdma resource show $d)"
	done
done
echo "rdma_cm connects ferroce with rxe and with itself over QP1"
