#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's example programs exchange messages on one ferroce device
# (loopback), validating the payload (--chk): RC, UC, UD, and RC over an
# SRQ.
. "$(dirname "$0")/../lib.sh"

add_dummy fpp0 10.80.0.1
ferroce_add ferroce0 fpp0
pingpong() { # TOOL ARGS...
	local tool=$1 i
	shift
	timeout 60 "$tool" -d ferroce0 -g 1 "$@" >/tmp/pp-server.log 2>&1 &
	local server=$!
	for ((i = 0; i < 50; i++)); do
		sleep 0.2
		if timeout 60 "$tool" -d ferroce0 -g 1 "$@" localhost >/tmp/pp-client.log 2>&1; then
			wait "$server" || { cat /tmp/pp-server.log; fail "$tool server"; }
			grep -q 'iters in' /tmp/pp-client.log || { cat /tmp/pp-client.log; fail "$tool: no result"; }
			echo "$tool $*: $(grep 'iters in' /tmp/pp-client.log)"
			return 0
		fi
		grep -q "Couldn't connect" /tmp/pp-client.log || break
	done
	kill "$server" 2>/dev/null || true
	cat /tmp/pp-server.log /tmp/pp-client.log
	fail "$tool $*"
}
pingpong ibv_rc_pingpong -n 200 -c
pingpong ibv_rc_pingpong -n 50 -s 65536 -c
pingpong ibv_uc_pingpong -n 200 -c
pingpong ibv_srq_pingpong -n 200 -c
# UD: one packet per message, within the active MTU (1024 on this netdev).
pingpong ibv_ud_pingpong -n 200 -s 1024 -c
