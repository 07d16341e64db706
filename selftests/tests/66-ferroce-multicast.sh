#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 500 (TCG; rxe is slow)
# UD multicast.  ibv_attach_mcast puts a UD QP in a group: the device then
# gives it every datagram to the group's IP multicast address (destination
# QP 0xffffff) that reaches the host, its own sender's included, and the
# first QP of a device in a group makes the host a member of the group's
# address on the netdev (IGMP, the group's MAC in the filter), the last one
# to leave ends that.  The limits the device reports hold exactly
# (progs/mcast-attach.c).  mckey (rdmacm-utils: rdma_cm joins, then UD
# datagrams to the group) between namespaces, to two receivers at once (one
# on the sender's own device), and with rxe both ways (rxe sends only some
# of its datagrams: every one it sent must arrive):
#
#   mca: mca0 10.90.0.1 ferroce1  <-veth->  mcb: mcb0 10.90.0.2 ferroce2
#   mcr: mcr0 10.91.0.1 rxe0      <-veth->  mcx: mcx0 10.91.0.2 ferroce3
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/mcast-attach "$(dirname "$0")/../progs/mcast-attach.c" -libverbs ||
	fail "cannot build progs/mcast-attach.c"

add_netns mca
add_netns mcb
add_veth mca0 mca 10.90.0.1 mcb0 mcb 10.90.0.2
ferroce_add ferroce1 mca0 mca
ferroce_add ferroce2 mcb0 mcb
add_netns mcr
add_netns mcx
add_veth mcr0 mcr 10.91.0.1 mcx0 mcx 10.91.0.2
rdma_link_add rxe0 rxe mcr0 mcr
ferroce_add ferroce3 mcx0 mcx
for d in "ferroce1 10.90.0.1" "ferroce2 10.90.0.2" "rxe0 10.91.0.1" "ferroce3 10.91.0.2"; do
	set -- $d
	roce_gid "$1" "$2" >/dev/null || fail "$1 has no RoCE v2 GID for $2"
done

# The limits, exactly.
out=$(timeout 120 /tmp/mcast-attach ferroce1 limits 2>&1) || { echo "$out"; fail "limits"; }
echo "$out"
ibv_devinfo -v -d ferroce1 | grep -E "max_(total_)?mcast" | tr -s '\t ' ' '

# in_group NS DEV ADDR: the host is a member of ADDR on DEV.
in_group() {
	in_ns "$1" ip maddr show dev "$2" | awk '$1 == "inet" { print $2 }' | grep -qxF "$3"
}

not_in_group() { ! in_group "$@"; }

# A QP's attachment makes the host a member of the group; detaching ends it.
in_group mcb mcb0 239.7.7.7 && fail "mcb0 is in 239.7.7.7 before any QP attached"
coproc HOLD { exec timeout 60 /tmp/mcast-attach ferroce2 hold ::ffff:239.7.7.7 2>&1; }
read -r -t 30 line <&"${HOLD[0]}" || true
[ "$line" = attached ] || fail "mcast-attach hold: ${line:-no answer}"
in_group mcb mcb0 239.7.7.7 || { ip -n mcb maddr show dev mcb0; fail "attached, but mcb0 did not join 239.7.7.7"; }
eval "exec ${HOLD[1]}>&-"
wait "$HOLD_PID" || fail "mcast-attach hold failed"
wait_for 10 not_in_group mcb mcb0 239.7.7.7 ||
	fail "detached, but mcb0 is still in 239.7.7.7"
echo "ok attaching joins the IP group on the netdev, detaching leaves it"

# all_complete N: the N receivers' logs say they got every message.
all_complete() {
	local i
	for ((i = 0; i < $1; i++)); do
		grep -q "data transfers complete" "/tmp/mckey-r$i.log" || return 1
	done
}

