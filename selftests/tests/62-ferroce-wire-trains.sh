#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 500 (TCG; a Python capture beside each stream)
# Trains on the wire (Documentation/wire.rst): ferroce sends the packets of
# a connection that follow each other as one UDP datagram that the IP stack
# cuts into standard RoCEv2 packets.  ferroce1 and ferroce2 in the
# namespaces ftra and ftrb, joined by a veth (MTU 1500):
#
#   ftra: ftra0 10.83.0.1 ferroce1  <-veth->  ftrb: ftrb0 10.83.0.2 ferroce2
#
# 1. Cut before the veth (UDP segmentation off at both ends, so the stack
#    cuts each train before the veth sends it): a capture on ftra0 checks
#    every RoCEv2 packet of WRITE, SEND and READ streams of 64 KiB messages,
#    over IPv4 and IPv6 GIDs, in both directions (READ responses are trains
#    too): lengths, header fields and the ICRC, computed by the capture on
#    its own; none is longer than the MTU; both devices sent trains
#    (sent_trains) and took every packet (no bad_pkts), none of them in a
#    train (rcvd_trains).
# 2. Passed whole (the default: a veth takes UDP GSO datagrams): the capture
#    sees datagrams longer than the MTU, so the stack was crossed once per
#    train, and the receiving device took them whole (rcvd_trains), every
#    packet of them (no bad_pkts), over IPv4 and IPv6.
# 3. The ICRCs of a train's packets (which never crossed a link) are taken
#    on trust, those of single IP packets checked.
# rdma_rxe as the receiver of trains (the RoCEv2 port cuts them for it),
# and the integrity of data that came in whole trains: test 42.
. "$(dirname "$0")/../lib.sh"

command -v ethtool >/dev/null || fail "no ethtool (qemu/setup installs it)"
ferroce_pair ftra 10.83.0.1 ftrb 10.83.0.2
g1=$G1 g2=$G2
# The IPv6 link-local GIDs (index 0) need their addresses out of DAD.
ll_ready() {
	! in_ns "$1" ip -6 addr show dev "$2" scope link | grep -q tentative &&
		in_ns "$1" ip -6 addr show dev "$2" scope link | grep -q inet6
}
wait_for 20 ll_ready ftra ftra0 || fail "ftra0 has no link-local IPv6 address"
wait_for 20 ll_ready ftrb ftrb0 || fail "ftrb0 has no link-local IPv6 address"

counter() { # DEVICE NAME
	rdma statistic show link "$1/1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -1
}

CAPTURE_PID=
capture_start() { # OUT
	in_ns ftra python3 "$(dirname "$0")/../progs/roce-capture.py" ftra0 1500 >"$1" 2>&1 &
	CAPTURE_PID=$!
	wait_for 20 grep -q capturing "$1" || fail "the capture did not start: $(cat "$1")"
}
SUMMARY=
capture_stop() { # OUT: the capture's summary line in SUMMARY
	# (The capture runs under `ip netns exec`, which does not pass signals on.)
	pkill -TERM -f "roce-capture.py ftra0" || fail "the capture is gone: $(cat "$1")"
	wait "$CAPTURE_PID" || fail "the capture failed: $(cat "$1")"
	SUMMARY=$(grep -E '^packets ' "$1") || fail "the capture printed no summary: $(cat "$1")"
}

streams() { # SERVER-GID CLIENT-GID LABEL: WRITE, SEND and READ streams, ferroce1 serving
	local tool out
	for tool in ib_write_bw ib_send_bw ib_read_bw; do
		out=$(perftest_pair ftra ferroce1 "$1" 10.83.0.1 ftrb ferroce2 "$2" $tool \
			-s 65536 -n 40) || { echo "$out"; fail "$tool over $3"; }
		echo "$tool over $3: $(perftest_result "$out")"
	done
}

# 1. Every packet on the veth is a piece: each checked.
for dev in "ftra ftra0" "ftrb ftrb0"; do
	read -r ns n <<<"$dev"
	in_ns "$ns" ethtool -K "$n" tx-udp-segmentation off >/dev/null ||
		fail "$n: cannot turn UDP segmentation off"
done
trains1=$(counter ferroce1 sent_trains)
trains2=$(counter ferroce2 sent_trains)
whole1=$(counter ferroce1 rcvd_trains)
whole2=$(counter ferroce2 rcvd_trains)
capture_start /tmp/capture-cut.txt
streams "$g1" "$g2" IPv4
streams 0 0 IPv6
capture_stop /tmp/capture-cut.txt
summary=$SUMMARY
echo "cut before the veth: $summary"
read -r _ packets _ bad _ datagrams _ longest _ dropped <<<"$summary"
[ "$bad" = 0 ] || { cat /tmp/capture-cut.txt; fail "$bad packets on the wire are not standard RoCEv2"; }
[ "$datagrams" = 0 ] && [ "$longest" -le 1500 ] ||
	fail "packets longer than the MTU on the veth with segmentation off ($summary)"
# 6 streams of 40 messages of 64 packets (1024 B path MTU), plus answers: all
# seen (the capture may miss a few when TCG starves it, never most).
[ "$packets" -ge 15000 ] && [ "$dropped" -le $((packets / 10)) ] ||
	fail "the capture saw too few packets ($summary)"
