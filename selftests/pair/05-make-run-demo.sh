#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300 (TCG, two guests)
# `make run`'s two-guest part (qemu/demo-pair), as a user runs it: ferroce0
# on each guest's end of the link, ib_write_bw from b into a, the checked
# ibv_rc_pingpong, iperf3 over the same link.  It fails when the demo fails
# or prints no result, so the README's main command cannot break unnoticed
# on its second part either.
. "$(dirname "$0")/../lib.sh"

DEMO=$(cd "$(dirname "$0")/../.." && pwd)/qemu/demo-pair
[ -x "$DEMO" ] || fail "$DEMO missing"
command -v iperf3 >/dev/null || fail "no iperf3 (qemu/setup installs it)"
out=$(timeout 240 "$DEMO" 2>&1) || { echo "$out"; fail "qemu/demo-pair failed"; }
echo "$out"
# perftest prints its result on both sides, the pingpong and iperf3 too.
grep -qE '^ *65536 +500 +[0-9.]+ +[0-9.]+' <<<"$out" || fail "no ib_write_bw result"
grep -q 'iters in' <<<"$out" || fail "no ibv_rc_pingpong result"
grep -qE 'bits/sec.*(sender|receiver)|Bytes/sec.*(sender|receiver)' <<<"$out" || fail "no iperf3 result"
pkts=$(sed -n 's/.*ferroce0 took in \([0-9]*\) RoCEv2 packets.*/\1/p' <<<"$out")
# This guest served (a) or sent (b) 500 x 64 KiB: a takes in the data, b the
# acknowledgements; either way hundreds of packets at least.
[ "${pkts:-0}" -ge 100 ] || fail "ferroce0 took in ${pkts:-no} packets: nothing crossed the link"
[ -e /sys/class/infiniband/ferroce0 ] && fail "the demo left ferroce0 behind"
echo "make run's two-guest demo works"
