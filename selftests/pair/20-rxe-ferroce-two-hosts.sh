#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 700 (TCG, two guests on two vCPUs each; rxe is slow)
# ferroce and rdma_rxe between two hosts: guest a (qemu/pair) has rxe0 on
# fab0, the NIC of the link between them, guest b has ferroce0 on its fab0;
# stock tools move data across the link, each guest serving in turn:
#
#   guest a: fab0 10.93.0.1 rxe0  <-link->  guest b: fab0 10.93.0.2 ferroce0
#
# 42-ferroce-wire-rxe.sh has the two meet over a veth in one kernel; here
# each is alone in its kernel and the packets cross a NIC and QEMU's link.
# perftest WRITE, READ, SEND (RC and UD) and atomics, ibv_rc_pingpong and
# ibv_ud_pingpong checking their payload (--chk), rping verifying every
# buffer (-V) through rdma_cm (ib_cm's MADs on each device's QP1); then
# the integrity program with its sides on the two hosts (-H: each guest
# drives its own device; every opcode, 1 B to 1 MiB, either side
# requesting, the failures and UD both ways; rxe is its reference peer, as
# in 42).  Each device's rcvd_pkts shows the packets crossed the link, and
# nothing is left behind on either guest.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
role=$(pair_role)
if [ "$role" = a ]; then
	dev=rxe0
	rdma_link_add rxe0 rxe fab0
	res_baseline rxe0
else
	dev=ferroce0
	ferroce_add ferroce0 fab0
fi
gid=$(roce_gid "$dev" "$FERROCE_PAIR_SELF") || fail "$dev has no RoCE v2 GID"
peer_gid=$(pair_sync gid "$gid")
echo "guest $role: $dev GID $gid; the other guest's device has GID $peer_gid"

pkts() { # DEV: the RoCEv2 packets it took in
	port_counter "$1" rcvd_pkts
}
before=$(pkts "$dev") || fail "$dev has no rcvd_pkts counter: $(rdma statistic show link "$dev/1")"

# (Each guest names its own device and GID: one command line serves both.)
pair_tools "$dev" "$gid"

if [ "$role" = a ]; then
	gid_a=$gid gid_b=$peer_gid
else
	gid_a=$peer_gid gid_b=$gid
fi
pair_integrity "rxe0 (a) <-> ferroce0 (b)" -r rxe0 -b ferroce0 -x "$gid_a" -X "$gid_b" rxe0 120

after=$(pkts "$dev")
# Each guest took in at least the 200 x 64 KiB of its own WRITE server run.
[ $((after - before)) -ge $((200 * 16)) ] ||
	fail "$dev took in $((after - before)) packets: the traffic did not cross the link"
echo "guest $role: $dev took in $((after - before)) packets"
no_objects_left 10 "$dev"
pair_sync finished >/dev/null
