#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 500 (TCG; rxe is slow)
# RoCE over an 802.1Q VLAN.  ib_core gives a device a GID for every address
# of a VLAN device on its netdev (roce_gid_mgmt); packets from such a GID go
# tagged, through that VLAN device, and a datagram that came on a VLAN
# completes with IB_WC_WITH_VLAN and its id, by which ib_cm finds the GID it
# was sent to (ib_init_ah_attr_from_wc): without them rdma_cm cannot connect
# over a VLAN.  The packets' priority is the one the kernel gives IP packets
# of their TOS, which the VLAN device maps to the frame's PCP (as rdma_cm
# computes the service level it reports from a TOS).
#
#   vla: va0 (10.85.0.1), va0.100 10.86.0.1   ferroce1 on va0
#        <-veth->
#   vlb: vb0 (10.85.0.2), vb0.100 10.86.0.2   ferroce2 on vb0.100 itself
#
#   vlc: vc0 (10.87.0.1), vc0.300 10.88.0.1   ferroce3 on vc0
#        <-veth->
#   vld: vd0 (10.87.0.2), vd0.300 10.88.0.2   rxe0 on vd0
#
# rping (rdma_cm over QP1, RC data checked with -V) each way, ucmatose
# with a TOS and perftest (RC with rdma_cm; UD on the VLAN GIDs); the VLAN
# devices count the packets, and a capture on the veth shows them tagged,
# at the PCP of their TOS.
. "$(dirname "$0")/../lib.sh"

command -v tcpdump >/dev/null || fail "no tcpdump (qemu/setup installs it)"

# vlan_pair NS_A NS_B VID NET: a veth NS_A0 - NS_B0 with NET.0.1/.2 on the
# ends and VLAN VID on each (NS_A0.VID, NS_B0.VID with (NET+1).0.1/.2),
# whose priorities 0-7 map to PCP 0-7.
vlan_pair() {
	local a=$1 b=$2 vid=$3 net=$4 n
	local -a map=(egress-qos-map 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7)
	add_netns "$a"
	add_netns "$b"
	add_veth "${a}0" "$a" "10.$net.0.1" "${b}0" "$b" "10.$net.0.2"
	for n in "$a 1" "$b 2"; do
		set -- $n
		in_ns "$1" ip link add link "${1}0" name "${1}0.$vid" type vlan id "$vid" "${map[@]}"
		in_ns "$1" ip addr add "10.$((net + 1)).0.$2/24" dev "${1}0.$vid"
		in_ns "$1" ip link set "${1}0.$vid" up
	done
}

vlan_pair vla vlb 100 85
vlan_pair vlc vld 300 87
ferroce_add ferroce1 vla0 vla
ferroce_add ferroce2 vlb0.100 vlb
ferroce_add ferroce3 vlc0 vlc
rdma_link_add rxe0 rxe vld0 vld

# One device per VLAN family: not on a VLAN whose real device a device
# serves (it has the VLAN's GIDs too), nor on the real device of a VLAN that
# has one (EBUSY from the namespace's RoCEv2 port).
CLEANUP_LINKS+=(ferroce9)
in_ns vla rdma link add ferroce9 type ferroce netdev vla0.100 2>/dev/null &&
	fail "a device on vla0.100, whose real device ferroce1 serves"
in_ns vlb rdma link add ferroce9 type ferroce netdev vlb0 2>/dev/null &&
	fail "a device on vlb0, a VLAN of which ferroce2 serves"
[ ! -e /sys/class/infiniband/ferroce9 ] || fail "ferroce9 exists"
echo "ok one RoCE device per VLAN and its real device"

# Each device's GID of the VLAN address, and the netdev ib_core gave it.
for d in "ferroce1 10.86.0.1 vla0.100" "ferroce2 10.86.0.2 vlb0.100" \
	"ferroce3 10.88.0.1 vlc0.300" "rxe0 10.88.0.2 vld0.300"; do
	set -- $d
	g=$(roce_gid "$1" "$2") || fail "$1 has no RoCE v2 GID for $2"
	nd=$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/$g")
	[ "$nd" = "$3" ] || fail "$1: GID $g ($2) is on $nd, not $3"
	declare "GID_$1=$g"
done
echo "VLAN GIDs: ferroce1 $GID_ferroce1, ferroce2 $GID_ferroce2, ferroce3 $GID_ferroce3, rxe0 $GID_rxe0"

# vlan_packets NS DEV: packets DEV has sent and received.
vlan_packets() {
	local s=/sys/class/net/$2/statistics
	echo $(($(in_ns "$1" cat "$s/tx_packets") + $(in_ns "$1" cat "$s/rx_packets")))
}

# cm_pair SRV_NS SRV_IP CLI_NS LABEL SERVER_CMD... -- CLIENT_CMD...
cm_pair() {
	local out label=$4
	out=$(SERVER_LISTENS=rdma_cm server_client "$1" "$2" "$3" "${@:5}") ||
		{ echo "$out"; fail "$label"; }
	echo "ok $label"
}

