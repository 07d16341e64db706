#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600 (TCG; rxe is slow, and netem makes RC send again)
# RoCEv2 over a bad link: the topology of 42-ferroce-wire-rxe.sh with netem
# on every veth end losing, duplicating, delaying and reordering packets.
# RC must still deliver every message exactly: the integrity program in
# two-device, lossy mode (-l: a NAK lost on the way may turn a failure's
# status into RETRY_EXC_ERR; UD, unreliable by definition, is checked as a
# stream whose arriving datagrams must be intact) between rxe0 and
# ferroce0 and between ferroce1 and ferroce2, and perftest's WRITE and READ
# bandwidth both ways.  The netem statistics must show losses; they and
# ferroce's counters are printed.  Needs CONFIG_NET_SCH_NETEM: skipped
# where the kernel lacks it.
. "$(dirname "$0")/../lib.sh"

NETEM="loss 3% duplicate 1% reorder 10% 50% delay 1ms"

add_netns fwire
add_veth frx0 - 10.81.0.1 ftx0 fwire 10.81.0.2
static_neighbours frx0 - 10.81.0.1 ftx0 fwire 10.81.0.2
if ! out=$(tc qdisc add dev frx0 root netem $NETEM 2>&1); then
	case "$out" in
	*"not supported"* | *"Unknown qdisc"* | *"No such file"*)
		skip "no netem in this kernel (CONFIG_NET_SCHED, CONFIG_NET_SCH_NETEM): $out" ;;
	esac
	fail "tc qdisc add dev frx0 root netem $NETEM: $out"
fi
tc -n fwire qdisc add dev ftx0 root netem $NETEM || fail "netem on ftx0"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
rdma_link_add rxe0 rxe frx0
ferroce_add ferroce0 ftx0 fwire
grxe=$(roce_gid rxe0 10.81.0.1) || fail "rxe0 has no RoCE v2 GID for 10.81.0.1"
gfer=$(roce_gid ferroce0 10.81.0.2) || fail "ferroce0 has no RoCE v2 GID for 10.81.0.2"
echo "netem on frx0 and ftx0: $NETEM"

add_netns fwa
add_netns fwb
add_veth fwa0 fwa 10.82.0.1 fwb0 fwb 10.82.0.2
static_neighbours fwa0 fwa 10.82.0.1 fwb0 fwb 10.82.0.2
tc -n fwa qdisc add dev fwa0 root netem $NETEM || fail "netem on fwa0"
tc -n fwb qdisc add dev fwb0 root netem $NETEM || fail "netem on fwb0"
ferroce_add ferroce1 fwa0 fwa
ferroce_add ferroce2 fwb0 fwb
g1=$(roce_gid ferroce1 10.82.0.1) || fail "ferroce1 has no RoCE v2 GID for 10.82.0.1"
g2=$(roce_gid ferroce2 10.82.0.2) || fail "ferroce2 has no RoCE v2 GID for 10.82.0.2"

integrity() { # LABEL ARGS...: lossy mode, messages up to 256 KiB, 60 s waits
	local label=$1 out
	shift
	out=$(timeout 200 /tmp/integrity -l -s 262144 -t 60 "$@" 2>&1) ||
		{ echo "$out"; fail "integrity $label over a lossy link"; }
	echo "$out"
}
integrity "rxe0 <-> ferroce0" -r rxe0 -b ferroce0 -x "$grxe" -X "$gfer" rxe0 100
integrity "ferroce1 <-> ferroce2" -b ferroce2 -x "$g1" -X "$g2" ferroce1 100

run() { # SERVER CLIENT TOOL ARGS...: perftest with SERVER's device as the server
	local out line
	if [ "$1" = rxe0 ]; then
		out=$(perftest_pair - rxe0 "$grxe" 10.81.0.1 fwire ferroce0 "$gfer" "${@:3}")
	else
		out=$(perftest_pair fwire ferroce0 "$gfer" 10.81.0.2 - rxe0 "$grxe" "${@:3}")
	fi || { echo "$out"; fail "${*:3}, $1 serving $2, over a lossy link"; }
	line=$(perftest_result "$out") || { echo "$out"; fail "${*:3}: no result line"; }
	echo "${*:3} ($1 <- $2): $line"
}
for dir in "rxe0 ferroce0" "ferroce0 rxe0"; do
	run $dir ib_write_bw -s 65536 -n 100
	run $dir ib_read_bw -s 65536 -n 50
done

# netem did its work: every end dropped packets.
for end in "- frx0" "fwire ftx0" "fwa fwa0" "fwb fwb0"; do
	set -- $end
	q=$(in_ns "$1" tc -s qdisc show dev "$2")
	echo "$2: $q"
	dropped=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' <<<"$q" | head -1)
	[ "${dropped:-0}" -gt 0 ] || fail "netem on $2 dropped nothing: the link was not lossy"
done
for d in ferroce0 ferroce1 ferroce2; do
	rdma statistic show link $d/1
done
rdma statistic show link rxe0/1
for d in ferroce0 ferroce1 ferroce2; do
	for t in qp cq mr pd; do
		wait_for 5 res_at_baseline $d $t || fail "$d: $t objects left: $(rdma resource show $d)"
	done
done
echo "RC over a lossy, duplicating, reordering link: every byte delivered"
