#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stock perftest moves data on one ferroce device (loopback, direct
# placement): RDMA WRITE, READ, SEND (RC and UD) and atomics, bandwidth
# and latency, with both post_send flows perftest has (ibv_wr_* and
# ibv_post_send).
. "$(dirname "$0")/../lib.sh"

add_dummy fpt0 10.79.0.1
ferroce_add ferroce0 fpt0
run() { # TOOL ARGS...: the tool must finish and report a positive figure
	local out
	out=$(perftest_loopback ferroce0 10.79.0.1 "$@") || { echo "$out"; fail "$* failed"; }
	local line
	line=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { l = $0 } END { print l }' <<<"$out")
	[ -n "$line" ] || { echo "$out"; fail "$*: no result line"; }
	echo "$*: $line"
}
run ib_write_bw -s 65536 -n 500
run ib_write_bw -s 65536 -n 500 --use_old_post_send
run ib_read_bw -s 65536 -n 200
run ib_send_bw -s 65536 -n 500
run ib_send_bw -c UD -s 1024 -n 500
run ib_send_lat -c UD -s 8 -n 500
run ib_atomic_bw -n 500
run ib_write_lat -s 8 -n 500
run ib_read_lat -s 8 -n 200
run ib_send_lat -s 8 -n 500
run ib_atomic_lat -n 200
run ib_write_bw -a -n 50