# mckey_run LABEL GROUP SEND_NS SEND_IP RECV_NS:RECV_IP...: receivers join GROUP
# and wait for 10 messages; once the host of each is in the group, the
# sender joins and sends 10 to it.  Each receiver must get them all.
mckey_run() {
	local label=$1 grp=$2 sns=$3 sip=$4 r pids=() i=0 rc=0
	shift 4
	for r in "$@"; do
		# (Line-buffered: the log tells when it joined.)
		timeout 120 ip netns exec "${r%%:*}" stdbuf -oL mckey -m "$grp" -b "${r#*:}" -C 10 -S 256 \
			>"/tmp/mckey-r$i.log" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	# librdmacm attaches the QP as it takes the join event, before mckey
	# prints the group it joined and starts receiving.
	i=0
	for r in "$@"; do
		wait_for 30 grep -q "receiving data transfers" "/tmp/mckey-r$i.log" ||
			{ cat "/tmp/mckey-r$i.log"; fail "$label: the receiver at ${r#*:} never joined $grp"; }
		in_group "${r%%:*}" "$(ip -n "${r%%:*}" -o addr show to "${r#*:}" | awk '{ print $2 }')" "$grp" ||
			fail "$label: joined, but the host at ${r#*:} is not in $grp"
		i=$((i + 1))
	done
	# The sender joins and sends 10 datagrams (UD: a lost one is not sent
	# again), again while a receiver still waits, three times at most.
	for try in 1 2 3; do
		timeout 120 ip netns exec "$sns" mckey -m "$grp" -b "$sip" -s -C 10 -S 256 >/tmp/mckey-s.log 2>&1 ||
			{ cat /tmp/mckey-s.log; fail "$label: the sender failed"; }
		wait_for 15 all_complete $# && break
		echo "$label: not all received after sending $try time(s)"
	done
	i=0
	for r in "$@"; do
		wait "${pids[$i]}" || rc=$?
		grep -q "data transfers complete" "/tmp/mckey-r$i.log" && [ $rc = 0 ] || {
			cat /tmp/mckey-s.log "/tmp/mckey-r$i.log"
			for d in ferroce1 ferroce2 ferroce3 rxe0; do rdma statistic show link "$d/1"; done
			for n in "mca mca0" "mcb mcb0" "mcr mcr0" "mcx mcx0"; do
				set -- $n
				ip -n "$1" -s link show "$2" | sed -n 3,6p
				ip -n "$1" maddr show dev "$2" | grep inet
			done
			fail "$label: receiver ${r#*:} (exit $rc)"
		}
		i=$((i + 1))
	done
	echo "ok $label"
}

r2=$(port_counter ferroce2 rcvd_pkts)
mckey_run "mckey: ferroce1 -> ferroce2 and ferroce1 itself" 239.1.1.1 mca 10.90.0.1 \
	mcb:10.90.0.2 mca:10.90.0.1
r2b=$(port_counter ferroce2 rcvd_pkts)
[ $((r2b - r2)) -ge 10 ] || fail "ferroce2 counted $((r2b - r2)) packets received"
mckey_run "mckey: ferroce2 -> ferroce1" 239.1.1.2 mcb 10.90.0.2 mca:10.90.0.1
# rxe as the sender: rdma_rxe puts on the wire only some of the datagrams
# mckey posts and sees complete (seen: its sent_pkts grew by 7 for 30), so
# no receiver can count on 10.  Every datagram rxe did send must arrive.
# (The receiver posts receives for all 30, and is stopped once they are sent.)
timeout 120 ip netns exec mcx stdbuf -oL mckey -m 239.1.1.3 -b 10.91.0.2 -C 30 -S 256 \
	>/tmp/mckey-r0.log 2>&1 &
rpid=$!
wait_for 30 grep -q "receiving data transfers" /tmp/mckey-r0.log ||
	{ cat /tmp/mckey-r0.log; fail "mckey: rxe0 -> ferroce3: the receiver never joined"; }
s0=$(port_counter rxe0 sent_pkts)
r0=$(port_counter ferroce3 rcvd_msgs)
for try in 1 2 3; do
	timeout 120 ip netns exec mcr mckey -m 239.1.1.3 -b 10.91.0.1 -s -C 10 -S 256 >/tmp/mckey-s.log 2>&1 ||
		{ cat /tmp/mckey-s.log; fail "mckey: rxe0 -> ferroce3: the sender failed"; }
done
sleep 2
sent=$(($(port_counter rxe0 sent_pkts) - s0))
got=$(($(port_counter ferroce3 rcvd_msgs) - r0))
# (lib.sh's timeout is a shell function: stop mckey itself.)
pkill -x mckey || true
wait "$rpid" 2>/dev/null || true
[ "$sent" -ge 1 ] || fail "mckey: rxe0 -> ferroce3: rxe sent none of 30 datagrams"
[ "$got" = "$sent" ] || fail "mckey: rxe0 -> ferroce3: ferroce3 took $got of the $sent datagrams rxe sent"
echo "ok mckey: rxe0 -> ferroce3: rxe sent $sent of 30 datagrams, ferroce3 took all $got"
mckey_run "mckey: ferroce3 -> rxe0" 239.1.1.4 mcx 10.91.0.2 mcr:10.91.0.1

# Every membership ended with its QPs.
for g in 239.1.1.1 239.1.1.2; do
	for n in "mca mca0" "mcb mcb0"; do
		set -- $n
		wait_for 10 not_in_group "$1" "$2" "$g" ||
			fail "$2 is still in $g after mckey ended"
	done
done
no_objects_left 10 ferroce1 ferroce2 ferroce3
echo "UD multicast: attach limits, IP membership, mckey between namespaces, on the sender's device and with rxe"
