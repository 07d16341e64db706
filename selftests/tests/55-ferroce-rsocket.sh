#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 500 (TCG)
# rsocket (librdmacm's sockets over RDMA, through rdma_cm) on ferroce
# between two namespaces, either end serving:
#
#   fra: fra0 10.85.0.1 ferroce1  <-veth->  frb: frb0 10.85.0.2 ferroce2
#
# rstream and riostream (its RDMA-I/O-mapped variant) move data with their
# own check of every byte (-T v).  Then an unmodified program, netcat
# (nc.traditional), under librspreload.so, rdma-core's preload that turns
# a program's TCP sockets into rsockets: it carries 8 MiB of random bytes
# each way, whose SHA-256 must arrive unchanged.  The transfers must have
# gone over ferroce: its packets carried the bytes (rcvd_pkts), not the
# veth's TCP (netcat's port never had a TCP socket).
#
# rdma-core 44's preload (Debian 12) maps an accepted rsocket's readiness
# in select() to the wrong descriptor (fixed in rdma-core 63): a listener
# that waits in select() to read never sees its data (iperf3 cannot run
# at all).  netcat copes where the listener is the side that sends, so
# here it is: the connecting side receives.  (python's sockets, made with
# SOCK_CLOEXEC in their type, are not the plain SOCK_STREAM the preload
# takes over: they stay TCP.)
. "$(dirname "$0")/../lib.sh"

ferroce_over_veth fra 10.85.0.1 ferroce1 frb 10.85.0.2 ferroce2

# rsocket servers listen through rdma_cm: the client starts once the
# listening ID is there.
pair() { # LABEL SRV_NS SRV_IP CLI_NS SERVER_CMD... -- CLIENT_CMD...
	local label=$1 out
	shift
	out=$(SERVER_LISTENS=rdma_cm server_client "$@") || { echo "$out"; fail "$label"; }
	echo "$out" | tail -n 3
	echo "ok $label"
}

pkts() { # DEV: RoCEv2 packets it took in
	port_counter "$1" rcvd_pkts
}

before=$(( $(pkts ferroce1) + $(pkts ferroce2) ))
for dir in "fra 10.85.0.1 frb ferroce2->ferroce1" "frb 10.85.0.2 fra ferroce1->ferroce2"; do
	set -- $dir
	sns=$1 sip=$2 cns=$3 what=$4
	pair "rstream $what" "$sns" "$sip" "$cns" \
		rstream -T v -S 65536 -C 200 -b "$sip" -- rstream -T v -S 65536 -C 200 -s
	pair "riostream $what" "$sns" "$sip" "$cns" \
		riostream -T v -S 65536 -C 200 -b "$sip" -- riostream -T v -S 65536 -C 200 -s
done
after=$(( $(pkts ferroce1) + $(pkts ferroce2) ))
# 4 runs of 200 x 64 KiB: at least one packet per 4 KiB (the largest MTU).
[ $((after - before)) -ge $((4 * 200 * 16)) ] ||
	fail "ferroce took in $((after - before)) packets: rsocket did not run over it"
echo "ferroce took in $((after - before)) packets for rstream and riostream"

PRELOAD=$(dpkg -L librdmacm1 2>/dev/null | grep '/librspreload\.so$' | head -n 1) ||
	PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
[ -e "$PRELOAD" ] || fail "no librspreload.so (librdmacm1)"
command -v nc.traditional >/dev/null ||
	fail "no nc.traditional (netcat-traditional; qemu/setup installs it)"
NC_PORT=18600
DATA=/tmp/rsocket-nc.data
head -c $((8 << 20)) /dev/urandom >$DATA
want=$(sha256sum <$DATA | cut -d' ' -f1)

tcp_on_port() { # NS: TCP sockets of NC_PORT in NS, in any state (TIME-WAIT too)
	ip netns exec "$1" ss -Htan "( sport = :$NC_PORT or dport = :$NC_PORT )"
}

# nc_preload SRV_NS SRV_IP CLI_NS RECEIVER: netcat under the preload, its
# listener at SRV_IP in SRV_NS sending DATA, its other end in CLI_NS
# receiving it on the device RECEIVER.
nc_preload() {
	local sns=$1 sip=$2 cns=$3 dev=$4 server rc=0 got n ns before label
	label="nc.traditional under librspreload.so, $sns sending to $cns"
	rm -f /tmp/rsocket-nc.recv
	before=$(pkts "$dev")
	# (-q: after the file, the listener waits 3 s at most for the other
	# end to close; -n: no DNS.  coreutils' timeout itself is the job, so
	# that a kill reaches netcat.)
	command timeout $((120 * SLOWDOWN)) ip netns exec "$sns" env LD_PRELOAD="$PRELOAD" \
		nc.traditional -n -l -s "$sip" -p $NC_PORT -q 3 <$DATA >/tmp/nc-server.log 2>&1 &
	server=$!
	if ! wait_for 60 cm_listening "$sip"; then
		kill $server 2>/dev/null
		wait $server || true
		cat /tmp/nc-server.log
		fail "$label: netcat's listener is no rsocket (no rdma_cm ID listens on $sip)"
	fi
	[ -z "$(tcp_on_port "$sns")" ] || fail "$label: a TCP socket listens: $(tcp_on_port "$sns")"
	timeout 120 ip netns exec "$cns" env LD_PRELOAD="$PRELOAD" \
		nc.traditional -n "$sip" $NC_PORT </dev/null >/tmp/rsocket-nc.recv 2>/tmp/nc-client.log || rc=$?
	if [ $rc != 0 ]; then
		kill $server 2>/dev/null
		wait $server || true
		cat /tmp/nc-server.log /tmp/nc-client.log
		fail "$label: the receiving netcat exited $rc"
	fi
	wait $server || rc=$?
	if [ $rc != 0 ]; then
		cat /tmp/nc-server.log /tmp/nc-client.log
		fail "$label: the listener exited $rc"
	fi
	n=$(stat -c %s /tmp/rsocket-nc.recv)
	got=$(sha256sum </tmp/rsocket-nc.recv | cut -d' ' -f1)
	[ "$got" = "$want" ] || fail "$label: $n of $((8 << 20)) bytes arrived, SHA-256 $got, not $want"
	for ns in "$sns" "$cns"; do
		[ -z "$(tcp_on_port "$ns")" ] || fail "$label: TCP carried it: $(tcp_on_port "$ns")"
	done
	# At least a packet per 4 KiB (the largest MTU) of the file.
	[ $(($(pkts "$dev") - before)) -ge $(((8 << 20) / 4096)) ] ||
		fail "$label: $dev took in $(($(pkts "$dev") - before)) packets: the preload did not use rsocket"
	echo "ok $label: 8 MiB, SHA-256 matches; $dev took in $(($(pkts "$dev") - before)) packets"
}
nc_preload fra 10.85.0.1 frb ferroce2
nc_preload frb 10.85.0.2 fra ferroce1

no_objects_left 10 ferroce1 ferroce2
