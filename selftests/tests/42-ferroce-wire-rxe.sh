#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 450 (TCG; rxe is slow, and netem makes RC send again)
# RoCEv2 on the wire: ferroce interoperates with rdma_rxe over a veth pair,
# and with another ferroce device over another.  rxe0 lives in init_net
# (where unpatched rxe alone listens), ferroce0 in the namespace fwire at
# the pair's other end; ferroce1 and ferroce2 sit in the namespaces fwa and
# fwb at the ends of a second pair:
#
#   init_net: frx0 10.81.0.1 rxe0       <-veth->  fwire: ftx0 10.81.0.2 ferroce0
#   fwa:      fwa0 10.82.0.1 ferroce1   <-veth->  fwb:   fwb0 10.82.0.2 ferroce2
#
# RDMA devices are shared by all namespaces (ib_core's shared mode), so one
# process opens both ends; the TCP side of perftest and of the pingpongs
# runs in each device's namespace and crosses the veth too.  Checked: the
# integrity program in two-device mode (every opcode, 1 B to 1 MiB, SGE
# splits, either side requesting; the failures with each side as the
# requester; UD both ways) between rxe0 and ferroce0 and between ferroce1
# and ferroce2; stock perftest (WRITE, READ, SEND over RC and UD, atomics,
# WRITE latency) and ibv_{rc,ud}_pingpong --chk with either device as the
# server; the packets crossed the veths (rxe's and the veths' counters);
# ferroce's port counters saw them; nothing is left behind.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"
add_netns fwire
add_veth frx0 - 10.81.0.1 ftx0 fwire 10.81.0.2
rdma_link_add rxe0 rxe frx0
ferroce_add ferroce0 ftx0 fwire
rdma link show ferroce0/1 | grep -q 'state ACTIVE' || fail "ferroce0: $(rdma link show ferroce0/1)"
# Each end's RoCE v2 GID of its IPv4 address (index 1 as a rule).
grxe=$(roce_gid rxe0 10.81.0.1) || fail "rxe0 has no RoCE v2 GID for 10.81.0.1"
gfer=$(roce_gid ferroce0 10.81.0.2) || fail "ferroce0 has no RoCE v2 GID for 10.81.0.2"
echo "rxe0 GID $grxe (init_net, frx0) <-> ferroce0 GID $gfer (fwire, ftx0)"
rxe_before=$(rdma statistic show link rxe0/1)

integrity() { # LABEL ARGS...
	local label=$1 out
	shift
	out=$(timeout 200 /tmp/integrity "$@" 2>&1) || { echo "$out"; fail "integrity $label"; }
	echo "$out"
}
# rxe is the reference peer: where it alone is judged (its own local
# errors), the program skips the case and says so.
integrity "rxe0 <-> ferroce0" -r rxe0 -b ferroce0 -x "$grxe" -X "$gfer" rxe0 120

run() { # SERVER CLIENT TOOL ARGS...: perftest with SERVER's device as the server
	local out line
	if [ "$1" = rxe0 ]; then
		out=$(perftest_pair - rxe0 "$grxe" 10.81.0.1 fwire ferroce0 "$gfer" "${@:3}")
	else
		out=$(perftest_pair fwire ferroce0 "$gfer" 10.81.0.2 - rxe0 "$grxe" "${@:3}")
	fi || { echo "$out"; fail "${*:3}, $1 serving $2"; }
	line=$(perftest_result "$out") || { echo "$out"; fail "${*:3}: no result line"; }
	echo "${*:3} ($1 <- $2): $line"
}
for dir in "rxe0 ferroce0" "ferroce0 rxe0"; do
	run $dir ib_write_bw -s 65536 -n 100
	run $dir ib_read_bw -s 65536 -n 60
	run $dir ib_send_bw -s 65536 -n 100
	# UD: one packet per message, within the active MTU (1024 here).
	run $dir ib_send_bw -c UD -s 1024 -n 100
	run $dir ib_atomic_bw -n 100
	run $dir ib_write_lat -s 8 -n 100
done

pingpong() { # SERVER CLIENT TOOL ARGS...: payloads checked (-c)
	local out
	if [ "$1" = rxe0 ]; then
		out=$(server_client - 10.81.0.1 fwire "$3" -d rxe0 -g "$grxe" "${@:4}" -- \
			"$3" -d ferroce0 -g "$gfer" "${@:4}")
	else
		out=$(server_client fwire 10.81.0.2 - "$3" -d ferroce0 -g "$gfer" "${@:4}" -- \
			"$3" -d rxe0 -g "$grxe" "${@:4}")
	fi || { echo "$out"; fail "${*:3}, $1 serving $2"; }
	grep -q 'iters in' <<<"$out" || { echo "$out"; fail "${*:3}: no result"; }
	echo "${*:3} ($1 <- $2): $(grep 'iters in' <<<"$out")"
}
for dir in "rxe0 ferroce0" "ferroce0 rxe0"; do
	pingpong $dir ibv_rc_pingpong -n 50 -s 65536 -c
	pingpong $dir ibv_ud_pingpong -n 50 -s 1024 -c
done

# The packets crossed the veth: rxe received them from frx0.
rxe_after=$(rdma statistic show link rxe0/1)
counter() { # NAME STATISTIC-LINE
	awk -v c="$1" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }' <<<"$2"
}
received=$(($(counter rcvd_pkts "$rxe_after") - $(counter rcvd_pkts "$rxe_before")))
echo "rxe0 received $received packets from ferroce0"
[ "$received" -gt 10000 ] || fail "rxe0 received only $received packets: $rxe_after"
stats=$(rdma statistic show link ferroce0/1) || fail "rdma statistic show: $stats"
echo "$stats"
# sent_trains: trains crossed the veth whole, and the RoCEv2 port cut them
# for rxe0, which takes single packets.
for c in sent_msgs rcvd_msgs sent_trains; do
	v=$(counter $c "$stats")
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "ferroce0's counter $c is '$v'"
done

# Two ferroce devices, each in its own namespace, over the wire.
ferroce_pair fwa 10.82.0.1 fwb 10.82.0.2
g1=$G1 g2=$G2
integrity "ferroce1 <-> ferroce2" -b ferroce2 -x "$g1" -X "$g2" ferroce1 200
# A veth passes trains whole, and ferroce takes them so: the data above
# came in trains too.
for d in ferroce1 ferroce2; do
	v=$(counter rcvd_trains "$(rdma statistic show link $d/1)")
	echo "$d received $v trains whole"
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "$d took no train whole"
done
# What each device sent crossed its veth and came in through the peer's
# RoCEv2 port (a train crosses the veth as one skb, so the veth counts
# fewer packets than were sent).
for end in "fwa fwa0 ferroce1 ferroce2" "fwb fwb0 ferroce2 ferroce1"; do
	set -- $end
	tx=$(ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets")
	sent=$(counter sent_pkts "$(rdma statistic show link "$3/1")")
	got=$(counter rcvd_pkts "$(rdma statistic show link "$4/1")")
	echo "$2 sent $tx skbs; $3 sent $sent packets, $4 received $got"
	[ "$tx" -gt 0 ] && [ "$sent" -gt 100 ] && [ "$got" -ge $((sent * 9 / 10)) ] ||
		fail "$3 sent $sent packets, $4 received $got: ferroce1 <-> ferroce2 did not use the wire"
done

for d in ferroce0 ferroce1 ferroce2; do
	for t in qp cq mr pd; do
		wait_for 5 res_at_baseline $d $t || fail "$d: $t objects left: $(rdma resource show $d)"
	done
done
echo "ferroce interoperates with rxe and with itself over a veth pair"
