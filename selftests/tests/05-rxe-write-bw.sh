#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A loopback ib_write_bw completes on rxe and reports a bandwidth.
. "$(dirname "$0")/../lib.sh"

add_dummy rxed1 10.83.0.1
rdma_link_add rxe1 rxe rxed1
out=$(perftest_loopback rxe1 10.83.0.1 ib_write_bw -s 65536 -n 200) ||
	{ echo "$out"; fail "ib_write_bw failed"; }
echo "$out" | tail -4
bw=$(awk '$1 == 65536 && NF >= 5 { print $4 }' <<<"$out" | tail -1)
[ -n "$bw" ] || fail "no result line for 65536 B"
awk -v bw="$bw" 'BEGIN { exit !(bw > 0) }' || fail "bandwidth $bw MB/s"
rdma link delete rxe1
ip link del rxed1
echo "ib_write_bw on rxe1: $bw MB/s"
