#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 500 (TCG, two guests on two vCPUs each)
# ferroce between two hosts: each guest (qemu/pair) has ferroce0 on fab0,
# the NIC of the link between them; stock tools move data across it, each
# guest serving in turn:
#
#   guest a: fab0 10.93.0.1 ferroce0  <-link->  guest b: fab0 10.93.0.2 ferroce0
#
# perftest WRITE, READ, SEND (RC and UD) and atomics, ibv_rc_pingpong and
# ibv_ud_pingpong checking their payload (--chk), rping verifying every
# buffer (-V) through rdma_cm; the packets crossed the link (ferroce's
# counters); nothing is left behind on either guest.
. "$(dirname "$0")/../lib.sh"

role=$(pair_role)
ferroce_add ferroce0 fab0
gid=$(roce_gid ferroce0 "$FERROCE_PAIR_SELF") || fail "ferroce0 has no RoCE v2 GID"
peer_gid=$(pair_sync gid "$gid")
echo "guest $role: ferroce0 GID $gid; the other guest's is $peer_gid"
before=$(rdma statistic show link ferroce0/1 | grep -o 'rcvd_pkts [0-9]*' | cut -d' ' -f2)

for server in a b; do
	pair_run $server "ib_write_bw, $server serving" tcp ib_write_bw -d ferroce0 -x "$gid" -F -s 65536 -n 200
	pair_run $server "ib_read_bw, $server serving" tcp ib_read_bw -d ferroce0 -x "$gid" -F -s 65536 -n 100
	pair_run $server "ib_send_bw, $server serving" tcp ib_send_bw -d ferroce0 -x "$gid" -F -s 65536 -n 200
	pair_run $server "ib_send_bw UD, $server serving" tcp ib_send_bw -d ferroce0 -x "$gid" -F -c UD -s 1024 -D 5
	pair_run $server "ib_atomic_bw, $server serving" tcp ib_atomic_bw -d ferroce0 -x "$gid" -F -n 500
	pair_run $server "ibv_rc_pingpong --chk, $server serving" tcp ibv_rc_pingpong -d ferroce0 -g "$gid" -n 200 -s 4096 -c
	pair_run $server "ibv_ud_pingpong --chk, $server serving" tcp ibv_ud_pingpong -d ferroce0 -g "$gid" -n 200 -s 1024 -c
done
for server in a b; do
	pair_run $server "rping -V, $server serving" rdma_cm \
		rping -s -V -C 200 -S 4096 -a "$FERROCE_PAIR_SELF" -- rping -c -V -C 200 -S 4096 -a
done

after=$(rdma statistic show link ferroce0/1 | grep -o 'rcvd_pkts [0-9]*' | cut -d' ' -f2)
# Each guest took in at least the 200 x 64 KiB of its own WRITE server run.
[ $((after - before)) -ge $((200 * 16)) ] ||
	fail "ferroce0 took in $((after - before)) packets: the traffic did not cross the link"
echo "guest $role: ferroce0 took in $((after - before)) packets"
for t in qp cq mr pd; do
	wait_for 10 res_at_baseline ferroce0 $t || fail "ferroce0: $t objects left: $(rdma resource show ferroce0)"
done
pair_sync finished >/dev/null