before_a=$(vlan_packets vla vla0.100)
before_c=$(vlan_packets vlc vlc0.300)
pairs=("vla 10.86.0.1 vlb ferroce1 ferroce2" "vlb 10.86.0.2 vla ferroce2 ferroce1"
	"vlc 10.88.0.1 vld ferroce3 rxe0" "vld 10.88.0.2 vlc rxe0 ferroce3")
for p in "${pairs[@]}"; do
	set -- $p
	cm_pair "$1" "$2" "$3" "rping over the VLAN: $5 -> $4" \
		rping -s -C 10 -S 256 -V -a "$2" -- rping -c -C 10 -S 256 -V -a
done
after_a=$(vlan_packets vla vla0.100)
after_c=$(vlan_packets vlc vlc0.300)
echo "vla0.100 packets: $before_a -> $after_a; vlc0.300: $before_c -> $after_c"
[ $((after_a - before_a)) -ge 40 ] || fail "ferroce1's rping packets did not cross vla0.100"
[ $((after_c - before_c)) -ge 40 ] || fail "ferroce3's rping packets did not cross vlc0.300"

# A TOS through rdma_cm (ucmatose -t 16, IPTOS_LOWDELAY: priority 6, so
# PCP 6 under the identity map), captured on the veth under the VLAN; then
# perftest's RC over rdma_cm.
capture() { # NS DEV FILE: the first 20 RoCEv2 frames on DEV, tagged or not
	timeout 60 ip netns exec "$1" tcpdump -nn -i "$2" -c 20 -w "$3" \
		'udp port 4791 or (vlan and udp port 4791)' >/dev/null 2>&1 &
	CAPTURE=$!
	sleep 2
}
for p in "vlb 10.86.0.2 vla ferroce2 ferroce1 vla0 100" "vld 10.88.0.2 vlc rxe0 ferroce3 vlc0 300"; do
	set -- $p
	sns=$1 sip=$2 cns=$3 sdev=$4 cdev=$5 wire=$6 vid=$7
	capture "$cns" "$wire" /tmp/vlan.pcap
	cm_pair "$sns" "$sip" "$cns" "ucmatose -t 16 over VLAN $vid: $cdev -> $sdev" \
		ucmatose -c 1 -C 20 -S 1000 -b "$sip" -- ucmatose -c 1 -C 20 -S 1000 -t 16 -s
	wait $CAPTURE || true
	frames=$(tcpdump -nn -e -v -r /tmp/vlan.pcap 2>/dev/null | paste - -)
	# The client's packets: on the wire tagged with the VLAN, TOS 0x10, PCP 6.
	echo "$frames" | grep "vlan $vid, p 6, .*tos 0x10,.* 10\.[0-9]*\.0\.1\.[0-9]* > " | head -1 | grep . ||
		{ echo "$frames" | head -6; fail "$cdev's packets are not tagged VLAN $vid with TOS 0x10 at PCP 6"; }
	! echo "$frames" | grep -v "vlan $vid" | grep -q . ||
		{ echo "$frames" | grep -v "vlan $vid" | head -3; fail "untagged RoCE frames on $wire"; }
	out=$(SERVER_LISTENS=rdma_cm CM_LISTEN_ADDR=0.0.0.0 perftest_calibrated server_client "$sns" "$sip" "$cns" \
		ib_send_bw -d "$sdev" -R -F -s 4096 -n 200 -- \
		ib_send_bw -d "$cdev" -R -F -s 4096 -n 200) ||
		{ echo "$out"; fail "ib_send_bw -R over VLAN $vid: $cdev -> $sdev"; }
	perftest_result "$out" >/dev/null || { echo "$out"; fail "ib_send_bw: $cdev -> $sdev: no result"; }
	echo "ok ib_send_bw -R over VLAN $vid: $cdev -> $sdev ($(perftest_result "$out") MB/s)"
done

# UD on the VLAN GIDs (the AHs name them; perftest meets over TCP).
for p in "vla ferroce1 $GID_ferroce1 10.85.0.1 vlb ferroce2 $GID_ferroce2" \
	"vld rxe0 $GID_rxe0 10.87.0.2 vlc ferroce3 $GID_ferroce3"; do
	set -- $p
	out=$(perftest_pair "$1" "$2" "$3" "$4" "$5" "$6" "$7" ib_send_bw -c UD -s 1024 -n 200) ||
		{ echo "$out"; fail "ib_send_bw -c UD over the VLAN: $6 -> $2"; }
	perftest_result "$out" >/dev/null || { echo "$out"; fail "UD $6 -> $2: no result"; }
	echo "ok ib_send_bw -c UD over the VLAN: $6 -> $2"
done

no_objects_left 10 ferroce1 ferroce2 ferroce3
echo "RoCE over 802.1Q VLANs: rdma_cm, RC and UD, tagged at the TOS's PCP, with ferroce and rxe"