t1=$(($(counter ferroce1 sent_trains) - trains1))
t2=$(($(counter ferroce2 sent_trains) - trains2))
echo "trains sent: ferroce1 (READ responses) $t1, ferroce2 $t2"
[ "$t1" -gt 0 ] && [ "$t2" -gt 0 ] || fail "a device sent no trains"
[ "$(counter ferroce1 rcvd_trains)" = "$whole1" ] && [ "$(counter ferroce2 rcvd_trains)" = "$whole2" ] ||
	fail "a train arrived whole though the stack cut every one before the veth"

# 2. The default: trains cross the veth whole and the receiver cuts them.
for dev in "ftra ftra0" "ftrb ftrb0"; do
	read -r ns n <<<"$dev"
	in_ns "$ns" ethtool -K "$n" tx-udp-segmentation on >/dev/null
done
rcvd=$(counter ferroce1 rcvd_pkts)
whole1=$(counter ferroce1 rcvd_trains)
whole2=$(counter ferroce2 rcvd_trains)
capture_start /tmp/capture-whole.txt
for gids in "$g1 $g2 IPv4" "0 0 IPv6"; do
	read -r s c label <<<"$gids"
	before=$(counter ferroce1 rcvd_trains)
	out=$(perftest_pair ftra ferroce1 "$s" 10.83.0.1 ftrb ferroce2 "$c" ib_write_bw \
		-s 65536 -n 40) || { echo "$out"; fail "ib_write_bw over $label, trains whole"; }
	echo "ib_write_bw over $label, trains whole: $(perftest_result "$out")"
	[ "$(counter ferroce1 rcvd_trains)" -gt "$before" ] ||
		fail "ferroce1 took no train whole over $label"
done
out=$(perftest_pair ftra ferroce1 "$g1" 10.83.0.1 ftrb ferroce2 "$g2" ib_read_bw \
	-s 65536 -n 40) || { echo "$out"; fail "ib_read_bw, trains whole"; }
echo "ib_read_bw, trains whole: $(perftest_result "$out")"
capture_stop /tmp/capture-whole.txt
summary=$SUMMARY
echo "passed whole: $summary"
read -r _ packets _ bad _ datagrams _ longest _ dropped <<<"$summary"
[ "$datagrams" -gt 0 ] && [ "$longest" -gt 1500 ] ||
	fail "no train crossed the veth whole ($summary)"
[ "$bad" = 0 ] || fail "bad packets ($summary)"
got=$(($(counter ferroce1 rcvd_pkts) - rcvd))
[ "$got" -ge $((80 * 64)) ] || fail "ferroce1 took $got packets of 80 64 KiB WRITEs"
w1=$(($(counter ferroce1 rcvd_trains) - whole1))
w2=$(($(counter ferroce2 rcvd_trains) - whole2))
echo "trains received whole: ferroce1 (WRITEs) $w1, ferroce2 (READ responses) $w2"
[ "$w1" -gt 0 ] && [ "$w2" -gt 0 ] || fail "a device took no train whole"
for d in ferroce1 ferroce2; do
	[ "$(counter $d bad_pkts)" = 0 ] || fail "$d: bad_pkts $(counter $d bad_pkts)"
done

# 3. Where the ICRC is taken on trust (Documentation/wire.rst): the packets
#    of a train from a local UDP socket never crossed a link (its checksums
#    are left to be filled in), so ferroce1 does not compute their ICRCs; a
#    packet that comes as a plain IP packet (a raw socket writes every byte)
#    has its ICRC checked.  Each is a SEND to a QP that does not exist, with
#    a wrong ICRC: checked, it counts in bad_pkts; trusted, it goes on to the
#    QP lookup (no_qp_pkts).
bad=$(counter ferroce1 bad_pkts)
noqp=$(counter ferroce1 no_qp_pkts)
whole=$(counter ferroce1 rcvd_trains)
in_ns ftrb python3 - 10.83.0.2 10.83.0.1 "$(dirname "$0")/../progs" <<'EOF' ||
import sys
sys.path.insert(0, sys.argv[3])
import roce_packet as rp
src, dst = sys.argv[1], sys.argv[2]
transport = rp.bth(rp.SEND_ONLY, 0xFFFFF0, 0) + bytes(256)
single = rp.Sender()
for _ in range(10):
    single.send(rp.ipv4_packet(src, dst, transport, good_icrc=False))
train = rp.TrainSender(src, 0xC0DE)
for _ in range(10):
    pieces = [rp.train_piece(src, dst, 0xC0DE, i, transport, good_icrc=False) for i in range(4)]
    train.send(dst, b"".join(pieces), len(pieces[0]))
EOF
	fail "cannot send the packets with wrong ICRCs"
sleep 1
bad=$(($(counter ferroce1 bad_pkts) - bad))
noqp=$(($(counter ferroce1 no_qp_pkts) - noqp))
whole=$(($(counter ferroce1 rcvd_trains) - whole))
echo "wrong ICRCs: 10 single packets counted bad $bad; 10 trains ($whole taken whole) of 4, to no QP $noqp"
[ "$whole" = 10 ] || fail "ferroce1 took $whole of the 10 trains whole"
[ "$bad" = 10 ] || fail "ferroce1 counted $bad bad packets, not the 10 single ones"
[ "$noqp" = 40 ] || fail "ferroce1 took $noqp of the 40 train packets on trust to the QP lookup"
no_objects_left 5 ferroce1 ferroce2
echo "trains on the wire are standard RoCEv2 packets, cut before the veth or taken whole after it"
