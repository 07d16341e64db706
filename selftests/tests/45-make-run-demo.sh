#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# `make run`'s demo (qemu/demo), as a user runs it: ferroce0 shown by the
# stock tools, loopback ib_write_bw and ibv_rc_pingpong on it, then the same
# ib_write_bw on rdma_rxe in the same namespace.  It fails when the demo
# fails or prints no result, so the README's main command cannot break
# unnoticed.  It runs twice: with both drivers unloaded, as on a freshly
# booted machine (the demo loads ferroce, then rdma_rxe), and with rdma_rxe
# loaded before ferroce, the order that left ferroce deaf before the two
# shared the namespace's RoCEv2 port.
. "$(dirname "$0")/../lib.sh"

DEMO=$(cd "$(dirname "$0")/../.." && pwd)/qemu/demo
[ -x "$DEMO" ] || fail "$DEMO missing"


for run in "both unloaded" "rdma_rxe loaded first"; do
	unload_modules rdma_rxe ferroce
	[ "$run" = "both unloaded" ] || modprobe rdma_rxe
	echo "== qemu/demo, $run"
	out=$(timeout 300 "$DEMO" 2>&1) || { echo "$out"; fail "qemu/demo failed ($run)"; }
	# One ib_write_bw result for ferroce0 and one for rxe0, two pingpong lines.
	results=$(awk '/^ *65536 +500 +[0-9.]+/' <<<"$out" | wc -l)
	[ "$results" = 2 ] || { echo "$out"; fail "qemu/demo printed $results ib_write_bw results, not 2 ($run)"; }
	grep -q 'iters in' <<<"$out" || { echo "$out"; fail "no ibv_rc_pingpong result ($run)"; }
	grep -q 'ferroce0' <<<"$(ibv_devices 2>&1)" && fail "the demo left ferroce0 behind"
	awk '/^ *65536 +500 +[0-9.]+/' <<<"$out"
done
echo "make run's demo works, in either driver state"
