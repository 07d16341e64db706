#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A loopback ib_send_lat completes on rxe and reports a latency.
. "$(dirname "$0")/../lib.sh"

add_dummy rxed2 10.84.0.1
rdma_link_add rxe2 rxe rxed2
out=$(perftest_loopback rxe2 10.84.0.1 ib_send_lat -s 2 -n 200) ||
	{ echo "$out"; fail "ib_send_lat failed"; }
echo "$out" | tail -4
lat=$(awk '$1 == 2 && NF >= 6 { print $5 }' <<<"$out" | tail -1)
[ -n "$lat" ] || fail "no result line for 2 B"
awk -v l="$lat" 'BEGIN { exit !(l > 0) }' || fail "latency $lat us"
rdma link delete rxe2
ip link del rxed2
echo "ib_send_lat on rxe2: typical $lat us"
