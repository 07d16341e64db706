#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 650 (TCG, two guests on two vCPUs each)
# ferroce between two hosts: each guest (qemu/pair) has ferroce0 on fab0,
# the NIC of the link between them; stock tools move data across it, each
# guest serving in turn:
#
#   guest a: fab0 10.93.0.1 ferroce0  <-link->  guest b: fab0 10.93.0.2 ferroce0
#
# perftest WRITE, READ, SEND (RC and UD) and atomics, ibv_rc_pingpong and
# ibv_ud_pingpong checking their payload (--chk), rping verifying every
# buffer (-V) through rdma_cm; the integrity program with its sides on the
# two hosts (-H: each guest drives its own ferroce0; every opcode, 1 B to
# 1 MiB, either side requesting, the failures and UD both ways); the
# packets crossed the link (ferroce's counters); nothing is left behind on
# either guest.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
role=$(pair_role)
ferroce_add ferroce0 fab0
gid=$(roce_gid ferroce0 "$FERROCE_PAIR_SELF") || fail "ferroce0 has no RoCE v2 GID"
peer_gid=$(pair_sync gid "$gid")
echo "guest $role: ferroce0 GID $gid; the other guest's is $peer_gid"
before=$(port_counter ferroce0 rcvd_pkts)

pair_tools ferroce0 "$gid"

if [ "$role" = a ]; then
	gid_a=$gid gid_b=$peer_gid
else
	gid_a=$peer_gid gid_b=$gid
fi
pair_integrity "ferroce0 (a) <-> ferroce0 (b)" -b ferroce0 -x "$gid_a" -X "$gid_b" ferroce0 150

after=$(port_counter ferroce0 rcvd_pkts)
# Each guest took in at least the 200 x 64 KiB of its own WRITE server run.
[ $((after - before)) -ge $((200 * 16)) ] ||
	fail "ferroce0 took in $((after - before)) packets: the traffic did not cross the link"
echo "guest $role: ferroce0 took in $((after - before)) packets"
for t in qp cq mr pd; do
	wait_for 10 res_at_baseline ferroce0 $t || fail "ferroce0: $t objects left: $(rdma resource show ferroce0)"
done
pair_sync finished >/dev/null
