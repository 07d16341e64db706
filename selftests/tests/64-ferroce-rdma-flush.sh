#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RDMA FLUSH (IBTA 1.5 A19, ibv_wr_flush) works and refuses what IBTA says:
# progs/rdma-flush.c (RDMA WRITEs then a FLUSH of their range or region,
# the written bytes in place once it completes; the remote access errors and
# the invalid request; what the requester refuses at posting; the device
# flushes for global visibility only, having no persistent memory) runs on
# one ferroce device (direct placement), between two ferroce devices over a
# veth (the wire, both ways).
#
# rdma_rxe has had FLUSH since 6.2, but not with any other device: its opcode table
# gives RC_FLUSH no payload offset (drivers/infiniband/sw/rxe/rxe_opcode.c,
# 6.12), so payload_addr() is the BTH and the ICRC it computes and checks
# covers BTH, FETH and RETH twice.  Every FLUSH rxe sends fails any other
# device's ICRC check, and a standard one fails rxe's (rxe with rxe agree): between rxe and
# ferroce a FLUSH is lost both ways until the requester's retries run out.
# Shown here both ways, by the counters of the side that drops it.
#
# Debian's libibverbs 44 has no
# ibv_wr_flush, and its struct verbs_qp keeps comp_mask where v55's
# ibv_qp_ex has wr_flush: the program is built against rdma-core v55's
# headers and runs with v55's libibverbs and providers (provider/build-
# pyverbs builds them); under Debian's 44 a QP asking for FLUSH must be
# refused with EOPNOTSUPP, not handed a broken wr_flush.
#
#   init_net: flo0 10.83.0.1 ferroce0 (alone)
#   fla: fla0 10.83.1.1 ferroce1  <-veth->  flb: flb0 10.83.1.2 ferroce2
#   init_net: flr0 10.83.2.1 rxe0  <-veth->  flx: flx0 10.83.2.2 ferroce3
. "$(dirname "$0")/../lib.sh"

TOP=$(cd "$(dirname "$0")/../.." && pwd)
V55=$TOP/out/provider/build/include
V55LIB=$TOP/out/pyverbs-v55/build/lib
[ -e "$V55/infiniband/verbs.h" ] || fail "no rdma-core v55 headers in $V55 (make provider)"
[ -e "$V55LIB/libibverbs.so.1" ] || fail "no rdma-core v55 libibverbs in $V55LIB (make test builds it)"
cc -O2 -Wall -I "$V55" -o /tmp/rdma-flush "$(dirname "$0")/../progs/rdma-flush.c" -libverbs ||
	fail "cannot build progs/rdma-flush.c"
flush() { # LABEL ARGS...: the program with v55's libibverbs
	local label=$1 out
	shift
	out=$(LD_LIBRARY_PATH=$V55LIB timeout 200 /tmp/rdma-flush "$@" 2>&1) ||
		{ echo "$out"; fail "rdma-flush $label"; }
	echo "$out" | tail -1
}

add_dummy flo0 10.83.0.1
ferroce_add ferroce0 flo0
g0=$(roce_gid ferroce0 10.83.0.1) || fail "ferroce0 has no RoCE v2 GID"
out=$(timeout 60 /tmp/rdma-flush -o ferroce0 "$g0" 2>&1) || { echo "$out"; fail "under libibverbs 44"; }
echo "$out"
flush "on one device" ferroce0 "$g0"

ferroce_over_veth fla 10.83.1.1 ferroce1 flb 10.83.1.2 ferroce2
g1=$(roce_gid ferroce1 10.83.1.1) || fail "ferroce1 has no RoCE v2 GID"
g2=$(roce_gid ferroce2 10.83.1.2) || fail "ferroce2 has no RoCE v2 GID"
before=$(port_counter ferroce2 rcvd_pkts) || fail "ferroce2 has no rcvd_pkts"
flush "ferroce1 -> ferroce2" ferroce1 "$g1" ferroce2 "$g2"
flush "ferroce2 -> ferroce1" ferroce2 "$g2" ferroce1 "$g1"
after=$(port_counter ferroce2 rcvd_pkts)
[ $((after - before)) -ge 40 ] || fail "ferroce2 received $((after - before)) packets: not over the wire"

add_netns flx
add_veth flr0 - 10.83.2.1 flx0 flx 10.83.2.2
static_neighbours flr0 - 10.83.2.1 flx0 flx 10.83.2.2
rdma_link_add rxe0 rxe flr0
ferroce_add ferroce3 flx0 flx
grxe=$(roce_gid rxe0 10.83.2.1) || fail "rxe0 has no RoCE v2 GID"
g3=$(roce_gid ferroce3 10.83.2.2) || fail "ferroce3 has no RoCE v2 GID"
lost() { # LABEL DROPPER COUNTER MIN ARGS...: rdma-flush fails (its FLUSH never
	# completes) and DROPPER's COUNTER went up by MIN at least
	local label=$1 dev=$2 c=$3 min=$4 before out
	shift 4
	before=$(port_counter "$dev" "$c") || fail "$dev has no $c"
	out=$(LD_LIBRARY_PATH=$V55LIB timeout 30 /tmp/rdma-flush "$@" 2>&1) &&
		{ echo "$out"; fail "$label: rxe's FLUSH crossed the wire (fixed in rxe? see above)"; }
	[ $(($(port_counter "$dev" "$c") - before)) -ge "$min" ] ||
		{ echo "$out"; fail "$label: $dev's $c went up by $(($(port_counter "$dev" "$c") - before))"; }
	echo "$label: the FLUSH was lost, $dev's $c counted it"
}
# ferroce's FLUSH: rxe takes the WRITE before it and counts the FLUSH nowhere
# (rxe counts a packet received once its ICRC checks); ferroce sends it again
# until its retries (7) run out.
before=$(port_counter rxe0 rcvd_pkts)
lost "ferroce3 -> rxe0" ferroce3 retransmits 7 -r ferroce3 "$g3" rxe0 "$grxe"
[ $(($(port_counter rxe0 rcvd_pkts) - before)) -le 2 ] ||
	fail "rxe0 took $(($(port_counter rxe0 rcvd_pkts) - before)) packets: more than the WRITE"
# rxe's FLUSH: ferroce drops it as a packet with a bad ICRC.
lost "rxe0 -> ferroce3" ferroce3 bad_pkts 1 -R rxe0 "$grxe" ferroce3 "$g3"
for d in ferroce0 ferroce1 ferroce2 ferroce3; do
	for t in qp cq mr pd; do
		wait_for 5 res_at_baseline $d $t || fail "$d: $t objects left: $(rdma resource show $d)"
	done
done
