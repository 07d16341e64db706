#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400 (TCG)
# rsocket (librdmacm's sockets over RDMA, through rdma_cm) on ferroce
# between two namespaces, either end serving:
#
#   fra: fra0 10.85.0.1 ferroce1  <-veth->  frb: frb0 10.85.0.2 ferroce2
#
# rstream and riostream (its RDMA-I/O-mapped variant) move data with their
# own check of every byte (-T v).  The transfers must have gone over
# ferroce: its packets carried the bytes (rcvd_pkts), not the veth's TCP.
# (Unmodified programs under librspreload.so are not here yet: python's
# sockets, made with SOCK_CLOEXEC in their type, are not the plain
# SOCK_STREAM rsocket's preload takes over, so they stay TCP.)
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
	rdma statistic show link "$1/1" | sed -n 's/.* rcvd_pkts \([0-9]*\) .*/\1/p'
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

no_objects_left 10 ferroce1 ferroce2
